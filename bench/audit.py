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
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager

from bench.lib import REPO, cli, procstat, spy
from bench.lib.audit_report import BARE, OURS, PEER, Results, Run, failures, render
from bench.lib.auditsite import MAX_PAGES, SITEMAP_URLS, private_links
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
    parser.add_argument(
        "--pages",
        type=cli.positive_ints,
        default=(5000,),
        help="site size(s), e.g. 5000,20000,100000: the rounds run at each (default 5000)",
    )
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
        "--render",
        type=int,
        default=0,
        metavar="PAGES",
        help='also a render: "js" audit of ours (Chromium) on a site of PAGES pages, once per '
        "round: its pages/s and the peak of the worker and its browsers (default: none)",
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="after the rounds, one more audit of ours under py-spy: where its CPU goes",
    )
    args = parser.parse_args(argv)
    if args.concurrency < 1 or args.rounds < 1 or args.render < 0:
        parser.error("--concurrency and --rounds must be at least 1, --render at least 0")
    if max(args.pages) > MAX_PAGES:
        parser.error(f"--pages: {MAX_PAGES:,} at most (site_audit's max_pages)")
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
    def __init__(self, opts: Options, dbs: Databases, tmp: Path, results: Results) -> None:
        self.opts = opts
        self.site: Site | None = None  # the site of the size being run (``at``)
        self.pages = 0
        self.dbs = dbs
        self.tmp = tmp
        self.results = results
        self.cpu = 0 if opts.pin else None
        self.blocked = 0
        self.version = ""  # advertools' and Scrapy's, once it ran
        self.stats: dict[int, dict[str, int]] = {}  # the site servers' counts, by size

    def _add(self, run: Run) -> None:
        self.results.runs.append(run)
        cli.progress(
            f"round {run.round} {run.label}: {run.rate:,.0f} pages/s, "
            f"{run.cpu_ms_per_page:.2f} CPU ms/page, peak RSS {run.peak_rss / 1e6:,.0f} MB"
        )

    @contextmanager
    def at(self, pages: int) -> Iterator[None]:
        """A site of ``pages`` pages served for the block."""
        with Site(pages, 1 if self.opts.pin else None) as site:
            self.site, self.pages, self.blocked = site, pages, len(private_links(pages))
            try:
                yield
            finally:
                self.stats[pages] = site.stats()

    @property
    def url(self) -> str:
        assert self.site is not None
        return self.site.url

    def _expect(self, label: str, pages: int) -> None:
        if pages != self.pages:
            raise RuntimeError(f"{label} crawled {pages} pages, expected {self.pages}")

    def ours(
        self,
        store: str,
        n: int,
        on_start: Callable[[int], None] | None = None,
        render: str = "raw",
    ) -> Run:
        with self.dbs.fresh(store) as (url, user_id):
            got = audit(
                url,
                user_id,
                self.url,
                self.opts.concurrency,
                max_pages=min(2 * self.pages, MAX_PAGES),
                log=self.tmp / "worker.log",
                cpu=self.cpu,
                on_start=on_start,
                render=render,
            )
        label = store if render == "raw" else f"{store}, render {render}"
        self._expect(f"seojobs ({label})", got.pages)
        if got.blocked != self.blocked:
            raise RuntimeError(f"seojobs stored {got.blocked} blocked links, not {self.blocked}")
        return Run(OURS, label, n, got.pages, got.seconds, got.cpu, got.peak_rss, _load())

    def _crawler(self, system: str, n: int, args: list[str]) -> tuple[Run, dict[str, object]]:
        """One run of a crawler process (bare loop, advertools): its Run and what it printed."""
        got, peak = _child([*args, self.url, str(self.opts.concurrency)], self.cpu)
        self._expect(system, int(str(got["pages"])))
        seconds, cpu = float(str(got["seconds"])), float(str(got["cpu"]))
        return Run(system, "-", n, self.pages, seconds, cpu, peak, _load()), got

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
        for pages in self.opts.pages:
            with self.at(pages):
                self._rounds()
        if self.opts.render:
            with self.at(self.opts.render):
                for n in range(1, self.opts.rounds + 1):
                    for store in self.opts.stores:
                        self._add(self.ours(store, n))  # raw beside it, on the same site
                        self._add(self.ours(store, n, render="js"))

    def _rounds(self) -> None:
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
            with self.at(self.opts.pages[0]):
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
        f"site: {', '.join(f'{n:,}' for n in opts.pages)} pages of ~8 KB, ~20 internal links "
        "each, robots.txt (Disallow: /private/, linked from every 250th page below "
        f"{MAX_PAGES:,} pages) and sitemap.xml (an index past {SITEMAP_URLS:,} URLs), served "
        "from memory by a raw asyncio server (bench/lib/auditsite.py)",
        *(
            [f'ours with render: "js" on a {opts.render:,}-page site beside ours raw on it']
            if opts.render
            else []
        ),
        f"concurrency {opts.concurrency} for all three, no delay; ours: "
        f"SEOJOBS_SITE_AUDIT_CONCURRENCY={opts.concurrency}, SEOJOBS_FETCH_HOST_CONCURRENCY="
        f"{opts.concurrency}, SEOJOBS_FETCH_HOST_DELAY=0, every check on (external links, "
        "sitemaps), every page stored",
    ]


def _notes(bench: Bench) -> list[str]:
    notes = [
        "seojobs: clock = the job's started_at (claim) to completed_at (site-wide checks and "
        "summary written); CPU = the worker process's over the job; peak RSS = its VmHWM "
        '(render "js": the largest sum of PSS sampled every 0.1 s over the worker, Node and '
        "Chromium, if larger).",
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
        if opts.pin:
            os.sched_setaffinity(0, {0})
        dbs = Databases(
            stack,
            sqlite="sqlite" in opts.stores,
            postgres="pg" in opts.stores,
            prefix="seojobs_audit",
        )
        bench = Bench(opts, dbs, tmp, results)
        results.environment = _environment(opts, bench)
        bench.run_all()
        if opts.profile:
            profile = bench.profile()
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
