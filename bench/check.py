"""Index-check benchmark; what it measures and its targets: docs/bench/check.md."""

from __future__ import annotations

import os
import sys

sys.path[0] = os.path.dirname(sys.path[0])  # the repo, not bench/ (queue.py)

import asyncio
import dataclasses
import importlib.util
import json
import statistics
import time
from argparse import Namespace as Options  # what parse_args returns
from collections.abc import Awaitable, Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import httpx

from bench.lib import core, ours, spy
from bench.lib.core import Target, columns, verdict
from bench.lib.report import Report
from bench.lib.site import API_KEY, SiteProcess, indexed
from seojobs.fetch import Fetcher
from seojobs.fetch.http import HttpClient
from seojobs.providers.base import http_client
from seojobs.providers.serper import SerperChecker
from seojobs.services.indexing import CHECK
from seojobs.settings import Settings
from seojobs.store import jobs as job_sql
from seojobs.store.db import Database

TARGET_RATE = 500.0  # URLs/s per worker process
# "0.7 x the bare aiohttp loop" is withdrawn (issue 23): the ratio is still printed, and the
# targets that replace it are judged on the --layers ladder (checks).

BARE = "bare aiohttp"  # the ceiling: our fetcher and Serper adapter send with aiohttp
BARE_HTTPX = "bare httpx"  # for comparison with the figures before the ceiling changed
OURS = "seojobs"


@dataclass(frozen=True)
class Run:
    """One timed pass over the URL list."""

    system: str  # OURS, BARE or BARE_HTTPX
    dialect: str  # sqlite | postgresql | "-" (bare)
    concurrency: int
    host_concurrency: int | None  # fetch_host_concurrency (None: the bare loop has no gate)
    urls: int
    seconds: float
    usage: core.Usage  # server: the site + fake Serper process; others: PostgreSQL too

    @property
    def rate(self) -> float:
        return self.urls / self.seconds

    @property
    def cpu_ms_per_url(self) -> float:
        return self.usage.cpu * 1000 / self.urls

    @property
    def key(self) -> tuple[str, str, int, int | None]:
        return (self.system, self.dialect, self.concurrency, self.host_concurrency)


def _host(run: Run) -> str:
    if run.host_concurrency is None:
        return "-"
    polite = " (default)" if run.host_concurrency == 2 else ""
    return f"{run.host_concurrency}{polite}"


@dataclass(frozen=True)
class Row:
    """One summary row: the best run of a key, and ours against the ceiling."""

    best: Run
    cpu_ms: float  # median CPU ms/URL over the key's runs
    ceiling: Run | None = None  # the bare aiohttp loop's best at the same concurrency
    ratio: float | None = None
    cpu_ratio: float | None = None
    httpx_ratio: float | None = None

    @property
    def rate_ok(self) -> bool | None:
        return self.best.rate >= TARGET_RATE if self.best.system == OURS else None


def summary_rows(runs: list[Run]) -> list[Row]:
    def best(key: tuple[str, str, int, int | None]) -> Run | None:
        return max((r for r in runs if r.key == key), key=lambda r: r.rate, default=None)

    def cpu(key: tuple[str, str, int, int | None]) -> float:
        return statistics.median(r.cpu_ms_per_url for r in runs if r.key == key)

    rows = []
    for key in dict.fromkeys(r.key for r in runs):
        top = best(key)
        assert top is not None
        if top.system != OURS:
            rows.append(Row(top, cpu(key)))
            continue
        ceiling_key = (BARE, "-", top.concurrency, None)
        ceiling, httpx_run = best(ceiling_key), best((BARE_HTTPX, "-", top.concurrency, None))
        rows.append(
            Row(
                top,
                cpu(key),
                ceiling,
                top.rate / ceiling.rate if ceiling else None,
                cpu(ceiling_key) / cpu(key) if ceiling else None,
                top.rate / httpx_run.rate if httpx_run else None,
            )
        )
    return rows


def _fmt(value: float | None, spec: str = ".2f") -> str:
    return "-" if value is None else format(value, spec)


def _verdict(ok: bool | None) -> str:
    return "-" if ok is None else verdict(ok)


def _pct(seconds: Callable[[Run], float]) -> Callable[[Run], str]:
    return lambda r: f"{seconds(r) / r.seconds:.0%}"


SUMMARY: list[tuple[str, Callable[[Row], str]]] = [
    ("system", lambda row: row.best.system),
    ("db", lambda row: row.best.dialect),
    ("conc", lambda row: str(row.best.concurrency)),
    ("per-host", lambda row: _host(row.best)),
    ("URLs/s", lambda row: f"{row.best.rate:,.0f}"),
    ("aiohttp URLs/s", lambda row: _fmt(row.ceiling.rate if row.ceiling else None, ",.0f")),
    ("ratio", lambda row: _fmt(row.ratio)),
    ("x httpx", lambda row: _fmt(row.httpx_ratio)),
    ("CPU ms/URL", lambda row: f"{row.cpu_ms:.2f}"),
    ("URLs/CPU-s", lambda row: f"{1000 / row.cpu_ms:,.0f}"),
    ("CPU ratio", lambda row: _fmt(row.cpu_ratio)),
    (f">= {TARGET_RATE:.0f}/s", lambda row: _verdict(row.rate_ok)),
]


class Results(Report[Run]):
    """Every run (a row each), the summary of the best, the --layers ladder judged."""

    def __init__(self) -> None:
        super().__init__(
            "seojobs index-check benchmark (bench/check.py)",
            [
                ("system", lambda r: r.system),
                ("db", lambda r: r.dialect),
                ("conc", lambda r: str(r.concurrency)),
                ("per-host", _host),
                ("seconds", lambda r: f"{r.seconds:.2f}"),
                ("URLs/s", lambda r: f"{r.rate:,.0f}"),
                ("CPU ms/URL", lambda r: f"{r.cpu_ms_per_url:.2f}"),
                ("bench CPU", _pct(lambda r: r.usage.cpu)),
                ("loop waits", _pct(lambda r: r.usage.loop_wait)),
                ("site CPU", _pct(lambda r: r.usage.server_cpu)),
                ("site waits", _pct(lambda r: r.usage.server_wait)),
                ("others", lambda r: f"{r.usage.others_busy:.2f}"),
            ],
            self.targets,
            _progress,
            [self.summary, lambda _runs: self.layers],
            right=(2, 4, 5, 6, 7, 8, 9, 10, 11),
        )
        self.layers: list[str] = []  # the --layers ladder
        self.layer_checks: list[Target] = []

    def summary(self, runs: list[Run]) -> list[str]:
        if not runs:
            return []
        return [
            "Summary: best run per row; ratio and CPU ratio: ours against the bare aiohttp loop",
            *columns(SUMMARY, summary_rows(runs), {2, 4, 5, 6, 7, 8, 9, 10}),
        ]

    def targets(self, runs: list[Run]) -> list[Target]:
        found = [
            (
                f"{row.best.dialect} c={row.best.concurrency} per-host {_host(row.best)}: "
                f">= {TARGET_RATE:.0f} URLs/s",
                f"{row.best.rate:,.0f}",
                row.rate_ok,
            )
            for row in summary_rows(runs)
            if row.rate_ok is not None
        ]
        return found + self.layer_checks


def _progress(run: Run) -> str:
    host = "" if run.host_concurrency is None else f", per-host {run.host_concurrency}"
    db = "" if run.dialect == "-" else f" {run.dialect}"
    return (
        f"{run.system}{db} c={run.concurrency}{host}: {run.rate:,.0f} URLs/s, "
        f"{run.cpu_ms_per_url:.2f} CPU ms/URL, event loop waited for a CPU "
        f"{run.usage.loop_wait / run.seconds:.0%} of the time"
    )


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


async def _lanes(
    urls: list[str], concurrency: int, one: Callable[[str], Awaitable[bool | None]]
) -> int:
    """``one(url)`` for every URL, in ``concurrency`` lanes; how many answered true."""
    todo: Iterator[str] = iter(urls)
    found = 0

    async def lane() -> None:
        nonlocal found
        for url in todo:
            answer = await one(url)  # awaited before ``found`` is read: lanes interleave
            found += bool(answer)

    await asyncio.gather(*(lane() for _ in range(concurrency)))
    return found


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
    whole_job: Callable[[Scenario], CheckRun],
) -> Layers:
    """``rounds`` interleaved rounds of the four steps at ``concurrency`` (per-host = it)."""
    scenario = Scenario("sqlite", concurrency, concurrency)
    settings = check_settings("sqlite://", serper_url, scenario)
    layers = Layers(concurrency, len(urls))
    n = len(urls)
    for _round in range(rounds):
        steps: dict[str, Callable[[], object]] = {
            STEPS[0]: lambda: asyncio.run(check_bare(BARE, urls, serper_url, concurrency)),
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
    return lines


SELECTABLE = ("sqlite", "postgresql", "bare")
POLITENESS = ("default", "raised")
DEFAULT_HOST_CONCURRENCY = 2  # Settings.fetch_host_concurrency's default
WARM_URLS = 200


def parse_args(argv: list[str] | None) -> Options:
    parser = core.parser(
        "bench/check.py",
        "Index-check N URLs of a local site with a local fake Serper API: a seojobs Worker "
        "running a real index_check job (SQLite, PostgreSQL) against bare aiohttp and httpx "
        "loops doing the same two requests per URL at the same concurrency.",
    )
    add = parser.add_argument
    add("--urls", type=int, default=2000, help="URLs per run")
    add("--concurrency", type=core.positive_ints, default="8,32,64", help="also the bare loops'")
    add("--only", type=core.choice(SELECTABLE), default=",".join(SELECTABLE), help="systems")
    add("--politeness", type=core.choice(POLITENESS), default="default,raised", help="per-host")
    add("--rounds", type=int, default=1, help="repeat every run; the best is reported")
    add("--site-ports", type=int, default=4, help="site origins (ports on 127.0.0.1)")
    add("--no-pin", dest="pin", action="store_false", help="do not pin the processes to CPUs")
    add("--profile", action="store_true", help="one more run of ours (SQLite) under py-spy")
    add("--layers", type=int, default=1, metavar="ROUNDS", help="CPU per URL by layer; 0 skips")
    args = parser.parse_args(argv)
    if args.layers < 0:
        parser.error("--layers must be 0 or more")
    if args.urls < 1 or args.rounds < 1 or args.site_ports < 1:
        parser.error("--urls, --rounds and --site-ports must be at least 1")
    args.only = frozenset(args.only)
    return args


CHECK_POLL = 0.002  # seconds between reads of the index-check job once its task has ended


# -- our index check ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Scenario:
    """One of our index-check runs: dialect, job concurrency, the per-host politeness limit."""

    dialect: str
    concurrency: int
    host_concurrency: int


@dataclass(frozen=True)
class CheckRun:
    seconds: float
    cpu: float  # this process's CPU seconds over the same span (job creation, checks excluded)
    indexed: int
    not_indexed: int
    fetched_ok: int
    robots_fetches: int  # robots.txt verdicts that came from a fetch of their own (one per origin)


def check_settings(url: str, serper_url: str, scenario: Scenario) -> Settings:
    return Settings(
        database_url=url,
        lease_seconds=ours.LEASE_SECONDS,
        poll_interval=ours.POLL_INTERVAL,
        allow_private_networks=True,  # the site is on loopback
        serper_key=API_KEY,
        serper_base_url=serper_url,
        check_providers={"google": ["serper"]},
        index_check_concurrency=scenario.concurrency,
        fetch_host_concurrency=scenario.host_concurrency,
        quota_check_daily=10_000_000,
    )


def _verify(db: Database, job_id: int, total: int) -> tuple[int, int, int, int]:
    """(indexed, not_indexed, pages fetched with 200, robots.txt fetches) of a finished job."""
    with db.read() as conn:
        job = job_sql.get(conn, job_id)
        assert job is not None
        if job.items_done != total or job.items_failed:
            raise RuntimeError(
                f"job {job_id}: {job.items_done} of {total} items done, {job.items_failed} failed"
            )
        fetched, robots_urls = 0, set()
        for item in ours.items(conn, job_id):
            diagnostics = (item.result or {}).get("diagnostics", {})
            fetched += diagnostics.get("http_status") == 200
            robots_urls.add((diagnostics.get("robots_txt") or {}).get("robots_url"))
    counters = job.counters
    return counters.get("indexed", 0), counters.get("not_indexed", 0), fetched, len(robots_urls)


async def check(
    url: str, serper_url: str, user_id: int, urls: list[str], scenario: Scenario
) -> CheckRun:
    """Create the index_check job through ``services.jobs.create`` (untimed), then time one Worker
    from ``run()`` until a second ``Database`` reads the job completed; check the result."""
    settings = check_settings(url, serper_url, scenario)
    params = {"urls": urls, "engine": "google"}
    job_id = await asyncio.to_thread(ours.create_job, url, user_id, CHECK, params, settings)
    async with ours.timed_worker(settings) as run:
        started, cpu = time.perf_counter(), time.process_time()
        ended = await ours.wait_completed(
            run.worker,
            run.task,
            run.probe,
            job_id,
            what="index check",
            timeout=60 + len(urls) / 20,
            poll=CHECK_POLL,
        )
        cpu = time.process_time() - cpu
        counts = await asyncio.to_thread(_verify, run.probe, job_id, len(urls))
    return CheckRun(ended - started, cpu, *counts)


# -- bench/check.py: each URL's two requests, with httpx and with aiohttp ------------------


async def _send_httpx(
    session: httpx.AsyncClient, method: str, url: str, **options: Any
) -> tuple[int, bytes]:
    response = await session.request(method, url, **options)
    return response.status_code, response.content


async def _send_aiohttp(
    session: aiohttp.ClientSession, method: str, url: str, **options: Any
) -> tuple[int, bytes]:
    async with session.request(method, url, **options) as response:
        return response.status, await response.read()


# system: (its HTTP library's session, one request with it: (status, body))
BARE_LOOPS: dict[str, tuple[Callable[[], Any], Callable[..., Awaitable[tuple[int, bytes]]]]] = {
    BARE: (aiohttp.ClientSession, _send_aiohttp),
    BARE_HTTPX: (httpx.AsyncClient, _send_httpx),
}


async def check_bare(
    system: str, urls: list[str], serper_url: str, concurrency: int
) -> tuple[float, int]:
    """Check every URL with a bare loop (two sessions of its HTTP library: pages, Serper);
    (seconds, URLs listed by the fake Serper)."""
    session, send = BARE_LOOPS[system]
    search = serper_url.rstrip("/") + "/search"

    async def one(url: str) -> bool:
        page = asyncio.create_task(send(site, "GET", url))
        query = {"q": "site:" + url.split("://", 1)[1], "num": 10}
        found, answer = await send(api, "POST", search, json=query, headers={"X-API-KEY": API_KEY})
        listed = url in {item.get("link") for item in json.loads(answer).get("organic", [])}
        status, body = await page
        if status != 200 or found != 200 or not body:
            raise RuntimeError(f"{system} loop: {url} answered {status}/{found}")
        return listed

    started = time.perf_counter()
    async with session() as site, session() as api:
        listed = await _lanes(urls, concurrency, one)
    return time.perf_counter() - started, listed


# -- the systems -----------------------------------------------------------------------------


class Bench:
    def __init__(self, opts: Options, site: SiteProcess, dbs: ours.Scratch, results: Results):
        self.opts = opts
        self.site = site
        self.results = results
        n = opts.urls
        self.urls = [f"{site.site_urls[i % len(site.site_urls)]}/p/{i}" for i in range(n)]
        self.expected_indexed = sum(indexed(i) for i in range(n))
        self.dbs = dbs

    def bare(self, system: str, concurrency: int) -> None:
        meter = core.Meter(self.site.pid)
        loop = check_bare(system, self.urls, self.site.serper_url, concurrency)
        seconds, listed = asyncio.run(loop)
        usage = meter.stop(seconds)
        if listed != self.expected_indexed:
            raise RuntimeError(f"{system}: {listed} listed, expected {self.expected_indexed}")
        self.results.add(Run(system, "-", concurrency, None, len(self.urls), seconds, usage))

    def job(self, scenario: Scenario, meter: list[core.Meter] | None = None) -> CheckRun:
        """One index check of ``self.urls`` on a fresh database; ``meter`` gets a Meter
        started once the database is ready."""
        with self.dbs.fresh(scenario.dialect) as (url, user_id):
            if meter is not None:
                meter.append(core.Meter(self.site.pid))
            return asyncio.run(check(url, self.site.serper_url, user_id, self.urls, scenario))

    def ours(self, dialect: str, concurrency: int, host_concurrency: int) -> None:
        meter: list[core.Meter] = []
        run = self.job(Scenario(dialect, concurrency, host_concurrency), meter)
        # The CPU of the timed span, as the clock's: creating the job (~0.05 ms/URL) and
        # reading every item back to check it come before and after.
        usage = dataclasses.replace(meter[0].stop(run.seconds), cpu=run.cpu)
        expected = (self.expected_indexed, len(self.urls) - self.expected_indexed, len(self.urls))
        got = (run.indexed, run.not_indexed, run.fetched_ok)
        if got != expected or run.robots_fetches != len(self.site.site_urls):
            raise RuntimeError(f"seojobs {dialect}: results {got} (robots {run.robots_fetches})")
        urls = len(self.urls)
        self.results.add(
            Run(OURS, dialect, concurrency, host_concurrency, urls, run.seconds, usage)
        )

    def warm_up(self) -> None:
        """One small untimed pass of each system: imports, the site's page cache, pools."""
        urls, self.urls = self.urls, self.urls[:WARM_URLS]
        try:
            for system in BARE_LOOPS:
                asyncio.run(check_bare(system, self.urls, self.site.serper_url, 8))
            for dialect in ("sqlite", "postgresql"):
                if dialect in self.opts.only:
                    self.job(Scenario(dialect, 8, 8))
        finally:
            self.urls = urls

    def host_limits(self, concurrency: int) -> list[int]:
        limits = []
        if "default" in self.opts.politeness:
            limits.append(DEFAULT_HOST_CONCURRENCY)
        if "raised" in self.opts.politeness and concurrency != DEFAULT_HOST_CONCURRENCY:
            limits.append(concurrency)
        return limits

    def run_all(self) -> None:
        for concurrency in self.opts.concurrency:
            for _round in range(self.opts.rounds):
                # Interleaved, so that a burst of other load hits every system alike.
                if "bare" in self.opts.only:
                    for system in BARE_LOOPS:
                        self.bare(system, concurrency)
                for dialect in ("sqlite", "postgresql"):
                    if dialect in self.opts.only:
                        for host in self.host_limits(concurrency):
                            self.ours(dialect, concurrency, host)


# -- set-up and report ------------------------------------------------------------------------


def _profile(bench: Bench, concurrency: int) -> list[str]:
    """One more SQLite run of ours, raised per-host, under py-spy; report lines."""
    with spy.recording(os.getpid(), spy.SELF_RATE) as got:
        bench.ours("sqlite", concurrency, concurrency)
    run = bench.results.runs.pop()  # reported here, not among the timed runs
    return spy.shares(
        got.raw,
        spy.CHECK_CATEGORIES,
        lambda n, total: n / total * run.cpu_ms_per_url,
        f"profile ({OURS} sqlite, c={concurrency}, per-host {concurrency}, under py-spy --gil: "
        f"{run.rate:,.0f} URLs/s, {run.cpu_ms_per_url:.2f} CPU ms/URL, {{total:,}} samples); "
        "CPU ms per URL:",
    )


def main(argv: list[str] | None = None) -> int:
    opts = parse_args(argv)
    results = Results()

    def body(stack: ExitStack) -> None:
        site = stack.enter_context(SiteProcess(opts.site_ports, opts.urls, 1 if opts.pin else None))
        dbs = ours.Scratch(stack, postgres="postgresql" in opts.only, prefix="seojobs_check")
        bench = Bench(opts, site, dbs, results)
        results.start(
            dbs.pg,
            core.versions("aiohttp", "httpx", "httpcore", "anyio", "h11", "uvicorn", "sqlalchemy"),
            "benchmark process pinned to CPU 0 (event loop, DB threads, the bare loops), "
            "site + fake Serper process (uvicorn, h11) pinned to CPU 1"
            if opts.pin
            else "no CPU pinning",
            f"{opts.urls:,} URLs over {opts.site_ports} origins (one host name, 127.0.0.1: one "
            "politeness gate), robots.txt per origin; fake Serper on its own port",
            "ours: one Worker (maintenance off, poll 1 s) runs one index_check job created "
            "before the clock; clock from Worker.run() to the job read back as completed",
            "bare loops: 2 plain aiohttp.ClientSession (the ceiling), or 2 httpx.AsyncClient "
            "(pages, Serper); per URL the page GET and the Serper POST side by side; no "
            "robots.txt, no DB",
        )
        core.progress("warming up")
        bench.warm_up()
        bench.run_all()
        if opts.profile:
            results.extra = _profile(bench, max(opts.concurrency))
        if opts.layers:
            concurrency = max(opts.concurrency)
            core.progress(f"layers: {opts.layers} round(s) at c={concurrency}")
            found = measure(bench.urls, site.serper_url, concurrency, opts.layers, bench.job)
            results.layer_checks, results.layers = checks(found), report(found)
        results.notes = [
            "what each column counts, and per-host 2 against raised: docs/bench/check.md"
        ]
        if importlib.util.find_spec("sniffio") is None:
            results.notes.append(
                "sniffio is not installed: the bare httpx loop pays a failed import per lock"
            )
        if any(r.usage.loop_wait > 0.1 * r.seconds for r in results.runs):
            results.notes.append(
                "the event loop waited for a CPU > 10% of a run: read CPU ms/URL, not URLs/s"
            )

    return results.main(body, "site process stopped, scratch files removed", opts.pin)


if __name__ == "__main__":
    raise SystemExit(main())
