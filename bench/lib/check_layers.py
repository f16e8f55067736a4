"""``bench/check.py --layers``: where an index check's CPU per URL goes, one layer at a time.

How it works and what each figure counts: docs/bench/check.md.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field

from bench.lib import bare, ours
from bench.lib.site import API_KEY
from seojobs.fetch import Fetcher
from seojobs.fetch.http import HttpClient
from seojobs.providers.base import http_client
from seojobs.providers.serper import SerperChecker
from seojobs.settings import Settings

STEPS = ("bare aiohttp", "our HttpClient", "fetcher + adapter", "the whole job")
# Issue 23's targets on the ladder (they replace "0.7 x the bare aiohttp loop", withdrawn: the
# bare loop does none of a check's work): (what, measured from the medians, passes).
CLIENT_RATIO = 0.85  # our HttpClient >= 0.85 x the bare aiohttp loop (bare CPU / ours)
JOB_RATIO = 0.8  # the whole job >= 0.8 x fetcher + adapter alone: the engine adds <= 1/4
HANDLER_CPU = 0.40  # fetcher + adapter <= 0.40 CPU ms/URL


@dataclass
class Layers:
    concurrency: int
    urls: int
    cpu_ms: dict[str, list[float]] = field(default_factory=lambda: {s: [] for s in STEPS})

    def median(self, step: str) -> float:
        return statistics.median(self.cpu_ms[step])


async def _lanes(urls: list[str], concurrency: int, one: Callable[[str], Awaitable[None]]) -> None:
    todo: Iterator[str] = iter(urls)

    async def lane() -> None:
        for url in todo:
            await one(url)

    await asyncio.gather(*(lane() for _ in range(concurrency)))


async def _our_client(urls: list[str], settings: Settings, concurrency: int) -> None:
    search = settings.serper_base_url.rstrip("/") + "/search"
    async with Fetcher(settings) as fetcher, http_client(settings) as api:
        pages: HttpClient = fetcher.http

        async def one(url: str) -> None:
            page = asyncio.create_task(pages.get(url, truncate=True))
            query = {"q": "site:" + url.split("://", 1)[1], "num": 10}
            answer = await api.post(search, json=query, headers={"X-API-KEY": API_KEY})
            answer.json()
            if (await page).status != 200 or answer.status != 200:
                raise RuntimeError(f"our HttpClient: {url} failed")

        await _lanes(urls, concurrency, one)


async def _handler(urls: list[str], settings: Settings, concurrency: int) -> None:
    checker = SerperChecker(settings)
    try:
        async with Fetcher(settings) as fetcher:

            async def one(url: str) -> None:
                inspecting = asyncio.create_task(fetcher.inspect(url))
                verdict = await checker.check(url, "google")
                diagnostics = await inspecting
                diagnostics.to_dict()
                if verdict.status == "failed" or diagnostics.http_status != 200:
                    raise RuntimeError(f"fetcher + adapter: {url} failed")

            await _lanes(urls, concurrency, one)
    finally:
        await checker.aclose()


def _cpu_ms(urls: int, run: Callable[[], object]) -> float:
    cpu = time.process_time()
    run()
    return (time.process_time() - cpu) * 1000 / urls


def measure(
    urls: list[str],
    serper_url: str,
    concurrency: int,
    rounds: int,
    whole_job: Callable[[ours.Scenario], ours.CheckRun],
) -> Layers:
    """``rounds`` interleaved rounds of the four steps at ``concurrency`` (per-host = it)."""
    scenario = ours.Scenario("sqlite", concurrency, concurrency)
    settings = ours.check_settings("sqlite://", serper_url, scenario)
    layers = Layers(concurrency, len(urls))
    n = len(urls)
    for _round in range(rounds):
        steps: dict[str, Callable[[], object]] = {
            STEPS[0]: lambda: asyncio.run(bare.check_aiohttp(urls, serper_url, concurrency)),
            STEPS[1]: lambda: asyncio.run(_our_client(urls, settings, concurrency)),
            STEPS[2]: lambda: asyncio.run(_handler(urls, settings, concurrency)),
        }
        for step, run in steps.items():
            layers.cpu_ms[step].append(_cpu_ms(n, run))
        job = whole_job(scenario)  # its CPU covers the timed span only, as in the main table
        layers.cpu_ms[STEPS[3]].append(job.cpu * 1000 / n)
    return layers


def checks(layers: Layers) -> list[tuple[str, str, bool]]:
    bare_, client, handler, job = (layers.median(step) for step in STEPS)
    return [
        (
            f"our HttpClient >= {CLIENT_RATIO} x bare aiohttp (CPU)",
            f"{bare_ / client:.2f}",
            bare_ / client >= CLIENT_RATIO,
        ),
        (
            f"the whole job >= {JOB_RATIO} x fetcher + adapter (CPU)",
            f"{handler / job:.2f}",
            handler / job >= JOB_RATIO,
        ),
        (
            f"fetcher + adapter <= {HANDLER_CPU:.2f} CPU ms/URL",
            f"{handler:.3f}",
            handler <= HANDLER_CPU,
        ),
    ]


def report(layers: Layers) -> list[str]:
    """The ladder as report lines: each step's median CPU ms/URL, what it adds, and the
    bare loop's CPU over it (the ratio the step would have if CPU-bound)."""
    rounds = len(layers.cpu_ms[STEPS[0]])
    lines = [
        f"layers (c={layers.concurrency}, per-host {layers.concurrency}, {layers.urls:,} URLs, "
        f"median of {rounds} interleaved round(s); CPU ms/URL, this process, every thread):",
        f"  {'step':<20} {'CPU ms/URL':>10} {'adds':>7} {'bare / step':>11}",
    ]
    floor = layers.median(STEPS[0])
    before = None
    for step in STEPS:
        value = layers.median(step)
        adds = "" if before is None else f"{value - before:+.3f}"
        lines.append(f"  {step:<20} {value:>10.3f} {adds:>7} {floor / value:>11.2f}")
        before = value
    for target, measured, ok in checks(layers):
        lines.append(f"  {target:<52} {measured:>6}  {'PASS' if ok else 'FAIL'}")
    return lines
