"""seojobs itself: schema set-up, bulk insert, burn-down and wake-up latency."""

from __future__ import annotations

import asyncio
import random
import time

from bench.common import Burn, Wake, burn_timeout, wait_until_done
from bench.kinds import BURN_KIND, WAKE_KIND, Counter, Stamps, burn_registry, wake_registry
from seojobs.engine.registry import Registry
from seojobs.engine.worker import Worker
from seojobs.services import Services
from seojobs.settings import Settings
from seojobs.store import jobs as job_sql
from seojobs.store import migrate
from seojobs.store.coltypes import utcnow
from seojobs.store.db import Database
from seojobs.store.records import NewJob

LEASE_SECONDS = 30.0
POLL_INTERVAL = 1.0  # the default; the wake-up numbers show whether a wake-up beat the poll
WAKE_CONCURRENCY = 10  # the default worker concurrency
INSERT_CHUNK = 5000
EXECUTOR_THREADS = 4  # Worker's ThreadPoolExecutor size: connections opened before the clock


def settings_for(url: str) -> Settings:
    return Settings(database_url=url, lease_seconds=LEASE_SECONDS, poll_interval=POLL_INTERVAL)


def prepare_template(url: str) -> int:
    """Migrate an empty database and create the bench user; returns its project id."""
    settings = settings_for(url)
    db = Database(settings.database_url)
    try:
        migrate.upgrade(db)
        # create_user also returns an API key; it is a secret and is never printed.
        created = Services(db, settings, Registry()).create_user("bench")
        return created.user.default_project_id
    finally:
        db.dispose()


def insert_jobs(url: str, project_id: int, count: int, kind: str = BURN_KIND) -> None:
    """Pre-insert ``count`` pending, due, item-less jobs (not timed)."""
    db = Database(settings_for(url).database_url)
    try:
        now = utcnow()
        for start in range(0, count, INSERT_CHUNK):
            news = [
                NewJob(project_id=project_id, kind=kind, params={}, run_at=now)
                for _ in range(min(INSERT_CHUNK, count - start))
            ]
            with db.write() as conn:
                job_sql.insert_many_bare(db, conn, news, now)
    finally:
        db.dispose()


def completed_count(db: Database) -> int:
    with db.read() as conn:
        return job_sql.count_by_state(conn).get("completed", 0)


def _warm(db: Database, connections: int) -> None:
    """Open pooled connections now so the timed run does not pay for connecting."""
    opened = [db.engine.connect() for _ in range(connections)]
    for conn in opened:
        conn.close()


async def _stop(worker: Worker, task: asyncio.Task[None]) -> None:
    worker.stop()
    await asyncio.wait_for(task, timeout=LEASE_SECONDS + 10)


async def burn(url: str, dialect: str, jobs: int, concurrency: int) -> Burn:
    """Time one worker from start until the database shows every pre-inserted job completed."""
    counter = Counter(jobs)
    settings = settings_for(url)
    db = Database(settings.database_url)
    probe = Database(settings.database_url, pool_size=1)  # counts; not the worker's pool
    try:
        _warm(db, EXECUTOR_THREADS)
        _warm(probe, 1)
        worker = Worker(
            db, settings, burn_registry(counter), concurrency=concurrency, maintenance=False
        )
        started = time.perf_counter()
        task = asyncio.create_task(worker.run(), name="seojobs-worker")
        try:
            ended = await wait_until_done(
                counter, lambda: completed_count(probe), jobs, task, burn_timeout(jobs)
            )
        finally:
            await _stop(worker, task)
        return Burn("seojobs", dialect, concurrency, jobs, ended - started, counter.count)
    finally:
        db.dispose()
        probe.dispose()


def _enqueue_one(db: Database, project_id: int) -> int:
    new = NewJob(project_id=project_id, kind=WAKE_KIND, params={}, run_at=utcnow())
    with db.write() as conn:
        job_id, _created = job_sql.insert_job(db, conn, new, utcnow())
    return job_id


async def wake_latency(
    url: str, dialect: str, project_id: int, samples: int, *, same_db: bool, how: str
) -> Wake:
    """Enqueue one job at a time to an idle worker; time from before the insert to handler start.

    ``same_db``: enqueue through the worker's own Database object (the in-process wake hook
    fires) or through a second one (only LISTEN/NOTIFY or the poll can wake the worker).
    """
    stamps = Stamps()
    settings = settings_for(url)
    db = Database(settings.database_url)
    enqueue_db = db if same_db else Database(settings.database_url)
    result = Wake("seojobs", dialect, how)
    rng = random.Random(samples)
    try:
        _warm(db, EXECUTOR_THREADS)
        _warm(enqueue_db, 1)
        worker = Worker(
            db, settings, wake_registry(stamps), concurrency=WAKE_CONCURRENCY, maintenance=False
        )
        task = asyncio.create_task(worker.run(), name="seojobs-worker")
        try:
            await asyncio.to_thread(lambda: None)  # start the default executor's thread
            await asyncio.sleep(0.5)  # the worker has claimed nothing and is waiting
            for _ in range(samples):
                await asyncio.sleep(rng.uniform(0.02, 0.06))
                before = time.perf_counter()
                job_id = await asyncio.to_thread(_enqueue_one, enqueue_db, project_id)
                started = await stamps.wait_for(job_id, timeout=POLL_INTERVAL * 5)
                result.samples.append(started - before)
        finally:
            await _stop(worker, task)
        return result
    finally:
        db.dispose()
        if enqueue_db is not db:
            enqueue_db.dispose()
