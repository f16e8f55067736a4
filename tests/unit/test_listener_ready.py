"""The SQLite watch wakes workers for a change only when a pending job is left for a claim to
take: the worker's own commits (its results) change ``PRAGMA data_version`` too, and each
wake-up is a claim, a write transaction on SQLite's one writer."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from seojobs.store.db import NOTIFY_CHANNEL, WEBHOOK_CHANNEL
from seojobs.store.listener import SQLITE_READY, _worth_waking


def test_jobs_wake_only_for_a_pending_job_other_channels_for_any_change(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "store.db")
    ready = SQLITE_READY[NOTIFY_CHANNEL]
    assert _worth_waking(conn, ready)  # no jobs table (not migrated): wake, as before
    conn.execute("CREATE TABLE jobs (id INTEGER PRIMARY KEY, state TEXT)")
    conn.execute("INSERT INTO jobs (state) VALUES ('processing'), ('completed')")
    assert not _worth_waking(conn, ready)
    conn.execute("INSERT INTO jobs (state) VALUES ('pending')")
    assert _worth_waking(conn, ready)
    assert _worth_waking(conn, SQLITE_READY.get(WEBHOOK_CHANNEL))
