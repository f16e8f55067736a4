"""Job kinds the benchmark registers with seojobs: a counting no-op and a start-time stamp."""

from __future__ import annotations

import asyncio
import time

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
