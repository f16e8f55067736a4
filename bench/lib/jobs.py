"""What ``bench/queue.py`` runs and records: the benchmark's job kinds (a counting no-op and a
start-time stamp), the result records, and the shared end-of-burn-down detection."""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from pydantic import BaseModel

from seojobs.engine import JobContext, Kind, Registry

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

    def hit(self) -> None:
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
        deadline = time.perf_counter() + timeout
        while job_id not in self.started:
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                raise TimeoutError(f"job {job_id} did not start within {timeout:.0f} s")
            self.arrived.clear()
            if job_id in self.started:
                break
            try:
                await asyncio.wait_for(self.arrived.wait(), remaining)
            except TimeoutError:
                continue
        return self.started[job_id]


def burn_registry(counter: Counter) -> Registry:
    async def noop(ctx: JobContext) -> None:
        counter.hit()

    registry = Registry()
    registry.add(Kind(BURN_KIND, NoParams, noop, description="benchmark no-op"))
    return registry


def wake_registry(stamps: Stamps) -> Registry:
    async def stamp(ctx: JobContext) -> None:
        stamps.stamp(ctx.job_id)

    registry = Registry()
    registry.add(Kind(WAKE_KIND, NoParams, stamp, description="benchmark start stamp"))
    return registry


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
