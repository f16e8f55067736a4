"""What a kind declares about how it runs: its queue, its per-worker concurrency, its
timeout."""

from __future__ import annotations

import asyncio

from seojobs.engine.registry import Registry
from seojobs.engine.worker import Worker
from seojobs.services import Services
from seojobs.settings import Settings
from tests.waiting import await_until


async def _final(services: Services, user: object, job_id: int) -> bool:
    job = await asyncio.to_thread(services.jobs.get, user, job_id)  # type: ignore[arg-type]
    return job.is_final


async def test_a_capped_kind_runs_one_job_at_a_time_beside_uncapped_ones(
    services: Services, settings: Settings, registry: Registry
) -> None:
    user = services.accounts.create_user("alice").user
    capped = [services.jobs.create(user, "test_capped", {"seconds": 0.3})[0] for _ in range(3)]
    free = [services.jobs.create(user, "test_sleep", {"seconds": 0.3})[0] for _ in range(3)]
    worker = Worker(services.db, settings, registry, concurrency=10)
    most: dict[str, int] = {"test_capped": 0, "test_sleep": 0}

    async def watch() -> None:
        while True:
            kinds = [job.kind for _t, _c, job in worker.running.values()]
            for kind in most:
                most[kind] = max(most[kind], kinds.count(kind))
            await asyncio.sleep(0.01)

    running = asyncio.create_task(worker.run())
    watcher = asyncio.create_task(watch())
    try:
        for job in capped + free:
            await await_until(lambda job=job: _final(services, user, job.id), timeout=60)
    finally:
        watcher.cancel()
        worker.stop()
        await running
    assert all(services.jobs.get(user, j.id).state == "completed" for j in capped + free)
    assert most["test_capped"] == 1  # never two at once
    assert most["test_sleep"] >= 2  # the cap is the kind's, not the worker's


async def test_a_worker_serves_only_its_queues(
    services: Services, settings: Settings, registry: Registry
) -> None:
    user = services.accounts.create_user("alice").user
    mine = services.jobs.create(user, "test_capped", {"seconds": 0})[0]
    other = services.jobs.create(user, "test_noop", {})[0]
    worker = Worker(services.db, settings, registry, queues=["capped"])
    running = asyncio.create_task(worker.run())
    try:
        await await_until(lambda: _final(services, user, mine.id), timeout=60)
    finally:
        worker.stop()
        await running
    assert services.jobs.get(user, other.id).state == "pending"
    assert worker.claimed_total == 1


async def test_a_job_past_its_kinds_timeout_fails_with_code_timeout(
    services: Services, settings: Settings, registry: Registry
) -> None:
    user = services.accounts.create_user("alice").user
    job = services.jobs.create(user, "test_timed", {"seconds": 30})[0]
    worker = Worker(services.db, settings, registry)
    running = asyncio.create_task(worker.run())
    try:
        await await_until(lambda: _final(services, user, job.id), timeout=60)
    finally:
        worker.stop()
        await running
    done = services.jobs.get(user, job.id)
    assert (done.state, done.error_code) == ("failed", "timeout")
