"""Wake-ups: LISTEN/NOTIFY on PostgreSQL; on SQLite an in-process hook, plus a cheap watch of
``PRAGMA data_version`` (it changes when another connection, e.g. another process, commits),
so jobs enqueued by a separate API process start within ~50 ms instead of at the next poll.

One mechanism for each thing to wake for, by channel: ready jobs wake workers
(``NOTIFY_CHANNEL``), due webhook deliveries wake dispatchers (``WEBHOOK_CHANNEL``)."""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable
from typing import Any

from seojobs.store.db import NOTIFY_CHANNEL, Database

log = logging.getLogger("seojobs.listener")
SQLITE_WATCH_INTERVAL = 0.05
# On SQLite, what a change must leave for its wake-up to be worth it, per channel: data_version
# also changes with the worker's own commits (every group of results it records), and each
# wake-up is a claim, a write transaction on SQLite's one writer (bench/check.py: about 60
# empty claims during one index check). A claim takes pending jobs only.
SQLITE_READY = {NOTIFY_CHANNEL: "SELECT 1 FROM jobs WHERE state = 'pending' LIMIT 1"}


class Listener:
    def __init__(
        self, db: Database, wake: Callable[[], None], channel: str = NOTIFY_CHANNEL
    ) -> None:
        self.db = db
        self.wake = wake
        self.channel = channel
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        # In-process wake-ups work on both dialects (a job enqueued by this process's API).
        self.db.add_wake_hook(self.wake, self.channel)
        target = self._listen if self.db.dialect == "postgresql" else self._watch_sqlite
        self._thread = threading.Thread(target=target, name="seojobs-listen", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self.db.remove_wake_hook(self.wake, self.channel)
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _listen(self) -> None:
        import psycopg  # server extra; only needed here

        while not self._stop.is_set():
            try:
                with psycopg.connect(self.db.psycopg_conninfo(), autocommit=True) as conn:
                    conn.execute(f"LISTEN {self.channel}")
                    # Work may have arrived while we were not listening.
                    self.wake()
                    while not self._stop.is_set():
                        for _note in conn.notifies(timeout=0.5, stop_after=1):
                            self.wake()
            except Exception:
                log.warning("LISTEN connection lost; polling until it is back", exc_info=True)
                self._stop.wait(1.0)

    def _watch_sqlite(self) -> None:
        import sqlite3

        path = self.db.url.database
        if not path or path == ":memory:":
            return  # one process by definition: the in-process hook is enough
        while not self._stop.is_set():
            try:
                with contextlib.closing(sqlite3.connect(path, timeout=5)) as conn:
                    last = conn.execute("PRAGMA data_version").fetchone()[0]
                    # Commits before that first read were not seen as changes: claim once.
                    self.wake()
                    ready = SQLITE_READY.get(self.channel)
                    while not self._stop.wait(SQLITE_WATCH_INTERVAL):
                        version = conn.execute("PRAGMA data_version").fetchone()[0]
                        if version != last and _worth_waking(conn, ready):
                            self.wake()
                        last = version
            except sqlite3.Error:
                log.warning("watching the SQLite file failed; polling only", exc_info=True)
                self._stop.wait(1.0)


def _worth_waking(conn: Any, ready: str | None) -> bool:
    """Whether ``ready`` (a query of SQLITE_READY) finds something; True when unsure."""
    if ready is None:
        return True
    try:
        return conn.execute(ready).fetchone() is not None
    except Exception:  # e.g. no jobs table yet: wake, as without the look
        return True
