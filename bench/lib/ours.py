"""seojobs itself, as the benchmarks drive it: a migrated database with the user ``bench``,
jobs inserted in bulk, and one in-process Worker timed from its start until the database shows
the work done (``bench/queue.py``'s burn-downs and wake-ups, ``bench/check.py``'s index check);
and ``bench/api.py``'s table of N index-check jobs."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import ExitStack, asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import func, select, update

from bench.lib.jobs import (
    BURN_KIND,
    WAKE_KIND,
    Burn,
    Counter,
    Stamps,
    Wake,
    burn_registry,
    burn_timeout,
    wait_until_done,
    wake_registry,
)
from bench.lib.scratch import ScratchPostgres, ScratchSqlite, pg_url, sqlite_checkpoint, sqlite_url
from bench.lib.site import API_KEY
from seojobs.engine.worker import Worker, freeze_startup
from seojobs.kinds import load_registry
from seojobs.records import NewJob
from seojobs.services import Services
from seojobs.services.indexing import CHECK
from seojobs.settings import Settings
from seojobs.store import jobs as job_sql
from seojobs.store import migrate
from seojobs.store.coltypes import utcnow
from seojobs.store.db import Database
from seojobs.store.tables import jobs as jobs_table

LEASE_SECONDS = 30.0
POLL_INTERVAL = 1.0  # the default; the wake-up numbers show whether a wake-up beat the poll
WAKE_CONCURRENCY = 10  # the default worker concurrency
INSERT_CHUNK = 5000
EXECUTOR_THREADS = 4  # Worker's ThreadPoolExecutor size: connections opened before the clock
CHECK_POLL = 0.002  # seconds between reads of the index-check job once its task has ended


@dataclass(frozen=True)
class BenchUser:
    user_id: int
    project_id: int
    api_key: str  # a secret: handed to the load generator, never printed


def create_user(url: str) -> BenchUser:
    """Migrate an empty database and create the user ``bench``."""
    settings = Settings(database_url=url)
    db = Database(url)
    try:
        registry = load_registry(settings)
        migrate.upgrade(db, extra=registry.migration_dirs())  # with the kinds' own branches
        created = Services(db, settings, registry).accounts.create_user("bench")
        user = created.user
        return BenchUser(user.id, user.default_project_id, created.api_key)
    finally:
        db.dispose()


class Databases:
    """A migrated template per store with the user ``bench`` (SQLite file, PostgreSQL
    database ``<prefix>_tpl``), and a fresh copy of it for each run."""

    def __init__(self, stack: ExitStack, *, sqlite: bool, postgres: bool, prefix: str) -> None:
        self.prefix = prefix
        self.sqlite: tuple[ScratchSqlite, Path, int] | None = None
        self.postgres: tuple[ScratchPostgres, str, int] | None = None
        self.pg: ScratchPostgres | None = None
        if sqlite:
            scratch = stack.enter_context(ScratchSqlite())
            template = scratch.new_path("template")
            user_id = create_user(sqlite_url(template)).user_id
            sqlite_checkpoint(template)
            self.sqlite = (scratch, template, user_id)
        if postgres:
            self.pg = stack.enter_context(ScratchPostgres())
            name = self.pg.create(f"{prefix}_tpl")
            self.postgres = (self.pg, name, create_user(pg_url(name)).user_id)

    @contextmanager
    def fresh(self, dialect: str) -> Iterator[tuple[str, int]]:
        """(database URL, user id) of a new copy of a template ("sqlite", else PostgreSQL's),
        removed after the block."""
        if dialect == "sqlite":
            assert self.sqlite is not None
            scratch, template, user_id = self.sqlite
            path = scratch.copy(template, "run")
            try:
                yield sqlite_url(path), user_id
            finally:
                scratch.remove(path)
        else:
            assert self.postgres is not None
            pg, template_name, user_id = self.postgres
            name = pg.create(self.prefix, template=template_name)
            try:
                yield pg_url(name), user_id
            finally:
                pg.drop(name)


def insert_jobs(
    url: str,
    project_id: int,
    count: int,
    kind: str = BURN_KIND,
    params: dict[str, Any] | None = None,
    items: Sequence[str] = (),
) -> None:
    """Pre-insert ``count`` pending, due jobs with ``insert_many_bare`` (no item rows)."""
    db = Database(url)
    try:
        now = utcnow()
        for start in range(0, count, INSERT_CHUNK):
            news = [
                NewJob(
                    project_id=project_id,
                    kind=kind,
                    params=params or {},
                    run_at=now,
                    items=list(items),
                )
                for _ in range(min(INSERT_CHUNK, count - start))
            ]
            with db.write() as conn:
                job_sql.insert_many_bare(db, conn, news, now)
    finally:
        db.dispose()


def warm(db: Database, connections: int) -> None:
    """Open pooled connections now so the timed run does not pay for connecting."""
    opened = [db.engine.connect() for _ in range(connections)]
    for conn in opened:
        conn.close()


@asynccontextmanager
async def running(worker: Worker) -> AsyncIterator[asyncio.Task[None]]:
    """``worker.run()`` as a task for the length of the block, then a graceful stop. Callers
    call ``freeze_startup()`` first, as `seojobs worker` does, before their clock starts (it
    costs a full collection)."""
    task = asyncio.create_task(worker.run(), name="seojobs-worker")
    try:
        yield task
    finally:
        worker.stop()
        await asyncio.wait_for(task, timeout=LEASE_SECONDS + 10)


# -- bench/queue.py ---------------------------------------------------------------------------


def queue_settings(url: str) -> Settings:
    return Settings(database_url=url, lease_seconds=LEASE_SECONDS, poll_interval=POLL_INTERVAL)


def completed_count(db: Database) -> int:
    with db.read() as conn:
        return job_sql.count_by_state(conn).get("completed", 0)


async def burn(url: str, dialect: str, jobs: int, concurrency: int) -> Burn:
    """Time one worker from start until the database shows every pre-inserted job completed."""
    counter = Counter(jobs)
    settings = queue_settings(url)
    db = Database(settings.database_url)
    probe = Database(settings.database_url, pool_size=1)  # counts; not the worker's pool
    try:
        warm(db, EXECUTOR_THREADS)
        warm(probe, 1)
        worker = Worker(
            db, settings, burn_registry(counter), concurrency=concurrency, maintenance=False
        )
        freeze_startup()
        started = time.perf_counter()
        async with running(worker) as task:
            ended = await wait_until_done(
                counter, lambda: completed_count(probe), jobs, task, burn_timeout(jobs)
            )
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
    settings = queue_settings(url)
    db = Database(settings.database_url)
    enqueue_db = db if same_db else Database(settings.database_url)
    result = Wake("seojobs", dialect, how)
    rng = random.Random(samples)
    try:
        warm(db, EXECUTOR_THREADS)
        warm(enqueue_db, 1)
        worker = Worker(
            db, settings, wake_registry(stamps), concurrency=WAKE_CONCURRENCY, maintenance=False
        )
        freeze_startup()
        async with running(worker):
            await asyncio.to_thread(lambda: None)  # start the default executor's thread
            await asyncio.sleep(0.5)  # the worker has claimed nothing and is waiting
            for _ in range(samples):
                await asyncio.sleep(rng.uniform(0.02, 0.06))
                before = time.perf_counter()
                job_id = await asyncio.to_thread(_enqueue_one, enqueue_db, project_id)
                returned = time.perf_counter()
                started = await stamps.wait_for(job_id, timeout=POLL_INTERVAL * 5)
                result.add(before, returned, started)
        return result
    finally:
        db.dispose()
        if enqueue_db is not db:
            enqueue_db.dispose()


# -- bench/check.py ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Scenario:
    """One of our index-check runs: dialect, job concurrency, the per-host politeness limit."""

    dialect: str
    concurrency: int
    host_concurrency: int


@dataclass(frozen=True)
class CheckRun:
    seconds: float
    cpu: float  # this process's CPU seconds over the same span (job creation, checks excluded)
    indexed: int
    not_indexed: int
    fetched_ok: int
    robots_fetches: int  # robots.txt verdicts that came from a fetch of their own (one per origin)


def check_settings(url: str, serper_url: str, scenario: Scenario) -> Settings:
    return Settings(
        database_url=url,
        lease_seconds=LEASE_SECONDS,
        poll_interval=POLL_INTERVAL,
        allow_private_networks=True,  # the site is on loopback
        serper_key=API_KEY,
        serper_base_url=serper_url,
        check_providers={"google": ["serper"]},
        index_check_concurrency=scenario.concurrency,
        fetch_host_concurrency=scenario.host_concurrency,
        quota_check_daily=10_000_000,
    )


def _create_check(settings: Settings, user_id: int, urls: list[str]) -> int:
    db = Database(settings.database_url)
    try:
        services = Services(db, settings, load_registry(settings))
        user = services.user(user_id)
        job, created = services.jobs.create(user, CHECK, {"urls": urls, "engine": "google"})
        assert created and job.state == "pending", job
        return job.id
    finally:
        db.dispose()


def _job_state(db: Database, job_id: int) -> str:
    with db.read() as conn:
        job = job_sql.get(conn, job_id)
    assert job is not None
    return job.state


async def _wait_completed(
    worker: Worker, task: asyncio.Task[None], probe: Database, job_id: int, timeout: float
) -> float:
    """``perf_counter()`` when ``probe`` reads the job completed. To keep the probe off the hot
    path it waits in memory until the job's task has ended, then reads every 2 ms."""
    deadline = time.perf_counter() + timeout
    while (worker.claimed_total == 0 or worker.running) and not task.done():
        if time.perf_counter() > deadline:
            raise TimeoutError(f"the index check did not finish within {timeout:.0f} s")
        await asyncio.sleep(0.01)
    while True:
        state = await asyncio.to_thread(_job_state, probe, job_id)
        if state == "completed":
            return time.perf_counter()
        if state in ("failed", "cancelled") or task.done():
            if task.done() and not task.cancelled() and task.exception() is not None:
                raise RuntimeError("the worker stopped with an error") from task.exception()
            raise RuntimeError(f"the index check ended {state!r}, not completed")
        if time.perf_counter() > deadline:
            raise TimeoutError(f"the index check did not finish within {timeout:.0f} s")
        await asyncio.sleep(CHECK_POLL)


def _verify(db: Database, job_id: int, total: int) -> tuple[int, int, int, int]:
    """(indexed, not_indexed, pages fetched with 200, robots.txt fetches) of a finished job."""
    with db.read() as conn:
        job = job_sql.get(conn, job_id)
        assert job is not None
        if job.items_done != total or job.items_failed:
            raise RuntimeError(
                f"job {job_id}: {job.items_done} of {total} items done, {job.items_failed} failed"
            )
        fetched, robots_urls, after = 0, set(), -1
        while page := job_sql.items_page(conn, job_id, after_seq=after, limit=1000):
            for item in page:
                diagnostics = (item.result or {}).get("diagnostics", {})
                fetched += diagnostics.get("http_status") == 200
                robots_urls.add((diagnostics.get("robots_txt") or {}).get("robots_url"))
            after = page[-1].seq
    counters = job.counters
    return counters.get("indexed", 0), counters.get("not_indexed", 0), fetched, len(robots_urls)


async def check(
    url: str, serper_url: str, user_id: int, urls: list[str], scenario: Scenario
) -> CheckRun:
    """Create the index_check job through ``services.jobs.create`` (untimed), then time one Worker
    from ``run()`` until a second ``Database`` reads the job completed; check the result."""
    settings = check_settings(url, serper_url, scenario)
    job_id = await asyncio.to_thread(_create_check, settings, user_id, urls)
    db = Database(settings.database_url)
    probe = Database(settings.database_url, pool_size=1)
    try:
        warm(db, EXECUTOR_THREADS)
        warm(probe, 1)
        worker = Worker(db, settings, load_registry(settings), maintenance=False)
        freeze_startup()
        started, cpu = time.perf_counter(), time.process_time()
        async with running(worker) as task:
            ended = await _wait_completed(worker, task, probe, job_id, 60 + len(urls) / 20)
            cpu = time.process_time() - cpu
        counts = await asyncio.to_thread(_verify, probe, job_id, len(urls))
        return CheckRun(ended - started, cpu, *counts)
    finally:
        db.dispose()
        probe.dispose()


# -- bench/api.py -----------------------------------------------------------------------------

SEED_URL = "https://example.com/"
SEED_PARAMS = {"urls": [SEED_URL], "engine": "google", "duplicates_removed": 0}


@dataclass(frozen=True)
class Seeded:
    api_key: str  # a secret: passed to the load generator, never printed
    first_id: int
    last_id: int
    seconds: float

    @property
    def count(self) -> int:
        return self.last_id - self.first_id + 1


def seed(url: str, count: int) -> Seeded:
    """The user ``bench`` and ``count`` index-check jobs with consecutive ids, every other one
    completed (one URL checked), so status bodies mix open jobs (with ``Retry-After``) and
    finished ones. ``items_total`` is 1, but there are no item rows: status GETs never read
    them."""
    started = time.perf_counter()
    user = create_user(url)
    insert_jobs(url, user.project_id, count, CHECK, SEED_PARAMS, [SEED_URL])
    db = Database(url)
    try:
        now = utcnow()
        with db.write() as conn:
            conn.execute(
                update(jobs_table)
                .where(jobs_table.c.id % 2 == 0)
                .values(
                    state="completed",
                    items_done=1,
                    counters={"indexed": 1},
                    started_at=now,
                    completed_at=now,
                    updated_at=now,
                )
            )
            first, last, n = conn.execute(
                select(func.min(jobs_table.c.id), func.max(jobs_table.c.id), func.count()).where(
                    jobs_table.c.project_id == user.project_id
                )
            ).one()
    finally:
        db.dispose()
    if n != count or last - first + 1 != count:
        raise RuntimeError(
            f"expected {count} jobs with consecutive ids, got {n} in {first}..{last}"
        )
    return Seeded(user.api_key, int(first), int(last), time.perf_counter() - started)
