"""Wake-ups: LISTEN/NOTIFY on PostgreSQL, on the event loop that started the listener (an
async psycopg connection: a notification wakes the loop itself, with no thread to hand it
over; bench/queue.py's wake-up); on SQLite an in-process hook, plus a cheap watch of
``PRAGMA data_version`` (it changes when another connection, e.g. another process, commits),
so jobs enqueued by a separate API process start within ~50 ms instead of at the next poll.

One mechanism for each thing to wake for, by channel: ready jobs wake workers
(``NOTIFY_CHANNEL``), due webhook deliveries wake dispatchers (``WEBHOOK_CHANNEL``), a changed
schedule or a resigned leader wakes the maintenance loops (``MAINTENANCE_CHANNEL``). One
listener may serve several channels on its one connection (a worker's: its claims and its
maintenance)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

from seojobs.store.db import CONNECT_TIMEOUT, MAINTENANCE_CHANNEL, NOTIFY_CHANNEL, Database

log = logging.getLogger("seojobs.listener")
SQLITE_WATCH_INTERVAL = 0.05
# On SQLite, what a change must leave for its wake-up to be worth it, per channel: data_version
# also changes with the worker's own commits (every group of results it records), and each
# wake-up is a claim, a write transaction on SQLite's one writer (bench/check.py: about 60
# empty claims during one index check). A claim takes pending jobs only.
SQLITE_READY = {NOTIFY_CHANNEL: "SELECT 1 FROM jobs WHERE state = 'pending' LIMIT 1"}
# Or a query whose answer changes when the channel's waiters have something new: maintenance
# wakes for a schedule's sooner tick (one made, enabled, moved) or a leader gone (resigned),
# not for each commit (the leader's renewals among them).
SQLITE_CHANGED = {
    MAINTENANCE_CHANNEL: "SELECT (SELECT min(next_tick_at) FROM schedules WHERE enabled), "
    "(SELECT count(*) FROM leaders)"
}


class Listener:
    def __init__(
        self,
        db: Database,
        wake: Callable[[], None],
        channel: str = NOTIFY_CHANNEL,
        *,
        others: Mapping[str, Callable[[], None]] | None = None,
    ) -> None:
        self.db = db
        self.wake = wake
        self.channel = channel
        # Every channel listened to, and what its wake-up calls (``others``: besides ``channel``).
        self.wakes: dict[str, Callable[[], None]] = {channel: wake, **(others or {})}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """On PostgreSQL, call it on the event loop that is to listen (``wake`` is then called
        on that loop's thread); the SQLite watch is a thread of its own."""
        # In-process wake-ups work on both dialects (a job enqueued by this process's API).
        for channel, wake in self.wakes.items():
            self.db.add_wake_hook(wake, channel)
        if self.db.dialect == "postgresql":
            self._task = asyncio.get_running_loop().create_task(
                self._listen(), name="seojobs-listen"
            )
            return
        self._thread = threading.Thread(
            target=self._watch_sqlite, name="seojobs-listen", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        """Stop listening (from the loop on PostgreSQL; :meth:`aclose` also waits until the
        LISTEN connection is closed)."""
        for channel, wake in self.wakes.items():
            self.db.remove_wake_hook(wake, channel)
        self._stop.set()
        if self._task is not None:
            self._task.cancel()
        if self._thread is not None:
            self._thread.join(timeout=5)

    async def aclose(self) -> None:
        self.stop()
        if self._task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _listen(self) -> None:
        import psycopg  # server extra; only needed here

        while not self._stop.is_set():
            try:
                conn = await psycopg.AsyncConnection.connect(
                    self.db.psycopg_conninfo(),
                    autocommit=True,
                    connect_timeout=CONNECT_TIMEOUT,
                    application_name="seojobs-listen",  # visible in pg_stat_activity
                )
                async with conn:
                    for channel in self.wakes:
                        await conn.execute(f"LISTEN {channel}")
                    # Work may have arrived while we were not listening.
                    self._wake_all()
                    # A server gone (restart, failover, a terminated backend) ends this with
                    # an error: the connection's socket turns readable and reads its end.
                    async for note in conn.notifies():
                        self.wakes.get(note.channel, self.wake)()
            except Exception:
                log.warning("LISTEN connection lost; polling until it is back", exc_info=True)
                await asyncio.sleep(1.0)

    def _watch_sqlite(self) -> None:
        import sqlite3

        path = self.db.url.database
        if not path or path == ":memory:":
            return  # one process by definition: the in-process hook is enough
        while not self._stop.is_set():
            try:
                with contextlib.closing(sqlite3.connect(path, timeout=5)) as conn:
                    last = conn.execute("PRAGMA data_version").fetchone()[0]
                    seen = {
                        c: _answer(conn, SQLITE_CHANGED[c])
                        for c in self.wakes
                        if c in SQLITE_CHANGED
                    }
                    # Commits before that first read were not seen as changes: claim once.
                    self._wake_all()
                    while not self._stop.wait(SQLITE_WATCH_INTERVAL):
                        version = conn.execute("PRAGMA data_version").fetchone()[0]
                        if version != last:
                            self._changed(conn, seen)
                        last = version
            except sqlite3.Error:
                log.warning("watching the SQLite file failed; polling only", exc_info=True)
                self._stop.wait(1.0)

    def _wake_all(self) -> None:
        for wake in self.wakes.values():
            wake()

    def _changed(self, conn: Any, seen: dict[str, Any]) -> None:
        """The file changed: wake each channel whose waiters may have something new."""
        for channel, wake in self.wakes.items():
            changed = SQLITE_CHANGED.get(channel)
            if changed is None:
                if _worth_waking(conn, SQLITE_READY.get(channel)):
                    wake()
                continue
            answer = _answer(conn, changed)
            if answer != seen.get(channel) or answer is None:
                wake()
            seen[channel] = answer


def _answer(conn: Any, query: str) -> Any:
    """``query``'s first row; None when it fails (e.g. no such table yet: then wake)."""
    try:
        return conn.execute(query).fetchone()
    except Exception:
        return None


def _worth_waking(conn: Any, ready: str | None) -> bool:
    """Whether ``ready`` (a query of SQLITE_READY) finds something; True when unsure."""
    if ready is None:
        return True
    try:
        return conn.execute(ready).fetchone() is not None
    except Exception:  # e.g. no jobs table yet: wake, as without the look
        return True
