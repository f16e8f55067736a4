"""Our real path for ``bench/check.py``: an ``index_check`` job run by an in-process Worker.

The job is created through ``seojobs.services.indexing.create`` before the clock starts. The
clock runs from ``Worker.run()`` being started until a separate ``Database`` handle reads the
job as ``completed``. To keep that probe off the hot path it waits in memory until the
worker's job task has ended (no database query) and only then reads the row every 2 ms. The
result is checked afterwards: every item done, the counters equal to the fake index, every
page fetched with status 200.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from bench.check_site import API_KEY
from seojobs.engine.worker import Worker
from seojobs.kinds import load_registry
from seojobs.services import Services
from seojobs.settings import Settings
from seojobs.store import jobs as job_sql
from seojobs.store import migrate
from seojobs.store.db import Database

EXECUTOR_THREADS = 4  # Worker's ThreadPoolExecutor size: connections opened before the clock
LEASE_SECONDS = 30.0
FINE_POLL = 0.002


@dataclass(frozen=True)
class Scenario:
    """One of our runs: dialect, job concurrency, and the per-host politeness limit."""

    dialect: str
    concurrency: int
    host_concurrency: int
    url: str = ""  # the database URL, filled in per run


@dataclass(frozen=True)
class OursRun:
    seconds: float
    indexed: int
    not_indexed: int
    fetched_ok: int
    robots_fetches: int  # robots.txt verdicts that came from a fetch of their own (one per origin)


def settings_for(url: str, serper_url: str, concurrency: int, host_concurrency: int) -> Settings:
    return Settings(
        database_url=url,
        lease_seconds=LEASE_SECONDS,
        poll_interval=1.0,
        allow_private_networks=True,  # the site is on loopback
        serper_key=API_KEY,
        serper_base_url=serper_url,
        check_providers={"google": ["serper"]},
        index_check_concurrency=concurrency,
        fetch_host_concurrency=host_concurrency,
        quota_check_daily=10_000_000,
    )


def prepare_template(url: str) -> int:
    """Migrate an empty database and create the bench user; returns the user's id."""
    db = Database(url)
    try:
        migrate.upgrade(db)
        settings = Settings(database_url=url)
        # create_user also returns an API key; it is a secret and is never printed.
        return Services(db, settings, load_registry(settings)).create_user("bench").user.id
    finally:
        db.dispose()


def create_job(settings: Settings, user_id: int, urls: list[str]) -> int:
    db = Database(settings.database_url)
    try:
        services = Services(db, settings, load_registry(settings))
        user = services.user(user_id)
        job, created = services.create_job(user, "index_check", {"urls": urls, "engine": "google"})
        assert created and job.state == "pending", job
        return job.id
    finally:
        db.dispose()


def _warm(db: Database, connections: int) -> None:
    """Open pooled connections now so the timed run does not pay for connecting."""
    opened = [db.engine.connect() for _ in range(connections)]
    for conn in opened:
        conn.close()


def _job_state(db: Database, job_id: int) -> str:
    with db.read() as conn:
        job = job_sql.get(conn, job_id)
    assert job is not None
    return job.state


async def _wait_completed(
    worker: Worker, task: asyncio.Task[None], probe: Database, job_id: int, timeout: float
) -> float:
    deadline = time.perf_counter() + timeout
    while worker.claimed_total == 0 or worker.running:  # in memory: the job is still running
        if task.done():
            break
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
        await asyncio.sleep(FINE_POLL)


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


async def run(
    url: str, serper_url: str, user_id: int, urls: list[str], scenario: Scenario
) -> OursRun:
    """Create the job (untimed), then time one Worker until the job is completed in the DB."""
    settings = settings_for(url, serper_url, scenario.concurrency, scenario.host_concurrency)
    job_id = await asyncio.to_thread(create_job, settings, user_id, urls)
    db = Database(settings.database_url)
    probe = Database(settings.database_url, pool_size=1)
    try:
        _warm(db, EXECUTOR_THREADS)
        _warm(probe, 1)
        worker = Worker(db, settings, load_registry(settings), maintenance=False)
        started = time.perf_counter()
        task = asyncio.create_task(worker.run(), name="seojobs-worker")
        try:
            ended = await _wait_completed(worker, task, probe, job_id, 60 + len(urls) / 20)
        finally:
            worker.stop()
            await asyncio.wait_for(task, timeout=LEASE_SECONDS + 10)
        indexed, not_indexed, fetched, robots = await asyncio.to_thread(
            _verify, probe, job_id, len(urls)
        )
        return OursRun(ended - started, indexed, not_indexed, fetched, robots)
    finally:
        db.dispose()
        probe.dispose()
