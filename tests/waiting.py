"""Wait on conditions, never on fixed sleeps."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    import psycopg

    from seojobs.records import JobRecord, UserRecord
    from seojobs.services import Services

T = TypeVar("T")


def pg_waiting_for_a_lock(admin: psycopg.Connection[Any], database: str) -> bool:
    """Whether a session of PostgreSQL's ``database`` waits for a lock (``admin``: autocommit)."""
    row = admin.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND wait_event_type = 'Lock'",
        (database,),
    ).fetchone()
    return bool(row and row[0])


class InThread(Generic[T]):
    """``call()`` started in a thread of its own (one side of a race the test arranges);
    ``outcome()`` is what it returned, or the exception it raised, returned for the test's
    own assertion."""

    def __init__(self, call: Callable[[], T]) -> None:
        self._outcome: list[T | BaseException] = []

        def run() -> None:
            try:
                self._outcome.append(call())
            except BaseException as exc:  # reported to the test's thread
                self._outcome.append(exc)

        self._thread = threading.Thread(target=run)
        self._thread.start()

    def outcome(self, timeout: float = 60.0) -> T | BaseException:
        self._thread.join(timeout)
        assert not self._thread.is_alive(), f"still running after {timeout}s"
        return self._outcome[0]


# A wait checks every ``interval`` for its first second, then less often: every tenth of the
# time waited so far, at most every LONGEST_PAUSE (never less often than ``interval``). A check
# reads the database, a file or a fake; the suite's waits of several seconds (leases, rescues,
# real jobs) checked 20 times a second, each a read the server also pays for (issue 24.1).
BRISK_SECONDS = 1.0
LONGEST_PAUSE = 0.25


def _pause(waited: float, interval: float) -> float:
    if waited < BRISK_SECONDS:
        return interval
    return max(interval, min(waited / 10, LONGEST_PAUSE))


def wait_until(check: Callable[[], T], timeout: float = 30.0, interval: float = 0.05) -> T:
    started = time.monotonic()
    deadline = started + timeout
    while True:
        value = check()
        if value:
            return value
        now = time.monotonic()
        if now > deadline:
            raise AssertionError(f"condition not met within {timeout}s (last value {value!r})")
        time.sleep(_pause(now - started, interval))


async def await_until(
    check: Callable[[], Awaitable[T]], timeout: float = 30.0, interval: float = 0.05
) -> T:
    started = time.monotonic()
    deadline = started + timeout
    while True:
        value = await check()
        if value:
            return value
        now = time.monotonic()
        if now > deadline:
            raise AssertionError(f"condition not met within {timeout}s (last value {value!r})")
        await asyncio.sleep(_pause(now - started, interval))


async def run_until_final(
    services: Services, user: UserRecord, job: JobRecord, timeout: float = 120.0
) -> JobRecord:
    """Run an in-process worker over the services' store until ``job`` has ended; the job as
    it ended."""
    from seojobs.engine.worker import Worker  # the server's; this module also serves e2e waits

    worker = Worker(services.db, services.settings, services.registry)
    running = asyncio.create_task(worker.run())
    try:

        async def final() -> bool:
            return (await asyncio.to_thread(services.jobs.get, user, job.id)).is_final

        await await_until(final, timeout=timeout)
    finally:
        worker.stop()
        await running
    return services.jobs.get(user, job.id)
