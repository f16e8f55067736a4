"""Results and the shared end-of-burn-down detection."""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from bench.kinds import Counter

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
    """Enqueue-to-start latencies on an idle worker, in seconds."""

    system: str
    dialect: str
    how: str
    samples: list[float] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def p90(self) -> float:
        if len(self.samples) < 2:
            return self.samples[0]
        return statistics.quantiles(self.samples, n=10, method="inclusive")[-1]


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
