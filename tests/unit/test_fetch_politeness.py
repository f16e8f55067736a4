"""Per-host politeness with a fake clock: no real time passes in these tests."""

from __future__ import annotations

import asyncio

from seojobs.fetch import HostGate
from seojobs.fetch.politeness import MAX_CRAWL_DELAY


class FakeTime:
    def __init__(self) -> None:
        self.now = 100.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


async def test_starts_on_one_host_are_spaced_by_the_delay() -> None:
    time = FakeTime()
    gate = HostGate(concurrency=2, delay=5.0, clock=time.clock, sleep=time.sleep)
    for _ in range(3):
        async with gate.slot("a.test"):
            pass
    assert time.sleeps == [5.0, 5.0]


async def test_time_already_passed_counts_towards_the_delay() -> None:
    time = FakeTime()
    gate = HostGate(concurrency=1, delay=5.0, clock=time.clock, sleep=time.sleep)
    async with gate.slot("a.test"):
        time.now += 3.0  # the request itself took 3 s
    async with gate.slot("a.test"):
        pass
    assert time.sleeps == [2.0]


async def test_hosts_do_not_wait_for_each_other() -> None:
    time = FakeTime()
    gate = HostGate(concurrency=1, delay=5.0, clock=time.clock, sleep=time.sleep)
    for host in ("a.test", "b.test", "A.TEST"):
        async with gate.slot(host):
            pass
    assert time.sleeps == [5.0]  # only the second a.test start (host names are case-blind)


async def test_crawl_delay_raises_the_delay_and_is_capped() -> None:
    time = FakeTime()
    gate = HostGate(concurrency=1, delay=1.0, clock=time.clock, sleep=time.sleep)
    gate.set_crawl_delay("a.test", 7.0)
    assert gate.delay_for("a.test") == 7.0
    assert gate.delay_for("b.test") == 1.0
    gate.set_crawl_delay("a.test", 0.5)  # a smaller Crawl-delay never lowers the setting
    assert gate.delay_for("a.test") == 1.0
    gate.set_crawl_delay("a.test", 86_400)
    assert gate.delay_for("a.test") == MAX_CRAWL_DELAY
    gate.set_crawl_delay("a.test", None)
    assert gate.delay_for("a.test") == 1.0


async def test_at_most_n_requests_hold_a_slot_at_once() -> None:
    gate = HostGate(concurrency=2, delay=0.0)
    release = asyncio.Event()
    peak = 0

    async def request() -> None:
        nonlocal peak
        async with gate.slot("a.test"):
            peak = max(peak, gate.active("a.test"))
            await release.wait()

    tasks = [asyncio.create_task(request()) for _ in range(5)]
    while gate.waiting("a.test") + gate.active("a.test") < 5:
        await asyncio.sleep(0)  # let every task reach the gate
    assert (gate.active("a.test"), gate.waiting("a.test")) == (2, 3)
    release.set()
    await asyncio.gather(*tasks)
    assert peak == 2
    assert (gate.active("a.test"), gate.waiting("a.test")) == (0, 0)
