"""Status reads on the event loop, on the raw driver: the hot path of every poll.

A status GET is one primary-key lookup. Through SQLAlchemy and the thread pool it cost more
CPU than everything else in the request put together (``bench/api.py``): a pool checkout, a
transaction, statement execution and a thread hand-off for a read of one row. Here the same
read runs on the driver directly, with SQL built once from the table definitions:

- PostgreSQL: psycopg's async driver, connections from a small ``AsyncConnectionPool`` in
  autocommit (one statement: no ``BEGIN``/``COMMIT`` round trips), without server-side prepared
  statements (as ``Database`` does, so PgBouncer in transaction mode keeps working).
- SQLite: one connection, used on the event loop thread itself. In WAL mode a reader never
  waits for the writer, and a primary-key lookup takes tens of microseconds, less than the
  thread hand-off it replaces. Its busy timeout is 0: if SQLite ever reports the database
  busy (WAL recovery after a crash), the read is redone in a thread through SQLAlchemy, which
  waits. An in-memory database (one shared connection) always takes that path.

Rows become the same ``JobRecord`` the SQLAlchemy path builds, params limited to the summary
keys; ``tests/integration/test_fastread.py`` compares the two on both dialects.
"""

from __future__ import annotations

import asyncio
import json
import json.scanner
import re
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON

from seojobs.records import JobRecord
from seojobs.store import jobs as job_sql
from seojobs.store.coltypes import UTCDateTime
from seojobs.store.db import CONNECT_TIMEOUT, Database
from seojobs.store.tables import jobs

_KEY = re.compile(r"^[A-Za-z0-9_]+$")
_PARAMS_AT = 3  # position of ``params`` in the table (JobRecord is positional)
BATCHES_IN_FLIGHT = 2
# Summary params per extracted array: PostgreSQL's functions take at most 100 arguments.
KEYS_PER_COLUMN = 50


def _sqlite_time(value: Any) -> datetime | None:
    # SQLAlchemy stores naive UTC as "YYYY-MM-DD HH:MM:SS.ffffff"; fromisoformat reads it. The
    # offset appended to the text gives the same aware datetime (tzinfo is datetime.UTC) in
    # one C call; .replace(tzinfo=...) cost 6x more, and a row has seven of these.
    return None if value is None else datetime.fromisoformat(value + "+00:00")


def _pg_time(value: Any) -> datetime | None:
    return None if value is None else value.astimezone(UTC)


# json's C scanner without json.loads's two Python layers and two whitespace regexes: the
# texts come from our own columns (json.dumps) and SQLite's json functions, which write no
# surrounding whitespace; anything else takes json.loads.
# (typeshed types its argument as the scanner itself; it is the decoder, as in json.decoder.)
_scan: Callable[[str, int], tuple[Any, int]] = json.scanner.make_scanner(
    json.JSONDecoder()  # type: ignore[arg-type]
)


def _loads(text: str) -> Any:
    try:
        value, end = _scan(text, 0)
    except StopIteration:
        return json.loads(text)  # its own error, or the value after leading whitespace
    return value if end == len(text) else json.loads(text)


def _json_text(value: Any) -> Any:
    return None if value is None else _loads(value)


class FastReads:
    """The status reads of one process; open lazily on the running event loop."""

    def __init__(self, db: Database, param_keys: Sequence[str], *, pool_size: int = 10) -> None:
        for key in param_keys:
            if not _KEY.match(key):
                raise ValueError(f"summary param {key!r}: use letters, digits and underscores")
        self.db = db
        self.param_keys = tuple(param_keys)
        self.pool_size = pool_size
        self._sqlite: sqlite3.Connection | None = None
        self._pool: Any = None  # psycopg_pool.AsyncConnectionPool
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock: asyncio.Lock | None = None
        self._lock_loop: asyncio.AbstractEventLoop | None = None
        sqlite = db.is_sqlite
        self._convert = self._converters(sqlite)
        self._width = len(jobs.c)
        self._json_text = sqlite  # SQLite hands JSON over as text; psycopg decodes it
        columns = self._columns(sqlite)
        # Built only from the table's column names and the keys checked above; every value
        # is a bound parameter. The owner's id comes last: the caller compares it.
        owned = (
            f"SELECT {columns}, projects.user_id FROM jobs "  # noqa: S608
            "JOIN projects ON projects.id = jobs.project_id "
        )
        self._job_sql = owned + ("WHERE jobs.id = ?" if sqlite else "WHERE jobs.id = ANY(%s)")
        mark = "?" if sqlite else "%s"
        self._children_sql = (
            f"SELECT {columns}, NULL FROM jobs "  # noqa: S608
            f"WHERE parent_id = {mark} AND kind = {mark} ORDER BY id"
        )
        # PostgreSQL: concurrent lookups wait for one query of all their ids (see _batch).
        self._waiting: dict[int, list[asyncio.Future[Any]]] = {}
        self._flushers: set[asyncio.Task[None]] = set()
        database = db.url.database
        self._on_loop = not sqlite or database not in (None, "", ":memory:")

    # -- SQL and row conversion, built once ----------------------------------------------

    def _columns(self, sqlite: bool) -> str:
        """The table's columns but ``params``, then the summary params as JSON arrays of their
        values (null where absent), :data:`KEYS_PER_COLUMN` keys to an array: one extraction
        and one decode per row, not one per key (every kind's summary params are read for
        every job, 21 keys with the built-in kinds)."""
        names = [f"jobs.{c.name}" if c.name != "params" else "NULL" for c in jobs.c]
        keys = self.param_keys
        for start in range(0, len(keys), KEYS_PER_COLUMN):
            chunk = keys[start : start + KEYS_PER_COLUMN]
            if sqlite:
                # json_extract with several paths answers one JSON array of their values; a
                # second path that no params hold keeps a single key an array too.
                paths = [f"'$.\"{key}\"'" for key in chunk] + ["'$.\"\"'"] * (len(chunk) == 1)
                names.append(f"json_extract(jobs.params, {', '.join(paths)})")
            else:
                values = ", ".join(f"jobs.params -> '{key}'" for key in chunk)
                names.append(f"json_build_array({values})")
        return ", ".join(names)

    def _converters(self, sqlite: bool) -> list[tuple[int, Callable[[Any], Any]]]:
        """(column position, converter) for the columns the driver does not hand over as is."""
        converters: list[tuple[int, Callable[[Any], Any]]] = []
        for i, column in enumerate(jobs.c):
            if isinstance(column.type, UTCDateTime):
                converters.append((i, _sqlite_time if sqlite else _pg_time))
            elif isinstance(column.type, JSON) and column.name != "params" and sqlite:
                converters.append((i, _json_text))
        return converters

    def _record(self, row: Sequence[Any]) -> JobRecord:
        values = list(row[: self._width])
        for i, convert in self._convert:
            values[i] = convert(values[i])
        arrays = row[self._width : -1]  # the summary params, then the owner's id
        if self._json_text:
            arrays = [None if a is None else _loads(a) for a in arrays]
        extracted = [value for array in arrays if array is not None for value in array]
        extracted = extracted[: len(self.param_keys)] if extracted else []  # SQLite's padding
        given = zip(self.param_keys, extracted, strict=False)  # params NULL: none extracted
        values[_PARAMS_AT] = {k: v for k, v in given if v is not None}
        return JobRecord(*values)

    # -- connections -------------------------------------------------------------------

    async def _ready(self) -> None:
        loop = asyncio.get_running_loop()
        if self._loop is loop:
            return
        if self._lock is None or self._lock_loop is not loop:
            self._lock, self._lock_loop = asyncio.Lock(), loop  # no await since the check
        async with self._lock:
            if self._loop is loop:
                return
            await self.close()
            if self.db.is_sqlite:
                if self._on_loop:
                    self._sqlite = self._open_sqlite()
            else:
                self._pool = await self._open_pool()
            self._loop = loop

    def _open_sqlite(self) -> sqlite3.Connection:
        conn = sqlite3.connect(
            str(self.db.url.database), isolation_level=None, check_same_thread=False
        )
        conn.execute("PRAGMA busy_timeout=0")
        conn.execute("PRAGMA query_only=1")
        return conn

    async def _open_pool(self) -> Any:
        from psycopg_pool import AsyncConnectionPool

        pool = AsyncConnectionPool(
            self.db.psycopg_conninfo(),
            min_size=1,
            max_size=self.pool_size,
            kwargs={
                "autocommit": True,
                "prepare_threshold": None,
                "connect_timeout": CONNECT_TIMEOUT,
                "application_name": "seojobs-status-reads",  # visible in pg_stat_activity
            },
            open=False,
            name="seojobs-status-reads",
        )
        await pool.open()
        return pool

    async def close(self) -> None:
        if self._sqlite is not None:
            self._sqlite.close()
            self._sqlite = None
        if self._pool is not None:
            pool, self._pool = self._pool, None
            if self._loop is asyncio.get_running_loop():
                await pool.close()
        self._loop = None

    # -- reads -------------------------------------------------------------------------

    async def job(self, job_id: int, user_id: int) -> JobRecord | None:
        """A job of the user's (a project of theirs holds it), summary params only."""
        await self._ready()
        if self._pool is not None:
            row = await self._batch(job_id)
        else:
            rows = self._sqlite_rows(self._job_sql, (job_id,))
            if rows is None:
                return await asyncio.to_thread(self._job_slow, job_id, user_id)
            row = rows[0] if rows else None
        return self._record(row) if row is not None and row[-1] == user_id else None

    async def children(self, parent_id: int, kind: str) -> list[JobRecord]:
        await self._ready()
        if self._pool is not None:
            rows = await self._pg_rows(self._children_sql, (parent_id, kind))
        else:
            found = self._sqlite_rows(self._children_sql, (parent_id, kind))
            if found is None:
                return await asyncio.to_thread(self._children_slow, parent_id, kind)
            rows = found
        return [self._record(row) for row in rows]

    def _sqlite_rows(self, sql: str, args: tuple[Any, ...]) -> list[Any] | None:
        """The rows, or None when this read must take the SQLAlchemy path instead."""
        if self._sqlite is None:
            return None
        try:
            return self._sqlite.execute(sql, args).fetchall()
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc) or "busy" in str(exc):
                return None
            raise

    async def _pg_rows(self, sql: str, args: tuple[Any, ...]) -> list[Any]:
        import psycopg  # PostgreSQL only (already loaded by its pool): SQLite never needs it

        try:
            return await self._pg_query(sql, args)
        except psycopg.OperationalError:
            # A dropped connection (server restart, failover, idle timeout): the pool throws
            # it away; check the others too, then try once more on a good one.
            await self._pool.check()
            return await self._pg_query(sql, args)

    async def _pg_query(self, sql: str, args: tuple[Any, ...]) -> list[Any]:
        async with self._pool.connection() as conn:
            cursor = await conn.execute(sql, args)
            return list(await cursor.fetchall())

    async def _batch(self, job_id: int) -> Any:
        """The job's row, read together with every other lookup waiting at the same time.

        Up to ``BATCHES_IN_FLIGHT`` queries run at once; lookups that arrive while they do
        wait for the next one, which asks for all of their ids at once (``id = ANY(...)``).
        Under load that is one round trip and one driver call for many requests instead of
        one each; when idle it is one query per request. Two in flight rather than one, so a
        query whose server process waits for a CPU does not hold up every poll behind it.
        Every read starts after its request arrived, so an answer is never older than the
        request.
        """
        # A future of its own per request: one cancelled (its client gone) is skipped by the
        # batch and cancels nothing else. (One shared per id, behind asyncio.shield, cost a
        # second future and three callbacks per request.)
        waiting = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(job_id, []).append(waiting)
        if len(self._flushers) < BATCHES_IN_FLIGHT:
            task = asyncio.create_task(self._flush(), name="seojobs-status-reads")
            self._flushers.add(task)
            task.add_done_callback(self._flushers.discard)
        return await waiting

    async def _flush(self) -> None:
        while self._waiting:
            batch, self._waiting = self._waiting, {}
            try:
                rows = await self._pg_rows(self._job_sql, (list(batch),))
            except Exception as exc:
                for futures in batch.values():
                    for future in futures:
                        if not future.done():
                            future.set_exception(exc)
                continue
            found = {row[0]: row for row in rows}
            for job_id, futures in batch.items():
                row = found.get(job_id)
                for future in futures:
                    if not future.done():
                        future.set_result(row)

    def _job_slow(self, job_id: int, user_id: int) -> JobRecord | None:
        with self.db.read() as conn:
            return job_sql.get(conn, job_id, param_keys=self.param_keys, user_id=user_id)

    def _children_slow(self, parent_id: int, kind: str) -> list[JobRecord]:
        with self.db.read() as conn:
            found = job_sql.children(conn, parent_id, kind=kind)
        keys = self.param_keys
        return [_slim(job, keys) for job in found]


def _slim(job: JobRecord, keys: tuple[str, ...]) -> JobRecord:
    return replace(job, params={k: job.params[k] for k in keys if job.params.get(k) is not None})
