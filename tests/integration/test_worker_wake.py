"""How a woken worker claims, on both stores: on PostgreSQL a claim with no acknowledgements
to carry is one statement in autocommit (no BEGIN and COMMIT round trips before the job can
start), on the worker's event loop, which its LISTEN connection wakes (no thread hand-offs);
on SQLite every claim stays inside BEGIN IMMEDIATE, the single writer's lock."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from sqlalchemy import event

from seojobs.engine.registry import Registry
from seojobs.engine.worker import Worker
from seojobs.services import Services
from seojobs.store.db import NOTIFY_CHANNEL, Database
from tests.conftest import make_settings
from tests.waiting import await_until

CLAIM_ORDER = "ORDER BY jobs.priority, jobs.run_at, jobs.id"


def _in_transaction(dbapi_conn: Any, dialect: str) -> bool:
    if dialect == "postgresql":
        from psycopg.pq import TransactionStatus

        return bool(dbapi_conn.info.transaction_status != TransactionStatus.IDLE)
    return bool(dbapi_conn.in_transaction)


class ClaimWatch:
    """Records, for every claim statement the worker's engine runs, whether the connection was
    inside a transaction block when the statement had run."""

    def __init__(self, db: Database) -> None:
        self.dialect = db.dialect
        self.claims: list[bool] = []  # True: inside a transaction block
        event.listen(db.engine, "after_cursor_execute", self._after)

    def _after(self, _conn: Any, cursor: Any, statement: str, *_args: Any) -> None:
        if CLAIM_ORDER in statement and statement.lstrip().startswith(("WITH", "UPDATE")):
            self.claims.append(_in_transaction(cursor.connection, self.dialect))


async def test_woken_worker_claims_without_a_transaction_block_on_postgresql(
    store_url: str, registry: Registry
) -> None:
    # A 60 s poll: only the wake-up (LISTEN/NOTIFY or the data_version watch) starts the jobs.
    settings = make_settings(store_url, poll_interval=60)
    db, producer_db = Database(store_url), Database(store_url)
    watch = ClaimWatch(db)
    services = Services(producer_db, settings, registry)
    user = services.accounts.create_user("alice").user
    worker = Worker(db, settings, registry, maintenance=False)
    pg = db.dialect == "postgresql"
    task = asyncio.create_task(worker.run())
    try:
        if pg:  # the first claim found nothing, on the worker's claim connection (and the
            # look after it, which says when the soonest delayed job is due: none)
            await await_until(lambda: _backend_ran(db, CLAIMS_APP, ON_THE_CLAIM_CONNECTION))
        else:
            await await_until(lambda: _claimed_at_least(watch, 1))
        for n in range(3):  # one job at a time, each to an idle worker
            job, _ = services.jobs.create(user, "test_noop", {})
            await await_until(lambda job_id=job.id: _completed(services, user, job_id))
            assert worker.claimed_total == n + 1
        if pg:
            # The LISTEN connection and the claims run on the event loop: no thread of their
            # own, the claim connection in autocommit, and no claim on the pool's connections.
            assert "seojobs-listen" not in {t.name for t in threading.enumerate()}
            assert await _backend_ran(db, "seojobs-listen", f"LISTEN {NOTIFY_CHANNEL}")
            assert worker._loop_claims is not None and worker._loop_claims.conn is not None
            assert worker._loop_claims.conn.autocommit
            ran = await asyncio.to_thread(_last_queries, db)
            claimed_by = {app for app, query in ran if query.startswith(ON_THE_CLAIM_CONNECTION)}
            assert claimed_by == {CLAIMS_APP}, ran
    finally:
        worker.stop()
        await asyncio.wait_for(task, 30)
        db.dispose()
        producer_db.dispose()
    if pg:
        assert watch.claims == []  # none through SQLAlchemy's engine
    else:
        assert len(watch.claims) >= 4
        assert all(watch.claims), watch.claims


CLAIMS_APP = "seojobs-worker-claims"
ON_THE_CLAIM_CONNECTION = ("WITH picked AS", "SELECT EXISTS")  # a claim, an idle look


def _last_queries(db: Database) -> list[tuple[str, str]]:
    """(application name, last statement) of every other backend of the database."""
    import psycopg

    with psycopg.connect(db.psycopg_conninfo(), autocommit=True) as conn:
        rows = conn.execute(
            "SELECT application_name, query FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchall()
    return [(str(app), str(query).lstrip()) for app, query in rows]


async def _backend_ran(db: Database, app: str, prefix: str | tuple[str, ...]) -> bool:
    ran = await asyncio.to_thread(_last_queries, db)
    return any(name == app and query.startswith(prefix) for name, query in ran)


async def _claimed_at_least(watch: ClaimWatch, n: int) -> bool:
    return len(watch.claims) >= n


async def _completed(services: Services, user: Any, job_id: int) -> bool:
    job = await asyncio.to_thread(services.jobs.get, user, job_id)
    return bool(job.state == "completed")


def test_a_created_job_wakes_workers_from_its_insert_statement(
    store_url: str, registry: Registry
) -> None:
    # On PostgreSQL the NOTIFY rides in the INSERT itself (one round trip fewer per enqueue);
    # on SQLite the in-process hook fires once, after the commit.
    settings = make_settings(store_url)
    db = Database(store_url)
    statements: list[str] = []
    event.listen(db.engine, "before_cursor_execute", lambda *a: statements.append(a[2]))
    hooks: list[bool] = []
    db.add_wake_hook(lambda: hooks.append(True))
    services = Services(db, settings, registry)
    user = services.accounts.create_user("alice").user
    listener = _listen(store_url) if db.dialect == "postgresql" else None
    try:
        statements.clear()
        _job, created = services.jobs.create(user, "test_noop", {})
        assert created
        notifying = [s for s in statements if "pg_notify" in s]
        if listener is not None:
            assert [n.channel for n in listener.notifies(timeout=10, stop_after=1)] == [
                NOTIFY_CHANNEL
            ]
            assert len(notifying) == 1 and notifying[0].lstrip().startswith("WITH"), statements
            assert "INSERT INTO jobs" in notifying[0]
        else:
            assert notifying == []
            assert hooks == [True]  # once, after the commit
    finally:
        if listener is not None:
            listener.close()
        db.dispose()


def _listen(url: str) -> Any:
    import psycopg

    conn = psycopg.connect(Database(url).psycopg_conninfo(), autocommit=True)
    conn.execute(f"LISTEN {NOTIFY_CHANNEL}")
    return conn
