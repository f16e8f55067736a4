"""A live worker keeps its jobs' leases whatever its event loop and its database threads are
busy with, and a worker whose loop no longer turns still loses them.

Under load the heartbeat came late and the worker's own job was rescued, then claimed again by
the same worker, the items in flight running twice (issue: test_kind_items' and
test_site_audit's SIGKILL tests, test_index_submit_crash). Measured: a fresh worker's event
loop held for 0.7-2.0 s by the import at a kind's first fetch (0.15 s of CPU at load 10), the
heartbeat waiting on that loop; the thread pool every database call goes through is the other
place it waited. Each test runs the job on a worker in a thread with an event loop of its own,
without maintenance, while another worker (one that claims nothing) does the maintenance and
rescues whatever lease runs out, as a second worker of a deployment would.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from sqlalchemy import event

from seojobs.engine.registry import Registry
from seojobs.engine.worker import Worker
from seojobs.records import JobRecord, UserRecord
from seojobs.services import Services
from seojobs.settings import Settings
from seojobs.store.db import Database
from tests.conftest import make_settings
from tests.waiting import await_until

LEASE = 3.0  # heartbeats every second


@contextlib.asynccontextmanager
async def rescuer(store_url: str, settings: Settings, registry: Registry) -> AsyncIterator[None]:
    """A worker that claims nothing (a queue no kind has) and does the maintenance: a lease
    that runs out is rescued as it does."""
    db = Database(store_url)
    worker = Worker(db, settings, registry, queues=["nothing"], worker_id="rescuer")
    task = asyncio.create_task(worker.run())
    try:
        yield
    finally:
        worker.stop()
        await asyncio.wait_for(task, 30)
        db.dispose()


@dataclass
class Trial:
    services: Services
    user: UserRecord
    settings: Settings
    db: Database  # the database of the worker on trial

    def worker(self, registry: Registry) -> Worker:
        return Worker(self.db, self.settings, registry, maintenance=False)


@contextlib.asynccontextmanager
async def trial(store_url: str, registry: Registry, lease: float) -> AsyncIterator[Trial]:
    """A user, a database for the worker on trial, and the rescuer running."""
    settings = make_settings(store_url, lease_seconds=lease)
    services = Services(Database(store_url), settings, registry)
    db = Database(store_url)
    try:
        async with rescuer(store_url, settings, registry):
            yield Trial(services, services.accounts.create_user("alice").user, settings, db)
    finally:
        db.dispose()
        services.db.dispose()


@contextlib.asynccontextmanager
async def in_a_thread(worker: Worker) -> AsyncIterator[Worker]:
    """``worker`` run on an event loop of its own, in a thread."""
    thread = threading.Thread(target=asyncio.run, args=(worker.run(),), name="worker-on-trial")
    thread.start()
    try:
        yield worker
    finally:
        worker.stop()
        await asyncio.to_thread(thread.join, 30)
        assert not thread.is_alive()


async def settled(trial: Trial, job_ids: list[int]) -> list[JobRecord]:
    """Each job once it is final, or once any of them was rescued (whichever comes first)."""

    async def check() -> list[JobRecord] | None:
        get = trial.services.jobs.get
        found = [await asyncio.to_thread(get, trial.user, i) for i in job_ids]
        if all(j.is_final for j in found) or any(j.rescue_count for j in found):
            return found
        return None

    return await await_until(check, timeout=60)


async def test_a_job_holding_the_event_loop_longer_than_a_heartbeat_allows_keeps_its_lease(
    store_url: str, registry: Registry
) -> None:
    """The job holds its worker's event loop for more than a lease: the heartbeats go on
    meanwhile, from their own thread; the lease never runs out, and the job completes on its
    first claim. (It was rescued by the other worker while the loop was held.)"""
    async with trial(store_url, registry, LEASE) as t:
        job, _ = t.services.jobs.create(t.user, "test_block_loop", {"seconds": LEASE + 1})
        async with in_a_thread(t.worker(registry)):
            [done] = await settled(t, [job.id])
    assert (done.state, done.rescue_count, done.attempt) == ("completed", 0, 1), done


async def test_a_worker_whose_database_threads_are_all_busy_keeps_its_leases(
    store_url: str, registry: Registry
) -> None:
    """Four jobs' first reads of their items take longer than a lease (a slow query each),
    holding every thread of the worker's database pool: the heartbeats do not wait behind
    them. (They did, and all four jobs were rescued.)"""
    slowed = threading.Semaphore(4)  # the first four reads of items, one per job

    def slow_item_reads(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        is_items_read = statement.startswith("SELECT") and "FROM job_items" in statement
        if is_items_read and slowed.acquire(blocking=False):
            time.sleep(LEASE + 1)

    async with trial(store_url, registry, LEASE) as t:
        made = [t.services.jobs.create(t.user, "test_items", {"urls": ["a"]})[0] for _ in "abcd"]
        event.listen(t.db.engine, "before_cursor_execute", slow_item_reads)
        try:
            async with in_a_thread(t.worker(registry)):
                done = await settled(t, [job.id for job in made])
        finally:
            event.remove(t.db.engine, "before_cursor_execute", slow_item_reads)
    assert [(j.state, j.rescue_count, j.attempt) for j in done] == [("completed", 0, 1)] * 4
    assert slowed.acquire(blocking=False) is False  # all four reads were slow


async def test_a_worker_whose_event_loop_stays_held_still_loses_its_lease(
    store_url: str, registry: Registry
) -> None:
    """What the heartbeat's thread must not do: keep the leases of a worker whose loop no
    longer turns (a job in an endless computation: nothing it holds makes progress). The loop
    held for three and a half leases, the job is rescued."""
    lease = 1.0
    async with trial(store_url, registry, lease) as t:
        job, _ = t.services.jobs.create(t.user, "test_block_loop", {"seconds": lease * 3.5})
        async with in_a_thread(t.worker(registry)):
            [rescued] = await settled(t, [job.id])
    assert rescued.rescue_count >= 1, rescued
