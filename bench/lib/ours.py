"""seojobs itself, as the benchmarks drive it: a migrated database with the user ``bench``,
jobs inserted in bulk, and one in-process Worker timed from its start until the database shows
the work done (``bench/queue.py``'s burn-downs and wake-ups, ``bench/check.py``'s index check);
and ``bench/api.py``'s table of N index-check jobs."""

from __future__ import annotations

import asyncio
import itertools
import random
import shutil
import statistics
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from contextlib import ExitStack, asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import BaseModel
from sqlalchemy import Connection, func, select, update

from bench.lib import core
from bench.lib.core import ScratchPostgres, WorkerProcess, pg_url, seojobs_env, sqlite_exec
from seojobs.engine import JobContext, Kind, Registry
from seojobs.engine.worker import Worker, freeze_startup
from seojobs.kinds import load_registry
from seojobs.records import ItemRecord, JobRecord, NewJob
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


# -- bench/queue.py's job kinds and records -------------------------------------------------

BURN_KIND = "bench_noop"
WAKE_KIND = "bench_stamp"


class NoParams(BaseModel):
    pass


class Counter:
    """Counts handler runs; ``reached`` is set once ``target`` runs have happened."""

    def __init__(self, target: int) -> None:
        self.target = target
        self.count = 0
        self.reached = asyncio.Event()

    def hit(self, _job_id: int = 0) -> None:
        self.count += 1
        if self.count >= self.target:
            self.reached.set()


class Stamps:
    """``perf_counter()`` at handler start, by job id; ``arrived`` is set on every stamp."""

    def __init__(self) -> None:
        self.started: dict[int, float] = {}
        self.arrived = asyncio.Event()

    def stamp(self, job_id: int) -> None:
        self.started[job_id] = time.perf_counter()
        self.arrived.set()

    async def wait_for(self, job_id: int, timeout: float) -> float:
        try:
            async with asyncio.timeout(timeout):
                while job_id not in self.started:  # (stamps come from this event loop)
                    self.arrived.clear()
                    await self.arrived.wait()
        except TimeoutError:
            raise TimeoutError(f"job {job_id} did not start within {timeout:.0f} s") from None
        return self.started[job_id]


def registry(kind: str, on_run: Callable[[int], object]) -> Registry:
    """One kind of job, ``kind``, whose handler calls ``on_run(its job id)`` and nothing else."""

    async def handler(ctx: JobContext[NoParams]) -> None:
        on_run(ctx.job_id)

    found = Registry()
    found.add(Kind(kind, NoParams, handler, description="benchmark"))
    return found


FINE_POLL = 0.005  # seconds between database counts once every handler has run
COARSE_POLL = 1.0  # seconds between database counts before that (a safety net only)


@dataclass(frozen=True)
class Burn:
    """One timed burn-down."""

    system: str
    dialect: str
    concurrency: int
    jobs: int
    seconds: float
    handler_runs: int | None = None  # None where the system has no handler (bare loop)

    @property
    def rate(self) -> float:
        return self.jobs / self.seconds if self.seconds > 0 else float("inf")


@dataclass
class Wake:
    """Enqueue-to-start latencies on an idle worker, in seconds, and how long each enqueue call
    took (from before it to its return; the rest is the worker's side)."""

    system: str
    dialect: str
    how: str
    samples: list[float] = field(default_factory=list)
    enqueue_calls: list[float] = field(default_factory=list)

    def add(self, before: float, returned: float, started: float) -> None:
        self.samples.append(started - before)
        self.enqueue_calls.append(returned - before)

    def extend(self, other: Wake) -> None:
        self.samples += other.samples
        self.enqueue_calls += other.enqueue_calls

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def p90(self) -> float:
        if len(self.samples) < 2:
            return self.samples[0]
        return statistics.quantiles(self.samples, n=10, method="inclusive")[-1]

    @property
    def enqueue_median(self) -> float:
        return statistics.median(self.enqueue_calls)


def burn_timeout(jobs: int) -> float:
    """Give up on a burn-down that runs slower than 100 jobs/s (plus a minute of slack)."""
    return 60.0 + jobs / 100


async def wait_until_done(
    counter: Counter,
    count_done: Callable[[], int],
    target: int,
    guard: asyncio.Task[None],
    timeout: float,
) -> float:
    """Return ``perf_counter()`` at the first database count that shows ``target`` jobs done.

    Counts cheaply: every second until the handlers have run ``target`` times, then every
    5 ms until the last completions have landed. ``guard`` is the worker's task: if it ends
    first, one last count decides. Raises ``TimeoutError`` past ``timeout`` seconds.
    """
    deadline = time.perf_counter() + timeout
    while True:
        worker_ended = guard.done()
        if worker_ended and not guard.cancelled() and guard.exception() is not None:
            raise RuntimeError("the worker stopped with an error") from guard.exception()
        done = await asyncio.to_thread(count_done)
        if done >= target:
            return time.perf_counter()
        if worker_ended:
            raise RuntimeError(f"the worker stopped with {done} of {target} jobs done")
        if time.perf_counter() > deadline:
            raise TimeoutError(f"only {done} of {target} jobs done after {timeout:.0f} s")
        if counter.reached.is_set():
            await asyncio.sleep(FINE_POLL)
        else:
            waiters = [asyncio.ensure_future(counter.reached.wait()), guard]
            await asyncio.wait(waiters, timeout=COARSE_POLL, return_when=asyncio.FIRST_COMPLETED)
            waiters[0].cancel()


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
        kinds = load_registry(settings)
        migrate.upgrade(db, extra=kinds.migration_dirs())  # with the kinds' own branches
        created = Services(db, settings, kinds).accounts.create_user("bench")
        user = created.user
        return BenchUser(user.id, user.default_project_id, created.api_key)
    finally:
        db.dispose()


class Scratch:
    """The scratch databases of one run, all removed at its end: SQLite files in a temp dir
    (``root``, also for logs) and, with ``postgres``, PostgreSQL databases. ``new`` gives an
    empty database; ``fresh`` a copy of the store's migrated template with the user ``bench``
    (a SQLite file, or the PostgreSQL database ``<prefix>_tpl``, made on first use)."""

    def __init__(self, stack: ExitStack, *, postgres: bool, prefix: str = "seojobs_bench") -> None:
        tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="seojobs_bench_"))
        self.root = Path(tmp)
        self.pg = stack.enter_context(ScratchPostgres()) if postgres else None
        self.prefix = prefix
        self._files = itertools.count(1)
        self._templates: dict[str, tuple[str, BenchUser]] = {}

    def new(self, store: str, prefix: str | None = None) -> str:
        """The URL of a new, empty database: a SQLite file ("sqlite"), else PostgreSQL's."""
        if store == "sqlite":
            return f"sqlite:///{self.root}/{prefix or self.prefix}_{next(self._files)}.db"
        assert self.pg is not None, "PostgreSQL was not asked for"
        return pg_url(self.pg.create(prefix or self.prefix))

    def user(self, store: str) -> BenchUser:
        """The user ``bench`` of the store's template (made now if it is not yet)."""
        if store not in self._templates:
            url = self.new(store, "template" if store == "sqlite" else f"{self.prefix}_tpl")
            user = create_user(url)
            if store == "sqlite":  # the WAL folded in: the file alone is a complete copy
                sqlite_exec(url, "PRAGMA wal_checkpoint(TRUNCATE)", "PRAGMA journal_mode=DELETE")
            self._templates[store] = url, user
        return self._templates[store][1]

    @contextmanager
    def fresh(self, store: str) -> Iterator[tuple[str, int]]:
        """(database URL, user id) of a new copy of the store's template, removed after the
        block."""
        user = self.user(store)
        template = self._templates[store][0]
        if store == "sqlite":
            url = self.new(store, "run")
            shutil.copyfile(template.removeprefix("sqlite:///"), url.removeprefix("sqlite:///"))
            try:
                yield url, user.user_id
            finally:
                for suffix in ("", "-wal", "-shm"):
                    Path(url.removeprefix("sqlite:///") + suffix).unlink(missing_ok=True)
        else:
            assert self.pg is not None
            name = self.pg.create(self.prefix, template=template.rsplit("/", 1)[1])
            try:
                yield pg_url(name), user.user_id
            finally:
                self.pg.drop(name)


def insert_jobs(
    at: str | Database,
    project_id: int,
    count: int,
    kind: str = BURN_KIND,
    params: dict[str, Any] | None = None,
    items: Sequence[str] = (),
) -> None:
    """Insert ``count`` pending, due jobs with ``insert_many_bare`` (no item rows) in the
    database at the URL ``at`` (or through the open Database ``at``)."""
    db = Database(at) if isinstance(at, str) else at
    try:
        now = utcnow()
        for start in range(0, count, INSERT_CHUNK):
            news = [
                NewJob(
                    project_id=project_id,
                    kind=kind,
                    params=params or {},
                    run_at=now,
                    items=[*items],
                )
                for _ in range(min(INSERT_CHUNK, count - start))
            ]
            with db.write() as conn:
                job_sql.insert_many_bare(db, conn, news, now)
    finally:
        if db is not at:
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


class Timed(NamedTuple):
    worker: Worker
    task: asyncio.Task[None]
    db: Database
    probe: Database


@asynccontextmanager
async def timed_worker(
    settings: Settings, registry: Registry | None = None, **options: Any
) -> AsyncIterator[Timed]:
    """(worker, its task, its Database, a probe) for the length of the block: one in-process
    Worker (maintenance off) on ``settings``' database, and a second Database of one
    connection (the probe, which reads the work done off the worker's pool). Both pools are
    opened and ``freeze_startup()`` called, as `seojobs worker` does, before the block: the
    caller starts its clock first thing in it."""
    db = Database(settings.database_url)
    probe = Database(settings.database_url, pool_size=1)
    try:
        warm(db, EXECUTOR_THREADS)
        warm(probe, 1)
        kinds = registry or load_registry(settings)
        worker = Worker(db, settings, kinds, maintenance=False, **options)
        freeze_startup()
        async with running(worker) as task:
            yield Timed(worker, task, db, probe)
    finally:
        db.dispose()
        probe.dispose()


def items(conn: Connection, job_id: int) -> Iterator[ItemRecord]:
    """Every item of a job, in order."""
    after = -1
    while batch := job_sql.items_page(conn, job_id, after_seq=after, limit=1000):
        yield from batch
        after = batch[-1].seq


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
    async with timed_worker(
        settings, registry(BURN_KIND, counter.hit), concurrency=concurrency
    ) as run:
        started = time.perf_counter()
        count = partial(completed_count, run.probe)
        ended = await wait_until_done(counter, count, jobs, run.task, burn_timeout(jobs))
    return Burn("seojobs", dialect, concurrency, jobs, ended - started, counter.count)


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
    fires) or through a second one, the probe (only LISTEN/NOTIFY or the poll can wake the
    worker).
    """
    stamps = Stamps()
    kinds = registry(WAKE_KIND, stamps.stamp)
    async with timed_worker(queue_settings(url), kinds, concurrency=WAKE_CONCURRENCY) as run:
        enqueue_db = run.db if same_db else run.probe
        await asyncio.to_thread(lambda: None)  # start the default executor's thread
        enqueue = partial(asyncio.to_thread, _enqueue_one, enqueue_db, project_id)
        return await sample_wakes(Wake("seojobs", dialect, how), stamps, samples, enqueue)


async def sample_wakes(
    result: Wake, stamps: Stamps, samples: int, enqueue: Callable[[], Awaitable[int]]
) -> Wake:
    """Once the worker is idle, ``samples`` enqueues of one job 20-60 ms apart, each timed
    from before ``enqueue()`` to its handler's start (by its id)."""
    rng = random.Random(samples)
    await asyncio.sleep(0.5)  # the worker has claimed nothing and is waiting
    for _ in range(samples):
        await asyncio.sleep(rng.uniform(0.02, 0.06))
        before = time.perf_counter()
        job_id = await enqueue()
        returned = time.perf_counter()
        result.add(before, returned, await stamps.wait_for(job_id, timeout=POLL_INTERVAL * 5))
    return result


# -- bench/api.py -----------------------------------------------------------------------------

SEED_URL = "https://example.com/"
SEED_PARAMS = {"urls": [SEED_URL], "engine": "google", "duplicates_removed": 0}


@dataclass(frozen=True)
class Seeded:
    api_key: str  # a secret: passed to the load generator, never printed
    project_id: int
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
    seconds = time.perf_counter() - started
    return Seeded(user.api_key, user.project_id, int(first), int(last), seconds)


# -- bench/audit.py, bench/dashboard.py and bench/vitals.py: a ``seojobs worker`` process ---

AUDIT_POLL = 0.05  # seconds between reads of the job's state
# A 100,000-page audit is charged past the default daily page quota (50,000).
QUOTAS = {"audit_pages_daily": 10_000_000, "audit_pages_monthly": 10_000_000}
SAMPLE = 0.1  # seconds between samples of the worker's process tree (render: Chromium's)


@dataclass(frozen=True)
class OursRun:
    seconds: float
    pages: int  # pages fetched and stored with status 200
    blocked: int  # links robots.txt disallows: stored as blocked, never fetched
    cpu: float
    peak_rss: int
    issues: int  # findings in the summary (per page and site-wide)


def create_job(
    url: str, user_id: int, kind: str, params: dict[str, Any], settings: Settings | None = None
) -> int:
    """A job created through ``services.jobs.create``, as the API creates it; its id."""
    settings = settings or Settings(
        database_url=url, allow_private_networks=True, quota_limits=QUOTAS
    )
    db = Database(url)
    try:
        services = Services(db, settings, load_registry(settings))
        job, created = services.jobs.create(services.user(user_id), kind, params)
        assert created and job.state == "pending", job
        return job.id
    finally:
        db.dispose()


def wait_finished(probe: Database, job_id: int, worker: WorkerProcess, timeout: float) -> JobRecord:
    """The job once it is ``completed`` or ``failed`` (raises if the worker exits first)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with probe.read() as conn:
            job = job_sql.get(conn, job_id)
        assert job is not None
        if job.state in ("completed", "failed"):
            return job
        if worker.proc.poll() is not None:
            raise RuntimeError(f"the worker exited ({worker.proc.returncode}); see {worker.log}")
        time.sleep(AUDIT_POLL)
    raise TimeoutError(f"job {job_id} did not finish within {timeout:.0f} s")


def _check(probe: Database, job_id: int) -> tuple[float, int, int, int]:
    """(seconds from claim to completion, pages stored with 200, blocked, issues), after
    checking that every page is stored once and the summary counts them."""
    urls: list[str] = []
    pages = blocked = 0
    with probe.read() as conn:
        job = job_sql.get(conn, job_id)
        assert job is not None and job.started_at and job.completed_at and job.result
        for item in items(conn, job_id):
            record = item.result or {}
            urls.append(record.get("url", ""))
            pages += record.get("status") == 200
            blocked += bool(record.get("blocked_by_robots"))
    if len(set(urls)) != len(urls) or job.items_done != len(urls):
        raise RuntimeError(f"{len(urls)} items, {len(set(urls))} distinct, {job.items_done} done")
    summary = job.result
    if summary["pages_crawled"] != pages or summary["pages_blocked_by_robots"] != blocked:
        raise RuntimeError(f"the summary says {summary['pages_crawled']} pages, stored {pages}")
    seconds = (job.completed_at - job.started_at).total_seconds()
    return seconds, pages, blocked, int(summary["issues"])


def audit(
    url: str,
    user_id: int,
    start_url: str,
    concurrency: int,
    max_pages: int,
    log: Path,
    cpu: int | None,
    on_start: Callable[[int], None] | None = None,
    render: str = "raw",
) -> OursRun:
    """One audit by a fresh worker process; ``on_start`` gets its pid once it is idle (to
    attach a profiler). Peak RSS: the worker's high-water mark (VmHWM), or with ``render``
    "js" the largest sum sampled over it and its renderers (Node and Chromium, each by its
    PSS: Chromium's processes share their libraries), whichever is larger."""
    env = seojobs_env(
        database_url=url,
        allow_private_networks="true",  # the site is on loopback
        site_audit_concurrency=concurrency,
        fetch_host_concurrency=concurrency,
        fetch_host_delay=0,
        log_format="plain",
        **{f"quota_{key}": limit for key, limit in QUOTAS.items()},
    )
    worker = WorkerProcess(env, log, cpu)
    probe = Database(url, pool_size=1)
    try:
        worker.wait_idle()
        if on_start is not None:
            on_start(worker.proc.pid)
        cpu_before = core.proc_cpu(worker.proc.pid)
        tree = core.TreeSampler(worker.proc.pid, interval=SAMPLE, pss=render != "raw")
        params = {"start_url": start_url, "max_pages": max_pages, "render": render}
        job_id = create_job(url, user_id, "site_audit", params)
        try:
            job = wait_finished(
                probe, job_id, worker, 60 + max_pages / (5 if render == "raw" else 1)
            )
        finally:
            sampled = tree.stop()
        if job.state == "failed":
            raise RuntimeError(f"the audit failed: {job.error_code}: {job.error_message}")
        used = core.proc_cpu(worker.proc.pid) - cpu_before
        peak = sum(core.memory(p, "VmHWM") for p in core.descendants(worker.proc.pid))
        seconds, pages, blocked, issues = _check(probe, job_id)
        return OursRun(seconds, pages, blocked, used, max(peak, sampled), issues)
    finally:
        worker.stop()
        probe.dispose()


def job_state(db: Database, job_id: int) -> str:
    with db.read() as conn:
        job = job_sql.get(conn, job_id)
    assert job is not None
    return job.state


async def wait_completed(
    worker: Worker,
    task: asyncio.Task[None],
    probe: Database,
    job_id: int,
    *,
    what: str,
    timeout: float,
    poll: float = 0.002,
) -> float:
    """``perf_counter()`` when ``probe`` reads the job completed. To keep the probe off the hot
    path it waits in memory until the job's task has ended, then reads every ``poll`` s."""
    deadline = time.perf_counter() + timeout
    while (worker.claimed_total == 0 or worker.running) and not task.done():
        if time.perf_counter() > deadline:
            raise TimeoutError(f"the {what} did not finish within {timeout:.0f} s")
        await asyncio.sleep(0.01)
    while True:
        state = await asyncio.to_thread(job_state, probe, job_id)
        if state == "completed":
            return time.perf_counter()
        if state in ("failed", "cancelled") or task.done():
            if task.done() and not task.cancelled() and task.exception() is not None:
                raise RuntimeError("the worker stopped with an error") from task.exception()
            raise RuntimeError(f"the {what} ended {state!r}, not completed")
        if time.perf_counter() > deadline:
            raise TimeoutError(f"the {what} did not finish within {timeout:.0f} s")
        await asyncio.sleep(poll)
