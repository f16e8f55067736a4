"""A PostgreSQL worker's claims on its event loop: one psycopg ``AsyncConnection`` of its own.

A woken idle worker used to claim through the thread pool: the LISTEN thread handed the
wake-up to the event loop, which handed the claim to a database thread, which handed the jobs
back, each hand-off a thread to wake on a busy machine (bench/queue.py's wake-up, against
Procrastinate, whose LISTEN and fetch both run on its loop). Here the claim runs on the loop
itself, in autocommit (one statement: no BEGIN and COMMIT round trips), without server-side
prepared statements (as ``Database``, so PgBouncer in transaction mode keeps working). Claims
that carry completions stay in a write transaction in a thread (``Worker._claim``).

A dead connection (server restart, failover, ``pg_terminate_backend``) is replaced before
use when it shows it (its socket has something unasked to read: the backend's FATAL error),
and a claim that fails on a reused connection is tried once more on a new one.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from seojobs.store.db import CONNECT_TIMEOUT, Database, _has_input
from seojobs.store.errors import Unavailable

# psycopg is imported where it is used: a SQLite worker imports this module too, and never
# loads the driver (tests/e2e/test_startup_imports.py).
if TYPE_CHECKING:
    import psycopg

T = TypeVar("T")


class LoopClaims:
    """The claim connection of one worker; opened lazily on the running loop."""

    def __init__(self, db: Database) -> None:
        if db.dialect != "postgresql":
            raise ValueError("claims on the event loop are PostgreSQL's")
        self.db = db
        self.conn: psycopg.AsyncConnection[Any] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def run(self, claim: Callable[[psycopg.AsyncConnection[Any]], Awaitable[T]]) -> T:
        """``claim(conn)``, on a live connection; a failure of the connection raises
        ``Unavailable`` (the store's "not now", as the thread path raises it)."""
        import psycopg

        conn, reused = await self._connection()
        try:
            return await claim(conn)
        except psycopg.OperationalError as exc:
            await self.close()
            if not reused:
                raise Unavailable(str(exc).splitlines()[0]) from exc
        # The connection had died unseen (it showed nothing to read): once on a new one.
        conn, _reused = await self._connection()
        try:
            return await claim(conn)
        except psycopg.OperationalError as exc:
            await self.close()
            raise Unavailable(str(exc).splitlines()[0]) from exc

    async def _connection(self) -> tuple[psycopg.AsyncConnection[Any], bool]:
        """The connection, and whether it was open before this call."""
        conn, loop = self.conn, asyncio.get_running_loop()
        if conn is not None and self._loop is loop and not _dead(conn):
            return conn, True
        await self.close()
        import psycopg

        try:
            conn = await psycopg.AsyncConnection.connect(
                self.db.psycopg_conninfo(),
                autocommit=True,
                prepare_threshold=None,
                connect_timeout=CONNECT_TIMEOUT,
                application_name="seojobs-worker-claims",  # visible in pg_stat_activity
            )
        except psycopg.OperationalError as exc:
            raise Unavailable(str(exc).splitlines()[0]) from exc
        self.conn, self._loop = conn, loop
        return conn, False

    async def close(self) -> None:
        conn, self.conn = self.conn, None
        if conn is None:
            return
        if self._loop is asyncio.get_running_loop():
            with contextlib.suppress(Exception):
                await conn.close()
        self._loop = None


def _dead(conn: psycopg.AsyncConnection[Any]) -> bool:
    if conn.closed or conn.broken:
        return True
    try:
        return _has_input(conn.fileno())
    except Exception:  # the fileno of a closed connection raises
        return True
