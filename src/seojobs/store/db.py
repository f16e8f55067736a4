"""The database handle: one SQLAlchemy engine configured for its dialect.

SQLite gets WAL, a busy timeout and ``BEGIN IMMEDIATE`` for every write transaction (a deferred
transaction that later writes fails with SQLITE_BUSY at once, ignoring the timeout). Reads use
plain ``BEGIN`` so they never wait for the writer lock.
"""

from __future__ import annotations

import asyncio
import contextlib
import select
import threading
import time
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar, cast

from sqlalchemy import Connection as Connection  # re-exported: the layers above type with it
from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.engine import Dialect, make_url
from sqlalchemy.exc import DisconnectionError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlalchemy.pool import QueuePool, StaticPool

from seojobs import jsontext
from seojobs.store.errors import Unavailable

T = TypeVar("T")
NOTIFY_CHANNEL = "seojobs_jobs"  # jobs are ready: workers claim
WEBHOOK_CHANNEL = "seojobs_webhooks"  # deliveries are due: webhook dispatchers claim
# A schedule may tick sooner, or the leader resigned: the maintenance loops look again.
MAINTENANCE_CHANNEL = "seojobs_maintenance"
SQLITE_BUSY_TIMEOUT_MS = 30_000
# A pooled PostgreSQL connection idle longer than this is pinged before use (HikariCP's
# aliveBypassWindow is 0.5 s, pgxpool's 1 s).
PING_AFTER_IDLE = 1.0
# A connection attempt to a server that accepts and then says nothing (hung, frozen, a
# black-holed address) gives up after this long, so no thread waits on it for ever (libpq's
# own minimum is 2 s).
CONNECT_TIMEOUT = 5


def notify(conn: Connection, channel: str = NOTIFY_CHANNEL) -> None:
    """Wake whoever listens on ``channel`` once this write transaction commits: a NOTIFY on
    PostgreSQL (every process's listener, this one's too); on SQLite this process's wake hooks,
    called by :meth:`Database.write` after the commit (other processes see the file change:
    ``seojobs.store.listener``). Several in one transaction wake once."""
    if conn.dialect.name == "postgresql":
        conn.execute(_PG_NOTIFY, {"ch": channel})
    else:
        # Woken after commit (see Database.write) so a woken worker sees the rows.
        conn.info.setdefault("seojobs_wake", set()).add(channel)


_PG_NOTIFY = text("SELECT pg_notify(:ch, '')")


class Database:
    """A database URL turned into an engine, plus the in-process wake-up hooks."""

    def __init__(self, url: str, *, pool_size: int = 10) -> None:
        self.url = make_url(url)
        self.dialect = self.url.get_backend_name()
        if self.dialect not in ("sqlite", "postgresql"):
            raise ValueError(f"unsupported database {self.dialect!r}: use sqlite or postgresql")
        self.engine = self._make_engine(pool_size)
        self._wake_hooks: dict[str, list[Callable[[], None]]] = {}  # channel: hooks
        self._hooks_lock = threading.Lock()
        self._held = threading.local()  # the connection of this thread's one_read(), if any

    @property
    def is_sqlite(self) -> bool:
        return self.dialect == "sqlite"

    def _make_engine(self, pool_size: int) -> Engine:
        if self.dialect == "postgresql":
            url = self.url
            if url.drivername == "postgresql":
                url = url.set(drivername="postgresql+psycopg")
            engine = create_engine(
                url,
                pool_size=pool_size,
                max_overflow=pool_size,
                # No server-side prepared statements: their generic plans for the batched
                # claim and ack were slower than planning each time (bench/queue.py), and
                # they break behind PgBouncer in transaction mode.
                connect_args={"prepare_threshold": None, "connect_timeout": CONNECT_TIMEOUT},
                json_serializer=jsontext.dumps,
            )
            event.listen(engine, "connect", _pg_mark_idle)
            event.listen(engine, "checkin", _pg_mark_idle)
            event.listen(engine, "checkout", _PgCheckout(engine.dialect))
            return engine
        database = self.url.database
        if database and database != ":memory:":
            Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)
        pool: dict[str, Any] = {"poolclass": QueuePool, "pool_size": pool_size}
        if database in (None, "", ":memory:"):
            # One shared connection for an in-memory database, or each would see its own.
            pool = {"poolclass": StaticPool}
        engine = create_engine(
            self.url,
            connect_args={"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000, "check_same_thread": False},
            json_serializer=jsontext.dumps,
            **pool,
        )
        event.listen(engine, "connect", _sqlite_on_connect)
        event.listen(engine, "begin", _sqlite_on_begin)
        return engine

    # -- transactions -------------------------------------------------------------------

    @contextmanager
    def write(self) -> Iterator[Connection]:
        """A transaction that may write (``BEGIN IMMEDIATE`` on SQLite)."""
        with _unavailable(), self.engine.connect() as conn:
            conn = conn.execution_options(seojobs_write=True)
            conn.info.pop("seojobs_wake", None)
            with conn.begin():
                yield conn
            for channel in conn.info.pop("seojobs_wake", ()):
                self.wake_local(channel)

    @contextmanager
    def write_statement(self) -> Iterator[Connection]:
        """For a write that is one statement on PostgreSQL: there the statement is its own
        transaction (autocommit: no BEGIN and COMMIT round trips); on SQLite ``write()``."""
        if self.dialect != "postgresql":
            with self.write() as conn:
                yield conn
            return
        with self.autocommit() as conn:
            yield conn

    @contextmanager
    def read_statement(self) -> Iterator[Connection]:
        """For a read that is one statement (its own snapshot): on PostgreSQL outside a
        transaction block, without the BEGIN and ROLLBACK round trips (a crawl reads its open
        items a page at a time); on SQLite, and inside this thread's ``one_read()``,
        ``read()``."""
        if self.dialect != "postgresql" or getattr(self._held, "conn", None) is not None:
            with self.read() as conn:
                yield conn
            return
        with self.autocommit() as conn:
            yield conn

    @contextmanager
    def autocommit(self) -> Iterator[Connection]:
        """A connection whose every statement commits by itself (one-statement writes)."""
        with _unavailable(), self.engine.connect() as conn:
            yield conn.execution_options(isolation_level="AUTOCOMMIT")

    @contextmanager
    def read(self) -> Iterator[Connection]:
        """A read transaction; inside this thread's ``one_read()``, that one."""
        held: Connection | None = getattr(self._held, "conn", None)
        if held is not None:
            yield held
            return
        with _unavailable(), self.engine.connect() as conn, conn.begin():
            yield conn

    @contextmanager
    def one_read(self) -> Iterator[None]:
        """Every ``read()`` of this thread in the block shares one connection and transaction
        (one snapshot; one checkout, BEGIN and end instead of one per read): for a page made
        of several reads. Reads only: a ``write()`` in the block is a transaction of its own,
        and the block's later reads do not see it."""
        if getattr(self._held, "conn", None) is not None:
            yield
            return
        with self.read() as conn:
            self._held.conn, self._held.memo = conn, {}
            try:
                yield
            finally:
                self._held.conn = self._held.memo = None

    def once(self, key: Hashable, compute: Callable[[], T]) -> T:
        """``compute()``, kept for the rest of this thread's ``one_read()`` under ``key`` (the
        same read in one snapshot answers the same): a page's lookups of its job and project,
        made by each service it calls, are read once. Outside a block, computed each time."""
        memo: dict[Hashable, Any] | None = getattr(self._held, "memo", None)
        if memo is None:
            return compute()
        if key not in memo:
            memo[key] = compute()
        return cast(T, memo[key])

    # -- wake-ups -----------------------------------------------------------------------

    def notify(self, conn: Connection, channel: str = NOTIFY_CHANNEL) -> None:
        """Tell workers that jobs are ready (``channel``: or dispatchers that deliveries are
        due). Sent at commit on PostgreSQL; in-process on SQLite (:func:`notify`)."""
        notify(conn, channel)

    def wake_local(self, channel: str = NOTIFY_CHANNEL) -> None:
        with self._hooks_lock:
            hooks = list(self._wake_hooks.get(channel, ()))
        for hook in hooks:
            hook()

    def add_wake_hook(self, hook: Callable[[], None], channel: str = NOTIFY_CHANNEL) -> None:
        with self._hooks_lock:
            self._wake_hooks.setdefault(channel, []).append(hook)

    def remove_wake_hook(self, hook: Callable[[], None], channel: str = NOTIFY_CHANNEL) -> None:
        with self._hooks_lock:
            hooks = self._wake_hooks.get(channel, [])
            if hook in hooks:
                hooks.remove(hook)

    def psycopg_conninfo(self) -> str:
        """libpq connection string for a dedicated LISTEN connection."""
        return self.url.set(drivername="postgresql").render_as_string(hide_password=False)

    def ping(self) -> bool:
        """Does the database answer?"""
        try:
            with self.read() as conn:
                conn.execute(text("SELECT 1"))
        except Unavailable:
            return False
        return True

    async def probe(self, within: float) -> bool:
        """Does the database answer a new connection's ``SELECT 1`` within ``within`` s?

        Async and on a connection of its own, outside the pool: it is asked when requests
        already wait (their threads may hold every pooled connection), and a server that
        accepts but never answers is given up on when ``within`` runs out, which a thread
        blocked in the driver cannot be. SQLite is a local file: always True."""
        if self.dialect != "postgresql":
            return True
        import psycopg  # loaded on PostgreSQL only: a SQLite process never needs it

        try:
            async with asyncio.timeout(within):
                conn = await psycopg.AsyncConnection.connect(
                    self.psycopg_conninfo(), autocommit=True, connect_timeout=CONNECT_TIMEOUT
                )
                try:
                    await conn.execute("SELECT 1")
                finally:
                    await conn.close()
        except (TimeoutError, OSError, psycopg.Error):
            return False
        return True

    def dispose(self) -> None:
        self.engine.dispose()


class OwnConnection:
    """A connection of one thread's own, out of the pool for as long as it lives: for the
    worker's heartbeat, which must wait neither for a pooled connection nor behind the rest of
    the process's work. Opened at its first transaction, and again after one that failed."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self._conn: Connection | None = None

    @property
    def is_open(self) -> bool:
        return self._conn is not None

    @contextmanager
    def transaction(self, *, write: bool) -> Iterator[Connection]:
        """A transaction on it; ``write``: one that may write (``BEGIN IMMEDIATE`` on SQLite,
        as ``Database.write``). A failure closes the connection (it may be dead: a server
        restart, ``pg_terminate_backend``); the next transaction opens another."""
        with _unavailable():
            if self._conn is None:
                self._conn = self.db.engine.connect()
            conn = self._conn.execution_options(seojobs_write=write)
            try:
                with conn.begin():
                    yield conn
            except BaseException:
                self.close(invalidate=True)
                raise

    def close(self, *, invalidate: bool = False) -> None:
        conn, self._conn = self._conn, None
        if conn is None:
            return
        with contextlib.suppress(Exception):  # what it failed with was said already
            if invalidate:
                conn.invalidate()
            conn.close()


def _pg_mark_idle(_dbapi_conn: Any, record: Any) -> None:
    record.info["seojobs_idle_since"] = time.monotonic()


class _PgCheckout:
    """Instead of ``pool_pre_ping`` (a round trip on every checkout, the first of every
    enqueue and claim), a pooled connection is pinged only when it may be dead: it sat idle
    past ``PING_AFTER_IDLE``, or the server has sent it something unasked. A backend that was
    terminated (server restart, ``pg_terminate_backend``, failover) writes its FATAL error and
    closes the socket, so its connection reads as ready; a healthy idle one has nothing to
    read. A dead connection is replaced by a new one before the caller sees it."""

    def __init__(self, dialect: Dialect) -> None:
        self.dialect = dialect

    def __call__(self, dbapi_conn: Any, record: Any, _proxy: Any) -> None:
        idle = time.monotonic() - record.info.get("seojobs_idle_since", 0.0)
        try:
            if idle >= PING_AFTER_IDLE or _has_input(dbapi_conn.fileno()):
                self.dialect.do_ping(dbapi_conn)
        except Exception as exc:  # the fileno of a closed connection raises too
            raise DisconnectionError(f"pooled connection is dead: {exc}") from exc


def _has_input(fd: int) -> bool:
    if not hasattr(select, "poll"):  # Windows: no poll(); ping every time
        return True
    # poll(), not select(): select() refuses descriptors above 1023.
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(0))


def _sqlite_on_connect(dbapi_conn: Any, _record: Any) -> None:
    # Take transaction control away from pysqlite so BEGIN is ours to emit.
    dbapi_conn.isolation_level = None
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")  # crash-safe in WAL mode
    cur.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.close()


def _sqlite_on_begin(conn: Connection) -> None:
    if conn.get_execution_options().get("seojobs_write"):
        conn.exec_driver_sql("BEGIN IMMEDIATE")
    else:
        conn.exec_driver_sql("BEGIN")


def connect(url: str, **kwargs: Any) -> Database:
    return Database(url, **kwargs)


@contextmanager
def _unavailable() -> Iterator[None]:
    """The driver's "cannot do it now" errors as the store's ``Unavailable``; the layers
    above answer it (503, retry later) without knowing SQLAlchemy."""
    try:
        yield
    except (OperationalError, PoolTimeout) as exc:
        raise Unavailable(str(exc).splitlines()[0]) from exc


def shown_url(url: str) -> str:
    """A database URL as commands print it: the password masked."""
    return make_url(url).render_as_string(hide_password=True)
