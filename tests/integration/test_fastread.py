"""Status reads on the raw driver (``seojobs.store.fastread``) against the SQLAlchemy path.

Every test runs on SQLite and PostgreSQL (``store_url``). The fast path must hand back exactly
the ``JobRecord`` that ``services.jobs.get(..., summary=True)`` builds, in every state a job can be
in, and must never show a job to anyone but its owner.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from sqlalchemy import update

from seojobs.kinds import load_registry
from seojobs.records import JobRecord, UserRecord
from seojobs.services import NotFound, Services, indexing
from seojobs.settings import Settings
from seojobs.store.coltypes import utcnow
from seojobs.store.db import Database
from seojobs.store.fastread import FastReads
from seojobs.store.tables import jobs
from seojobs.timefmt import rfc3339
from tests.conftest import PG_ADMIN_URL, make_settings

URLS = ["https://example.com/a", "https://example.com/b"]


@pytest.fixture
def svc(db: Database, settings: Settings) -> Services:
    return Services(db, settings, load_registry(settings))


def _set(db: Database, job_id: int, **values: Any) -> None:
    with db.write() as conn:
        conn.execute(update(jobs).where(jobs.c.id == job_id).values(**values))


def _jobs_in_every_state(svc: Services, user: UserRecord) -> list[int]:
    now = utcnow()
    pending, _ = svc.jobs.create(user, indexing.CHECK, {"urls": URLS}, title="pending")
    submit, _ = svc.jobs.create(
        user, indexing.SUBMIT, {"urls": URLS, "engine": "google", "checker": 2}
    )
    running, _ = svc.jobs.create(user, indexing.CHECK, {"urls": URLS, "engine": "bing"})
    _set(
        svc.db,
        running.id,
        state="processing",
        attempt=1,
        worker_id="w1",
        started_at=now,
        lease_expires_at=now + timedelta(seconds=30),
        items_done=1,
        counters={"indexed": 1},
    )
    done, _ = svc.jobs.create(user, indexing.CHECK, {"urls": URLS}, title="ünïcode ✓")
    _set(
        svc.db,
        done.id,
        state="completed",
        attempt=1,
        started_at=now,
        completed_at=now + timedelta(microseconds=123_457),
        items_done=2,
        items_failed=1,
        counters={"indexed": 1, "failed": 1},
        result={"nested": {"list": [1, 2.5, None, "x"]}},
    )
    failed, _ = svc.jobs.create(user, indexing.SUBMIT, {"urls": URLS})
    _set(
        svc.db,
        failed.id,
        state="failed",
        completed_at=now,
        error_code="provider_not_configured",
        error_message="set SEOJOBS_INDEXNOW_KEY",
    )
    return [pending.id, submit.id, running.id, done.id, failed.id]


def test_fast_reads_match_the_sqlalchemy_path(svc: Services) -> None:
    user = svc.accounts.create_user("alice").user
    ids = _jobs_in_every_state(svc, user)
    slow = [svc.jobs.get(user, job_id, summary=True) for job_id in ids]
    # The summary keys are really there (the submission's checker, the engines).
    assert slow[1].params == {"engine": "google", "checker": 2, "duplicates_removed": 0}
    assert slow[2].params["engine"] == "bing"

    async def read() -> list[JobRecord | None]:
        try:
            return [await svc.reads.job(job_id, user.id) for job_id in ids]
        finally:
            await svc.reads.close()

    assert asyncio.run(read()) == slow


def test_only_the_owner_sees_a_job(svc: Services) -> None:
    alice = svc.accounts.create_user("alice").user
    bob = svc.accounts.create_user("bob").user
    job, _ = svc.jobs.create(alice, indexing.CHECK, {"urls": URLS})

    async def read() -> tuple[Any, ...]:
        try:
            mine = await svc.reads.job(job.id, alice.id)
            theirs = await svc.reads.job(job.id, bob.id)
            missing = await svc.reads.job(job.id + 1000, alice.id)
            with pytest.raises(NotFound):
                await svc.jobs.summary(bob, job.id)
            return mine, theirs, missing
        finally:
            await svc.reads.close()

    mine, theirs, missing = asyncio.run(read())
    assert mine is not None and mine.id == job.id
    assert theirs is None and missing is None


def test_concurrent_lookups_each_get_their_own_answer(svc: Services) -> None:
    # On PostgreSQL these share queries (one in flight, the rest batched); each caller must
    # still get its own job, its own "not yours" and its own "no such job".
    alice = svc.accounts.create_user("alice").user
    bob = svc.accounts.create_user("bob").user
    ids = [svc.jobs.create(alice, indexing.CHECK, {"urls": URLS})[0].id for _ in range(20)]
    asks = [(job_id, alice.id) for job_id in ids] * 3 + [(ids[0], bob.id), (10**9, alice.id)]

    async def read() -> list[JobRecord | None]:
        try:
            return await asyncio.gather(*(svc.reads.job(j, u) for j, u in asks))
        finally:
            await svc.reads.close()

    found = asyncio.run(read())
    assert [job.id if job else None for job in found] == [j for j, _ in asks[:-2]] + [None, None]


@pytest.mark.stores("postgresql")
def test_a_cancelled_lookup_leaves_the_others_of_its_batch_answered(svc: Services) -> None:
    # Lookups of one job share a query; a request that goes away (its lookup cancelled)
    # must not cancel the answer of the others waiting for the same job.
    alice = svc.accounts.create_user("alice").user
    job_id = svc.jobs.create(alice, indexing.CHECK, {"urls": URLS})[0].id

    async def read() -> list[JobRecord | None]:
        try:
            await svc.reads.job(job_id, alice.id)  # the pool open, so lookups batch
            lookups = [asyncio.create_task(svc.reads.job(job_id, alice.id)) for _ in range(6)]
            await asyncio.sleep(0)  # each lookup is waiting for its batch
            lookups[1].cancel()
            lookups[4].cancel()
            kept = [task for i, task in enumerate(lookups) if i not in (1, 4)]
            return list(await asyncio.gather(*kept))
        finally:
            await svc.reads.close()

    found = asyncio.run(read())
    assert [job.id if job else None for job in found] == [job_id] * 4


def test_follow_up_check_is_read_as_on_the_slow_path(svc: Services) -> None:
    user = svc.accounts.create_user("alice").user
    submit, _ = svc.jobs.create(
        user, indexing.SUBMIT, {"urls": URLS, "engine": "google", "checker": 1}
    )
    child = indexing.follow_up(svc, submit)
    assert child is not None

    async def read() -> tuple[list[JobRecord], dict[str, Any]]:
        try:
            found = await svc.reads.children(submit.id, indexing.CHECK)
            body = await indexing.status_body(svc, await svc.jobs.summary(user, submit.id))
            return found, body
        finally:
            await svc.reads.close()

    found, body = asyncio.run(read())
    assert [c.id for c in found] == [child.id]
    assert found[0].run_at == child.run_at and found[0].state == child.state
    assert body == indexing.submission_status(svc, svc.jobs.get(user, submit.id, summary=True))
    assert body["scheduled_check_at"] == rfc3339(child.run_at)


def _services(url: str) -> Services:
    settings = make_settings(url)
    return Services(Database(url), settings, load_registry(settings))


def test_sqlite_busy_falls_back_to_a_waiting_read(sqlite_url: str) -> None:
    svc = _services(sqlite_url)
    user = svc.accounts.create_user("alice").user
    job, _ = svc.jobs.create(user, indexing.CHECK, {"urls": URLS})
    svc.db.dispose()  # no other connection open, so the holder below can take the lock
    # Another process holding SQLite's exclusive lock: readers get "database is locked".
    holder = sqlite3.connect(
        str(svc.db.url.database), isolation_level=None, check_same_thread=False
    )
    holder.execute("PRAGMA locking_mode=EXCLUSIVE")
    holder.execute("BEGIN EXCLUSIVE")
    holder.execute("COMMIT")  # in exclusive mode the lock stays until the connection closes
    released = threading.Timer(0.5, holder.close)

    async def read() -> tuple[bool, JobRecord | None]:
        try:
            with pytest.raises(sqlite3.OperationalError, match="locked"):
                sqlite3.connect(str(svc.db.url.database), timeout=0).execute("SELECT 1 FROM jobs")
            released.start()
            return released.is_alive(), await svc.reads.job(job.id, user.id)
        finally:
            await svc.reads.close()

    try:
        was_locked, found = asyncio.run(read())
    finally:
        released.join()
        svc.db.dispose()
    assert was_locked
    assert found is not None and found.id == job.id


def test_postgresql_reads_survive_a_lost_connection(pg_url: str) -> None:
    svc = _services(pg_url)
    user = svc.accounts.create_user("alice").user
    job, _ = svc.jobs.create(user, indexing.CHECK, {"urls": URLS})
    database = svc.db.url.database

    killed: list[int] = []

    def kill_readers() -> None:
        with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
            cursor = admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = %s AND application_name = 'seojobs-status-reads'",
                (database,),
            )
            killed.append(len(cursor.fetchall()))

    async def read() -> None:
        try:
            assert (await svc.reads.job(job.id, user.id)) is not None
            await asyncio.to_thread(kill_readers)
            # Every pooled connection is dead now: the reads notice, and retry on new ones.
            found = await asyncio.gather(*(svc.reads.job(job.id, user.id) for _ in range(3)))
            assert [f.id if f else None for f in found] == [job.id] * 3
            assert killed and killed[0] >= 1  # the pool held at least one
        finally:
            await svc.reads.close()

    try:
        asyncio.run(read())
    finally:
        svc.db.dispose()


def test_summary_keys_must_be_plain_names(db: Database) -> None:
    with pytest.raises(ValueError, match="summary param"):
        FastReads(db, ["ok", "bad'key"])


@pytest.mark.parametrize("keys", [("seeds",), ("seeds", "engine", "max_pages"), ()])
def test_summary_params_come_back_whatever_their_count_and_shape(
    svc: Services, keys: tuple[str, ...]
) -> None:
    """The summary params are read as arrays of their values (one extraction per row): one
    key, several, or none; lists, numbers, strings and absent keys as the SQLAlchemy path
    reads them."""
    user = svc.accounts.create_user("alice").user
    job, _ = svc.jobs.create(user, indexing.CHECK, {"urls": URLS}, title="shapes")
    params = {"urls": URLS, "seeds": ["a", "b"], "engine": "bing", "other": {"x": 1}}
    _set(svc.db, job.id, params=params)
    reads = FastReads(svc.db, keys)

    async def read() -> JobRecord | None:
        try:
            return await reads.job(job.id, user.id)
        finally:
            await reads.close()

    found = asyncio.run(read())
    assert found is not None
    assert found.params == {k: params[k] for k in keys if k in params}
