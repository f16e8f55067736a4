"""The peer: Procrastinate on the same PostgreSQL server, driven through its public API."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.metadata
import logging
import random
import time

import procrastinate
import psycopg

from bench.lib.core import pg_conninfo, vacuum_postgres
from bench.lib.ours import Burn, Counter, Stamps, Wake, burn_timeout, wait_until_done

DEFER_CHUNK = 1000
POLL_INTERVAL = 1.0  # same fallback poll as our worker
WAKE_CONCURRENCY = 10

VERSION = importlib.metadata.version("procrastinate")

# Procrastinate logs every job at INFO.
logging.getLogger("procrastinate").setLevel(logging.WARNING)


def _app(dbname: str, pool_size: int | None) -> procrastinate.App:
    """``pool_size`` None keeps Procrastinate's default pool (psycopg_pool's: 4 connections)."""
    conninfo = pg_conninfo(dbname)
    if pool_size is None:
        connector = procrastinate.PsycopgConnector(conninfo=conninfo)
    else:
        connector = procrastinate.PsycopgConnector(
            conninfo=conninfo, min_size=pool_size, max_size=pool_size
        )
    return procrastinate.App(connector=connector)


async def prepare_template(dbname: str) -> None:
    """Apply Procrastinate's schema to an empty database."""
    app = _app(dbname, pool_size=1)
    async with app.open_async():
        await app.schema_manager.apply_schema_async()


def _succeeded(conn: psycopg.Connection[tuple[object, ...]]) -> int:
    row = conn.execute(
        "SELECT count(*) FROM procrastinate_jobs WHERE status = 'succeeded'"
    ).fetchone()
    return int(str(row[0])) if row else 0


async def burn(dbname: str, jobs: int, concurrency: int, pool_size: int | None) -> Burn:
    """Defer ``jobs`` no-ops in batches (not timed), then time a worker until all succeeded."""
    counter = Counter(jobs)
    app = _app(dbname, pool_size)

    @app.task(name="bench_noop")
    async def noop() -> None:
        counter.hit()

    async with app.open_async():
        for start in range(0, jobs, DEFER_CHUNK):
            await noop.batch_defer_async(*({} for _ in range(min(DEFER_CHUNK, jobs - start))))
        await asyncio.to_thread(vacuum_postgres, dbname, "procrastinate_jobs")
        with psycopg.connect(pg_conninfo(dbname), autocommit=True) as probe:
            started = time.perf_counter()
            task = asyncio.create_task(
                app.run_worker_async(
                    concurrency=concurrency, wait=False, install_signal_handlers=False
                ),
                name="procrastinate-worker",
            )
            try:
                ended = await wait_until_done(
                    counter, lambda: _succeeded(probe), jobs, task, burn_timeout(jobs)
                )
            finally:
                await _stop(task)
    return Burn(
        f"procrastinate {VERSION}", "postgresql", concurrency, jobs, ended - started, counter.count
    )


async def _stop(task: asyncio.Task[None]) -> None:
    """Cancelling ``run_worker_async`` is Procrastinate's graceful stop (wait=False ends alone)."""
    if not task.done():
        task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


async def wake_latency(dbname: str, samples: int, pool_size: int | None) -> Wake:
    stamps = Stamps()
    app = _app(dbname, pool_size)

    @app.task(name="bench_stamp", pass_context=True)
    async def stamp(context: procrastinate.JobContext) -> None:
        assert context.job.id is not None
        stamps.stamp(context.job.id)

    result = Wake(f"procrastinate {VERSION}", "postgresql", "LISTEN/NOTIFY")
    rng = random.Random(samples)
    async with app.open_async():
        task = asyncio.create_task(
            app.run_worker_async(
                concurrency=WAKE_CONCURRENCY,
                wait=True,
                install_signal_handlers=False,
                fetch_job_polling_interval=POLL_INTERVAL,
            ),
            name="procrastinate-worker",
        )
        try:
            await asyncio.sleep(0.5)
            for _ in range(samples):
                await asyncio.sleep(rng.uniform(0.02, 0.06))
                before = time.perf_counter()
                job_id = await stamp.defer_async()
                returned = time.perf_counter()
                started = await stamps.wait_for(job_id, timeout=POLL_INTERVAL * 5)
                result.add(before, returned, started)
        finally:
            await _stop(task)
    return result
