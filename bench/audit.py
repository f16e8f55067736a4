"""Site-audit crawl benchmark: ``python bench/audit.py [--store sqlite|pg] [--rounds N] [...]``.

What it measures, its targets and how to read its report: docs/bench/audit.md.
"""

from __future__ import annotations

import sys
from pathlib import Path

# The repository root, not bench/ (where queue.py would shadow the standard library's queue).
sys.path[0] = str(Path(__file__).resolve().parents[1])

import argparse
import importlib.util
import json
import os
import subprocess
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack

from bench.lib import REPO, cli, procstat, spy
from bench.lib.audit_report import BARE, OURS, PEER, Results, Run, failures, render
from bench.lib.auditsite import private_links
from bench.lib.crawl_ours import audit
from bench.lib.ours import Databases
from bench.lib.site import AuditSiteProcess as Site

SYSTEMS = ("ours", "advertools", "bare")
STORES = ("sqlite", "pg")
PEER_PYTHON = REPO / ".venv-peer" / "bin" / "python"
SAMPLE = 0.05  # seconds between RSS samples of a crawler's process tree


Options = argparse.Namespace  # what parse_args returns


def parse_args(argv: list[str] | None) -> Options:
    parser = argparse.ArgumentParser(
        prog="bench/audit.py",
        description="Crawl a generated local site with a seojobs site_audit job, "
        "advertools.crawl and a bare aiohttp + selectolax loop, side by side.",
    )
    parser.add_argument("--pages", type=int, default=5000, help="site size (default 5000)")
    parser.add_argument("--concurrency", type=int, default=16, help="for all three (default 16)")
    parser.add_argument(
        "--store",
        dest="stores",
        type=cli.choice(STORES),
        default=("sqlite",),
        help="our store(s): sqlite (default), pg, or sqlite,pg",
    )
    parser.add_argument(
        "--only",
        type=cli.choice(SYSTEMS),
        default=SYSTEMS,
        help="comma-separated subset of ours,advertools,bare (default: all)",
    )
    parser.add_argument("--rounds", type=int, default=3, help="rounds of every run (default 3)")
    parser.add_argument(
        "--peer-python",
        type=Path,
        default=Path(os.environ.get("SEOJOBS_BENCH_PEER_PYTHON", PEER_PYTHON)),
        help="a Python with advertools installed (default: $SEOJOBS_BENCH_PEER_PYTHON, "
        "else .venv-peer/bin/python)",
    )
    parser.add_argument(
        "--no-pin",
        dest="pin",
        action="store_false",
        help="do not pin the crawlers to CPU 0 and the site server to CPU 1",
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="after the rounds, one more audit of ours under py-spy: where its CPU goes",
    )
    args = parser.parse_args(argv)
    if args.pages < 1 or args.concurrency < 1 or args.rounds < 1:
        parser.error("--pages, --concurrency and --rounds must be at least 1")
    if "advertools" in args.only and not args.peer_python.exists():
        parser.error(
            f"{args.peer_python} not found: python3 -m venv .venv-peer && "
            ".venv-peer/bin/pip install advertools (or --only ours,bare)"
        )
    if "bare" in args.only and importlib.util.find_spec("selectolax") is None:
        parser.error(
            "selectolax not installed (the bare loop's parser): "
            ".venv/bin/pip install -e '.[dev,bench]' (or --only ours,advertools)"
        )
    args.only = frozenset(args.only)
    return args


def _child(args: list[str], cpu: int | None) -> tuple[dict[str, object], int]:
    """Run a crawler process; (the JSON line it printed, the peak RSS of its process tree)."""
    proc = subprocess.Popen(
        args,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.PIPE,
        preexec_fn=(lambda: os.sched_setaffinity(0, {cpu})) if cpu is not None else None,
    )
    sampler = procstat.TreeSampler(proc.pid, interval=SAMPLE)
    out, _ = proc.communicate()
    peak = sampler.stop()
    if proc.returncode != 0:
        raise RuntimeError(f"{args[2]} exited with {proc.returncode}")
    return json.loads(out.splitlines()[-1]), peak


class Bench:
    def __init__(self, opts: Options, site: Site, dbs: Databases, tmp: Path) -> None:
        self.opts = opts
        self.site = site
        self.dbs = dbs
        self.tmp = tmp
        self.results = Results()
        self.cpu = 0 if opts.pin else None
        self.blocked = len(private_links(opts.pages))
        self.version = ""  # advertools' and Scrapy's, once it ran
        self.stats: dict[str, int] = {}  # the site server's counts

    def _add(self, run: Run) -> None:
        self.results.runs.append(run)
        cli.progress(
            f"round {run.round} {run.label}: {run.rate:,.0f} pages/s, "
            f"{run.cpu_ms_per_page:.2f} CPU ms/page, peak RSS {run.peak_rss / 1e6:,.0f} MB"
        )

    def _expect(self, label: str, pages: int) -> None:
        if pages != self.opts.pages:
            raise RuntimeError(f"{label} crawled {pages} pages, expected {self.opts.pages}")

    def ours(self, store: str, n: int, on_start: Callable[[int], None] | None = None) -> Run:
        with self.dbs.fresh(store) as (url, user_id):
            got = audit(
                url,
                user_id,
                self.site.url,
                self.opts.concurrency,
                max_pages=2 * self.opts.pages,
                log=self.tmp / "worker.log",
                cpu=self.cpu,
                on_start=on_start,
            )
        self._expect(f"seojobs ({store})", got.pages)
        if got.blocked != self.blocked:
            raise RuntimeError(f"seojobs stored {got.blocked} blocked links, not {self.blocked}")
        return Run(OURS, store, n, got.pages, got.seconds, got.cpu, got.peak_rss, _load())

    def _crawler(self, system: str, n: int, args: list[str]) -> tuple[Run, dict[str, object]]:
        """One run of a crawler process (bare loop, advertools): its Run and what it printed."""
        got, peak = _child([*args, self.site.url, str(self.opts.concurrency)], self.cpu)
        self._expect(system, int(str(got["pages"])))
        seconds, cpu = float(str(got["seconds"])), float(str(got["cpu"]))
        return Run(system, "-", n, self.opts.pages, seconds, cpu, peak, _load()), got

    def advertools(self, n: int) -> Run:
        output = self.tmp / f"advertools_{n}.jl"
        output.unlink(missing_ok=True)  # advertools appends to an existing file
        module = [str(self.opts.peer_python), "-m", "bench.lib.crawl_advertools", str(output)]
        run, got = self._crawler(PEER, n, module)
        output.unlink(missing_ok=True)
        if got["private"]:
            raise RuntimeError(f"advertools fetched {got['private']} disallowed pages")
        self.version = str(got["version"])
        return run

    def bare(self, n: int) -> Run:
        return self._crawler(BARE, n, [sys.executable, "-m", "bench.lib.crawl_bare"])[0]

    def run_all(self) -> None:
        for n in range(1, self.opts.rounds + 1):
            # One after the other within a round, so a burst of other load meets them alike.
            if "ours" in self.opts.only:
                for store in self.opts.stores:
                    self._add(self.ours(store, n))
            if "advertools" in self.opts.only:
                self._add(self.advertools(n))
            if "bare" in self.opts.only:
                self._add(self.bare(n))

    def profile(self) -> list[str]:
        binary = spy.available()
        if binary is None:
            return ["profile: py-spy not found (.venv/bin/pip install -e '.[dev,bench]')"]
        out = self.tmp / "spy.txt"
        recorder: list[subprocess.Popen[bytes]] = []

        def attach(pid: int) -> None:
            recorder.append(spy.start(binary, pid, out, rate=spy.SELF_RATE))
            time.sleep(1.0)  # let py-spy attach before the job is created

        store = self.opts.stores[0]
        cli.progress(f"profile: one more audit ({store}) under py-spy")
        try:
            run = self.ours(store, 0, on_start=attach)
        finally:
            for proc in recorder:
                spy.stop(proc)
        if not out.exists():
            return ["profile: py-spy wrote nothing (ptrace not permitted?)"]
        return spy.audit_lines(out.read_text(), run.pages, spy.SELF_RATE)


def _load() -> str:
    return procstat.loadavg().split(",")[0]


def _environment(opts: Options, bench: Bench) -> list[str]:
    pg = bench.dbs.pg
    pin = (
        "crawlers (our worker, advertools and its Scrapy child, the bare loop) pinned to "
        "CPU 0, the site server to CPU 1"
        if opts.pin
        else "no CPU pinning"
    )
    return [
        cli.machine(pg) + f"; load average at start {procstat.loadavg()}",
        cli.versions("aiohttp", "selectolax", "sqlalchemy", "psycopg"),
        pin,
        f"site: {opts.pages:,} pages of ~8 KB, ~20 internal links each, robots.txt "
        f"(Disallow: /private/, linked from {bench.blocked} pages) and sitemap.xml, served "
        "from memory by a raw asyncio server (bench/lib/auditsite.py)",
        f"concurrency {opts.concurrency} for all three, no delay; ours: "
        f"SEOJOBS_SITE_AUDIT_CONCURRENCY={opts.concurrency}, SEOJOBS_FETCH_HOST_CONCURRENCY="
        f"{opts.concurrency}, SEOJOBS_FETCH_HOST_DELAY=0, every check on (external links, "
        "sitemaps), every page stored",
    ]


def _notes(bench: Bench) -> list[str]:
    notes = [
        "seojobs: clock = the job's started_at (claim) to completed_at (site-wide checks and "
        "summary written); CPU = the worker process's over the job; peak RSS = its VmHWM.",
        "advertools: clock = the advertools.crawl() call (it starts `scrapy runspider`, whose "
        "start-up is part of it); CPU = its process and children; peak RSS = sampled sum over "
        "its process tree (pandas-importing parent + Scrapy child) every 50 ms.",
        "bare loop: clock and CPU of the crawl inside its process; peak RSS sampled likewise.",
        "ratios are taken within each round (the three ran minutes apart at most) and the "
        "targets judged on their median.",
    ]
    if bench.version:
        notes.insert(1, f"peer: {bench.version}")
    if bench.stats:
        notes.append(f"site server: {bench.stats} (requests for /private/ must be 0)")
    return notes


def main(argv: list[str] | None = None) -> int:
    cli.unwind_on_sigterm()
    opts = parse_args(argv)
    results = Results()
    started = time.monotonic()
    partial = cli.partial_report(
        lambda: render(results), "processes stopped, scratch databases removed"
    )
    with partial, ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="seojobs_audit_")))
        site = stack.enter_context(Site(opts.pages, 1 if opts.pin else None))
        if opts.pin:
            os.sched_setaffinity(0, {0})
        dbs = Databases(
            stack,
            sqlite="sqlite" in opts.stores,
            postgres="pg" in opts.stores,
            prefix="seojobs_audit",
        )
        bench = Bench(opts, site, dbs, tmp)
        results = bench.results
        results.environment = _environment(opts, bench)
        bench.run_all()
        if opts.profile:
            profile = bench.profile()
        bench.stats = site.stats()
    results.notes = _notes(bench)
    if opts.profile:
        results.extra = profile
    results.environment.append(
        f"total wall time {time.monotonic() - started:.0f} s; "
        f"load average at end {procstat.loadavg()}"
    )
    print(render(results), end="", flush=True)
    return cli.exit_code(failures(results))


if __name__ == "__main__":
    raise SystemExit(main())
