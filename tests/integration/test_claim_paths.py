"""PostgreSQL's claim runs as plain SQL on the driver (``job_sql.pg_claim_sql``): in a thread on
SQLAlchemy's connection (``job_sql.claim``), or on the worker's event loop
(``job_sql.claim_async``). Both must take and return exactly what SQLAlchemy's statement
(``_claim_statement``, still SQLite's) takes and returns, for every shape of claim: the same
rows locked and updated, the same records in the same order, the same owners."""

from __future__ import annotations

import asyncio
import itertools
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from seojobs.records import JobRecord, NewJob
from seojobs.services import Services
from seojobs.store import jobs as job_sql
from seojobs.store.coltypes import utcnow
from seojobs.store.db import Database
from seojobs.store.loopclaim import LoopClaims
from tests.waiting import await_until

pytestmark = pytest.mark.stores("postgresql")

LEASE = 30.0
SHAPES = list(itertools.product((False, True), repeat=4))  # kinds, exclude, users, owners


def _seed(services: Services, db: Database) -> tuple[datetime, list[int]]:
    """Jobs of three kinds, two users, mixed priorities and due times, some already taken;
    returns the claim's ``now`` and the users' ids."""
    alice = services.accounts.create_user("alice").user
    bob = services.accounts.create_user("bob").user
    projects = [alice.default_project_id, bob.default_project_id]
    now = utcnow()
    with db.write() as conn:
        for i in range(24):
            new = NewJob(
                project_id=projects[i % 2],
                kind=("a", "b", "c")[i % 3],
                params={"i": i, "nested": {"x": [1, 2]}},
                priority=(0, 1, -1, 0)[i % 4],
                run_at=now - timedelta(seconds=i) if i % 5 else now + timedelta(hours=1),
                title=f"job {i}" if i % 2 else None,
            )
            job_sql.insert_job(db, conn, new, now - timedelta(minutes=1))
        # Some already processing: a claim never takes them.
        job_sql.claim(db, conn, "other", 3, now, LEASE, kinds=["b"])
    return now, [alice.id, bob.id]


def _args(shape: tuple[bool, ...], users: list[int]) -> dict[str, Any]:
    some_kinds, exclude, exclude_users, owner = shape
    return {
        "kinds": ["a", "b"] if some_kinds else None,
        "exclude": ["b"] if exclude else (),
        "exclude_users": users[:1] if exclude_users else (),
        "owners": {} if owner else None,
    }


def _reference(conn: Any, now: datetime, limit: int, args: dict[str, Any]) -> list[JobRecord]:
    """What ``job_sql.claim`` returned on PostgreSQL before the driver path: SQLAlchemy's
    statement, its rows as records."""
    owners = args["owners"]
    shape = (bool(args["kinds"]), bool(args["exclude"]), bool(args["exclude_users"]))
    stmt = job_sql._claim_statement("postgresql", *shape, owners is not None)
    params = job_sql._claim_params(
        "w1", limit, now, LEASE, args["kinds"], args["exclude"], args["exclude_users"]
    )
    rows = conn.execute(stmt, params).all()
    if owners is not None:
        owners.update((row[0], row[-1]) for row in rows)
        found = [JobRecord(*row[:-1]) for row in rows]
    else:
        found = [JobRecord(*row) for row in rows]
    return sorted(found, key=lambda j: (j.priority, j.run_at, j.id))


@pytest.mark.parametrize("limit", [1, 4, 50])
async def test_the_driver_claims_are_sqlalchemys_claim(
    services: Services, db: Database, limit: int
) -> None:
    now, users = _seed(services, db)
    for shape in SHAPES:
        args = _args(shape, users)
        # Each path claims on the same rows in a transaction rolled back after it.
        with db.engine.connect() as conn:
            with conn.begin() as tx:
                expected = _reference(conn, now, limit, args)
                tx.rollback()
            raw_args = _args(shape, users)
            with conn.begin() as tx:
                raw = job_sql.claim(db, conn, "w1", limit, now, LEASE, **raw_args)
                tx.rollback()
        loop_args = _args(shape, users)
        async with await psycopg.AsyncConnection.connect(db.psycopg_conninfo()) as aconn:
            on_loop = await job_sql.claim_async(aconn, "w1", limit, now, LEASE, **loop_args)
            await aconn.rollback()
        assert expected, shape  # every shape finds something to claim
        assert raw == expected, shape
        assert on_loop == expected, shape
        assert raw_args["owners"] == loop_args["owners"] == args["owners"], shape
        for job in (*raw, *on_loop):  # timestamps in UTC, as SQLAlchemy's type gives them
            assert job.started_at is not None and job.started_at.tzinfo is UTC
            assert job.run_at.tzinfo is UTC and job.created_at.tzinfo is UTC


async def test_a_claim_on_the_loop_takes_each_job_once(services: Services, db: Database) -> None:
    now, _users = _seed(services, db)
    async with await psycopg.AsyncConnection.connect(
        db.psycopg_conninfo(), autocommit=True
    ) as aconn:
        first = await job_sql.claim_async(aconn, "w1", 5, now, LEASE)
        with db.write() as conn:
            second = job_sql.claim(db, conn, "w2", 50, now, LEASE)
        third = await job_sql.claim_async(aconn, "w1", 50, now, LEASE)
    assert len(first) == 5 and third == []
    assert {j.id for j in first}.isdisjoint(j.id for j in second)
    assert all(j.attempt == 1 and j.state == "processing" for j in first + second)


async def test_the_loop_claim_connection_comes_back_after_its_backend_is_terminated(
    services: Services, db: Database
) -> None:
    # A server restart or failover ends the backend under an idle worker: its next claim
    # must run on a new connection, not fail until the poll after it.
    now, _users = _seed(services, db)
    claims = LoopClaims(db)

    async def one(conn: Any) -> list[JobRecord]:
        return await job_sql.claim_async(conn, "w1", 1, now, LEASE)

    try:
        assert len(await claims.run(one)) == 1
        assert claims.conn is not None
        first = claims.conn.info.backend_pid
        with psycopg.connect(db.psycopg_conninfo(), autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (first,))
        await await_until(lambda: _gone(db, first))
        assert len(await claims.run(one)) == 1
        assert claims.conn is not None and claims.conn.info.backend_pid != first
    finally:
        await claims.close()


async def _gone(db: Database, pid: int) -> bool:
    def look() -> bool:
        with psycopg.connect(db.psycopg_conninfo(), autocommit=True) as conn:
            row = conn.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", (pid,))
            return row.fetchone() is None

    return await asyncio.to_thread(look)
