"""Index-check benchmark: ``python bench/check.py [--urls N] [--concurrency 8,32,64] [...]``.

What it measures, its targets and how to read its report: docs/bench/check.md.
"""

from __future__ import annotations

import sys
from pathlib import Path

# The repository root, not bench/ (where queue.py would shadow the standard library's queue).
sys.path[0] = str(Path(__file__).resolve().parents[1])

import argparse
import asyncio
import dataclasses
import functools
import importlib.util
import logging
import os
import time
from collections.abc import Callable, Coroutine
from contextlib import AbstractContextManager, ExitStack
from dataclasses import dataclass

from bench.lib import bare, check_layers, cli, ours, procstat, spy
from bench.lib.check_report import BARE, BARE_HTTPX, OURS, Results, Run, failures, render
from bench.lib.scratch import ScratchPostgres
from bench.lib.site import SiteProcess, indexed

SELECTABLE = ("sqlite", "postgresql", "bare")
BareLoop = Callable[[list[str], str, int], Coroutine[None, None, tuple[float, int]]]
BARE_LOOPS: dict[str, BareLoop] = {
    BARE: bare.check_aiohttp,
    BARE_HTTPX: bare.check_httpx,
}
POLITENESS = ("default", "raised")
DEFAULT_HOST_CONCURRENCY = 2  # Settings.fetch_host_concurrency's default
WARM_URLS = 200


Options = argparse.Namespace  # what parse_args returns


def parse_args(argv: list[str] | None) -> Options:
    parser = argparse.ArgumentParser(
        prog="bench/check.py",
        description=(
            "Index-check N URLs of a local site with a local fake Serper API: a seojobs Worker "
            "running a real index_check job (SQLite, PostgreSQL) against bare aiohttp and httpx "
            "loops doing the same two requests per URL at the same concurrency."
        ),
    )
    parser.add_argument("--urls", type=int, default=2000, help="URLs per run (default: 2000)")
    parser.add_argument(
        "--concurrency",
        type=cli.positive_ints,
        default=(8, 32, 64),
        help="index_check_concurrency values, each also the bare loop's (default: 8,32,64)",
    )
    parser.add_argument(
        "--only",
        type=cli.choice(SELECTABLE),
        default=SELECTABLE,
        help="comma-separated subset of sqlite,postgresql,bare (both bare loops; default: all)",
    )
    parser.add_argument(
        "--politeness",
        type=cli.choice(POLITENESS),
        default=POLITENESS,
        help=(
            "per-host limit for our runs: default (fetch_host_concurrency=2) and/or raised "
            "(= the job concurrency); default: both"
        ),
    )
    parser.add_argument(
        "--rounds", type=int, default=1, help="repeat every run; the best is reported (default 1)"
    )
    parser.add_argument(
        "--site-ports", type=int, default=4, help="site origins (ports on 127.0.0.1; default 4)"
    )
    parser.add_argument(
        "--no-pin",
        dest="pin",
        action="store_false",
        help="do not pin the benchmark to CPU 0 and the site process to CPU 1",
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="also run ours once on SQLite at the highest concurrency under py-spy and print "
        "where the time goes",
    )
    parser.add_argument(
        "--layers",
        type=int,
        default=1,
        metavar="ROUNDS",
        help="also measure where the CPU per URL goes, one layer at a time (bare loop, our "
        "HttpClient, fetcher + adapter, the whole job on SQLite) at the highest concurrency, "
        "in ROUNDS interleaved rounds (default 1; 0 skips it and its targets; see "
        "bench/lib/check_layers.py)",
    )
    args = parser.parse_args(argv)
    if args.layers < 0:
        parser.error("--layers must be 0 or more")
    if args.urls < 1 or args.rounds < 1 or args.site_ports < 1:
        parser.error("--urls, --rounds and --site-ports must be at least 1")
    args.only = frozenset(args.only)
    return args


# -- measuring --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Usage:
    cpu: float  # this process's CPU seconds, every thread
    loop_wait: float  # seconds the event-loop thread was runnable but not running
    server_cpu: float
    server_wait: float
    others_busy: float  # CPUs used by every other process, on average


class Meter:
    """CPU used during one run by this process, the site process and everything else."""

    def __init__(self, site: SiteProcess) -> None:
        self.site = site
        self.ours = time.process_time()
        self.loop = procstat.thread_sched()
        self.server = site.sched_seconds()
        self.busy = procstat.machine_busy()

    def stop(self, seconds: float) -> Usage:
        ours = time.process_time() - self.ours
        loop_wait = procstat.thread_sched()[1] - self.loop[1]
        server_cpu, server_wait = (
            now - before for now, before in zip(self.site.sched_seconds(), self.server, strict=True)
        )
        others = max(0.0, procstat.machine_busy() - self.busy - ours - server_cpu) / seconds
        return Usage(ours, loop_wait, server_cpu, server_wait, min(others, os.cpu_count() or 1))


# -- the systems -----------------------------------------------------------------------------


class Bench:
    def __init__(self, opts: Options, site: SiteProcess, results: Results) -> None:
        self.opts = opts
        self.site = site
        self.results = results
        n = opts.urls
        self.urls = [f"{site.site_urls[i % len(site.site_urls)]}/p/{i}" for i in range(n)]
        self.expected_indexed = sum(indexed(i) for i in range(n))
        self.dbs: ours.Databases | None = None

    def bare(self, system: str, concurrency: int) -> None:
        meter = Meter(self.site)
        loop = BARE_LOOPS[system]
        seconds, listed = asyncio.run(loop(self.urls, self.site.serper_url, concurrency))
        usage = meter.stop(seconds)
        if listed != self.expected_indexed:
            raise RuntimeError(f"{system}: {listed} listed, expected {self.expected_indexed}")
        self._add(system, "-", concurrency, None, seconds, usage)

    def _database(self, dialect: str) -> AbstractContextManager[tuple[str, int]]:
        """A fresh database for one run (copied from a migrated template) and the user id."""
        assert self.dbs is not None
        return self.dbs.fresh(dialect)

    def ours(self, dialect: str, concurrency: int, host_concurrency: int) -> None:
        scenario = ours.Scenario(dialect, concurrency, host_concurrency)
        with self._database(dialect) as (url, user_id):
            meter = Meter(self.site)
            run = asyncio.run(ours.check(url, self.site.serper_url, user_id, self.urls, scenario))
            # The CPU of the timed span, as the clock's: creating the job (~0.05 ms/URL) and
            # reading every item back to check it come before and after.
            usage = dataclasses.replace(meter.stop(run.seconds), cpu=run.cpu)
        expected = (self.expected_indexed, len(self.urls) - self.expected_indexed, len(self.urls))
        got = (run.indexed, run.not_indexed, run.fetched_ok)
        if got != expected or run.robots_fetches != len(self.site.site_urls):
            raise RuntimeError(f"seojobs {dialect}: results {got} (robots {run.robots_fetches})")
        self._add(OURS, dialect, concurrency, host_concurrency, run.seconds, usage)

    def _add(
        self,
        system: str,
        dialect: str,
        concurrency: int,
        host_concurrency: int | None,
        seconds: float,
        usage: Usage,
    ) -> None:
        run = Run(
            system,
            dialect,
            concurrency,
            host_concurrency,
            len(self.urls),
            seconds,
            usage.cpu,
            usage.loop_wait,
            usage.server_cpu,
            usage.server_wait,
            usage.others_busy,
        )
        self.results.runs.append(run)
        host = "" if run.host_concurrency is None else f", per-host {run.host_concurrency}"
        db = "" if run.dialect == "-" else f" {run.dialect}"
        cli.progress(
            f"{run.system}{db} c={run.concurrency}{host}: {run.rate:,.0f} URLs/s, "
            f"{run.cpu_ms_per_url:.2f} CPU ms/URL, event loop waited for a CPU "
            f"{run.loop_wait_seconds / run.seconds:.0%} of the time"
        )

    def warm_up(self) -> None:
        """One small untimed pass of each system: imports, the site's page cache, pools."""
        urls, self.urls = self.urls, self.urls[:WARM_URLS]
        try:
            for loop in BARE_LOOPS.values():
                asyncio.run(loop(self.urls, self.site.serper_url, 8))
            for dialect in ("sqlite", "postgresql"):
                if dialect in self.opts.only:
                    with self._database(dialect) as (url, user_id):
                        scenario = ours.Scenario(dialect, 8, 8)
                        asyncio.run(
                            ours.check(url, self.site.serper_url, user_id, self.urls, scenario)
                        )
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


def _environment(opts: Options, pg: ScratchPostgres | None) -> list[str]:
    lines = [
        cli.machine(pg) + f"; load average at start {procstat.loadavg()}",
        cli.versions("aiohttp", "httpx", "httpcore", "anyio", "h11", "uvicorn", "sqlalchemy"),
    ]
    split = (
        "benchmark process pinned to CPU 0 (event loop, DB threads, the bare loops), "
        "site + fake Serper process (uvicorn, h11) pinned to CPU 1"
        if opts.pin
        else "no CPU pinning"
    )
    lines += [
        split,
        f"{opts.urls:,} URLs over {opts.site_ports} origins (one host name, 127.0.0.1: one "
        "politeness gate), robots.txt per origin; fake Serper on its own port",
        "ours: one Worker (maintenance off, poll 1 s) runs one index_check job created before "
        "the clock; clock from Worker.run() to the job read back as completed",
        "bare loops: 2 plain aiohttp.ClientSession (the ceiling), or 2 httpx.AsyncClient "
        "(pages, Serper); per URL the page GET and the Serper POST side by side; no robots.txt, "
        "no DB",
    ]
    return lines


def _notes(results: Results) -> list[str]:
    notes = [
        "per-host (fetch_host_concurrency) = how many page requests the fetcher sends to one "
        "host at once; 2 is the default on purpose: it is politeness toward real sites. Raised "
        "= the job concurrency, the fair comparison with the bare loops, which have no gate: "
        "compare the ratios on those rows.",
        "bench CPU = CPU time of this process (every thread) / wall time; loop waits = share of "
        "the wall time the event-loop thread was runnable but waiting for a CPU (schedstat); "
        "site CPU / site waits = the same for the site process; others = CPUs used meanwhile "
        "by every other process (other people's test runs and benchmarks, PostgreSQL).",
    ]
    if importlib.util.find_spec("sniffio") is None:
        notes.append(
            "sniffio is not installed: httpcore 1.0 runs 'import sniffio' in "
            "current_async_library() on every lock/semaphore use and fails each time (a full "
            "sys.path scan); the bare httpx loop pays it per request."
        )
    if any(r.loop_wait_seconds > 0.1 * r.seconds for r in results.runs):
        notes.append(
            "in some runs the event loop waited for a CPU more than 10% of the time: the "
            "machine was shared with other work, which depresses URLs/s. The CPU ms/URL "
            "columns are much less sensitive to that than URLs/s; 1000 / (CPU ms/URL) is "
            "what one process could do with a core to itself."
        )
    return notes


def _profile(bench: Bench, concurrency: int) -> list[str]:
    """One more SQLite run of ours, raised per-host, under py-spy; report lines."""
    run_once = functools.partial(bench.ours, "sqlite", concurrency, concurrency)
    _none, raw = spy.record_self(run_once)
    run = bench.results.runs.pop()  # reported here, not among the timed runs
    if raw is None:
        return ["profile: py-spy missing or could not attach (no permission?); skipped"]
    total, found = spy.categorise(raw)
    if not total:
        return ["profile: no samples"]
    lines = [
        f"profile ({OURS} sqlite, c={concurrency}, per-host {concurrency}, under py-spy --gil: "
        f"{run.rate:,.0f} URLs/s, {run.cpu_ms_per_url:.2f} CPU ms/URL, {total:,} samples):",
    ]
    for name, count in found.most_common():
        share = count / total
        lines.append(f"  {share:6.1%}  {share * run.cpu_ms_per_url:5.2f} ms/URL  {name}")
    return lines


def _layers(bench: Bench, concurrency: int, rounds: int) -> list[str]:
    """The ``--layers`` ladder at ``concurrency``; report lines."""

    def whole_job(scenario: ours.Scenario) -> ours.CheckRun:
        with bench._database("sqlite") as (url, user_id):
            return asyncio.run(
                ours.check(url, bench.site.serper_url, user_id, bench.urls, scenario)
            )

    cli.progress(f"layers: {rounds} round(s) at c={concurrency}")
    found = check_layers.measure(bench.urls, bench.site.serper_url, concurrency, rounds, whole_job)
    bench.results.layer_checks = check_layers.checks(found)
    return check_layers.report(found)


def main(argv: list[str] | None = None) -> int:
    cli.unwind_on_sigterm()
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    opts = parse_args(argv)
    results = Results(urls=opts.urls)
    started = time.monotonic()
    partial = cli.partial_report(
        lambda: render(results), "site process stopped, scratch files removed"
    )
    with partial, ExitStack() as stack:
        site = stack.enter_context(SiteProcess(opts.site_ports, opts.urls, 1 if opts.pin else None))
        if opts.pin:
            os.sched_setaffinity(0, {0})
        site.wait_ready()
        bench = Bench(opts, site, results)
        bench.dbs = ours.Databases(
            stack,
            sqlite="sqlite" in opts.only or opts.profile or opts.layers > 0,
            postgres="postgresql" in opts.only,
            prefix="seojobs_check",
        )
        results.environment = _environment(opts, bench.dbs.pg)
        cli.progress("warming up")
        bench.warm_up()
        bench.run_all()
        if opts.profile:
            results.notes += _profile(bench, max(opts.concurrency))
        if opts.layers:
            results.notes += _layers(bench, max(opts.concurrency), opts.layers)
    results.notes = _notes(results) + results.notes
    results.environment.append(
        f"total wall time {time.monotonic() - started:.0f} s; "
        f"load average at end {procstat.loadavg()}"
    )
    print(render(results), end="", flush=True)
    return cli.exit_code(failures(results))


if __name__ == "__main__":
    raise SystemExit(main())
