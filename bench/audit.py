"""Site-audit crawl benchmark; what it measures and its targets: docs/bench/audit.md."""

from __future__ import annotations

import os
import sys

sys.path[0] = os.path.dirname(sys.path[0])  # the repo, not bench/ (queue.py)

import importlib.util
import json
import statistics
import subprocess
from argparse import Namespace as Options  # what parse_args returns
from collections import defaultdict
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from bench.lib import REPO, core, spy
from bench.lib.auditsite import MAX_PAGES, SITEMAP_URLS, private_links
from bench.lib.core import Target
from bench.lib.ours import Scratch, audit
from bench.lib.report import Report
from bench.lib.site import AuditSiteProcess as Site

OURS = "seojobs"
PEER = "advertools"
BARE = "bare aiohttp+selectolax"
PEER_FACTOR = 8.0  # ours >= 8 x advertools' pages/s (issue 30.6; 26 asked 6, 13 asked 4)
BARE_FACTOR = 0.25  # ours >= 0.25 x the bare loop's pages/s (issue 30.6; 13 asked 0.2)
RSS_LIMIT = 300e6  # our worker's peak RSS at any size, up to 100,000 pages (issue 30.6)
PG_FACTOR = 0.9  # ours on PostgreSQL >= 0.9 x ours on SQLite (issue 26)
SQLITE, PG = f"{OURS} (sqlite)", f"{OURS} (pg)"
RENDER = "render"  # in the label of a rendered audit's runs: reported beside the raw, not judged
SYSTEMS = ("ours", "advertools", "bare")
STORES = ("sqlite", "pg")
PEER_PYTHON = REPO / ".venv-peer" / "bin" / "python"
SAMPLE = 0.05  # seconds between RSS samples of a crawler's process tree


@dataclass(frozen=True)
class Run:
    system: str
    store: str  # sqlite / pg for ours, "-" for the others
    round: int
    pages: int
    seconds: float
    cpu: float
    peak_rss: int  # bytes
    load: str  # the 1-minute load average when the run ended

    @property
    def label(self) -> str:
        return self.system if self.store == "-" else f"{self.system} ({self.store})"

    @property
    def rate(self) -> float:
        return self.pages / self.seconds

    @property
    def cpu_ms_per_page(self) -> float:
        return 1000 * self.cpu / self.pages


def _mb(value: float) -> str:
    return f"{value / 1e6:,.0f} MB"


def by_label(runs: list[Run]) -> dict[str, list[Run]]:
    found: dict[str, list[Run]] = defaultdict(list)
    for run in runs:
        found[run.label].append(run)
    return found


def pairs(runs: list[Run], ours: str, other: str) -> list[tuple[Run, Run]]:
    """(ours, other) for every round that ran both, on a site of the same size."""
    rounds: dict[tuple[int, int], dict[str, Run]] = defaultdict(dict)
    for run in runs:
        rounds[run.pages, run.round][run.label] = run
    return [(r[ours], r[other]) for r in rounds.values() if ours in r and other in r]


def _faster(runs: list[Run], ours: str, other: str, factor: float, whose: str) -> list[Target]:
    """ours' pages/s >= ``factor`` x ``other``'s, on the median of the rounds' ratios."""
    ratios = [a.rate / b.rate for a, b in pairs(runs, ours, other)]
    if not ratios:
        return []
    ratio = statistics.median(ratios)
    return [(f"{ours} >= {factor:g} x {whose} pages/s", f"{ratio:.3g}x", ratio >= factor)]


def targets(runs: list[Run]) -> list[Target]:
    """(target, the measured value, passed) for every store of ours that ran."""
    found: list[Target] = []
    labels = by_label(runs)
    peer_rss = max((r.peak_rss for r in labels.get(PEER, [])), default=0)
    for label, mine in labels.items():
        if not label.startswith(OURS) or RENDER in label:
            continue
        for pages in sorted({r.pages for r in mine}):
            peak = max(r.peak_rss for r in mine if r.pages == pages)
            target = f"{label} peak RSS <= {_mb(RSS_LIMIT)} at {pages:,} pages"
            found.append((target, _mb(peak), peak <= RSS_LIMIT))
        found += _faster(runs, label, PEER, PEER_FACTOR, "advertools'")
        found += _faster(runs, label, BARE, BARE_FACTOR, "the bare loop's")
        if peer_rss:
            ours, what = max(r.peak_rss for r in mine), f"{label} peak RSS <= advertools'"
            found.append((what, f"{_mb(ours)} vs {_mb(peer_rss)}", ours <= peer_rss))
    return found + _faster(runs, PG, SQLITE, PG_FACTOR, f"{SQLITE}'s")


MEDIANS: list[tuple[str, Callable[[tuple[str, list[Run]]], str]]] = [
    ("system", lambda lr: lr[0]),
    ("runs", lambda lr: str(len(lr[1]))),
    ("median pages/s", lambda lr: f"{statistics.median(r.rate for r in lr[1]):,.0f}"),
    ("median CPU ms/page", lambda lr: f"{statistics.median(r.cpu_ms_per_page for r in lr[1]):.2f}"),
    ("max peak RSS", lambda lr: _mb(max(r.peak_rss for r in lr[1]))),
]


def medians(runs: list[Run]) -> list[str]:
    """The medians by system, then ours against each other system, round by round."""
    if not runs:
        return []
    lines = core.columns(MEDIANS, by_label(runs).items())
    for label in by_label(runs):
        for other in (PEER, BARE, SQLITE):
            found = pairs(runs, label, other) if label.startswith(OURS) else []
            if found and label != other:
                rate = ", ".join(f"{a.rate / b.rate:.2f}" for a, b in found)
                cpu = ", ".join(f"{b.cpu_ms_per_page / a.cpu_ms_per_page:.2f}" for a, b in found)
                lines.append(
                    f"  {label} / {other}, per round: pages/s {rate}; pages per CPU-second {cpu}"
                )
    return lines


def report() -> Report[Run]:
    return Report(
        "site audit crawl",
        [
            ("system", lambda r: r.label),
            ("round", lambda r: str(r.round)),
            ("pages", lambda r: f"{r.pages:,}"),
            ("seconds", lambda r: f"{r.seconds:.1f}"),
            ("pages/s", lambda r: f"{r.rate:,.0f}"),
            ("CPU ms/page", lambda r: f"{r.cpu_ms_per_page:.2f}"),
            ("peak RSS", lambda r: _mb(r.peak_rss)),
            ("load (1 min)", lambda r: r.load),
        ],
        targets,
        lambda r: (
            f"round {r.round} {r.label}: {r.rate:,.0f} pages/s, "
            f"{r.cpu_ms_per_page:.2f} CPU ms/page, peak RSS {r.peak_rss / 1e6:,.0f} MB"
        ),
        [medians],
    )


def parse_args(argv: list[str] | None) -> Options:
    parser = core.parser(
        "bench/audit.py",
        "Crawl a generated local site with a seojobs site_audit job, advertools.crawl and a "
        "bare aiohttp + selectolax loop, side by side.",
    )
    add = parser.add_argument
    add("--pages", type=core.positive_ints, default="5000", help="site size(s), e.g. 5000,20000")
    add("--concurrency", type=int, default=16, help="for all three")
    add("--store", dest="stores", type=core.choice(STORES), default="sqlite", help="sqlite,pg")
    add("--only", type=core.choice(SYSTEMS), default=",".join(SYSTEMS), help="systems")
    add("--rounds", type=int, default=3, help="rounds of every run")
    peer = os.environ.get("SEOJOBS_BENCH_PEER_PYTHON", PEER_PYTHON)
    add("--peer-python", type=Path, default=peer, help="a Python with advertools installed")
    add("--no-pin", dest="pin", action="store_false", help="do not pin the processes to CPUs")
    add("--render", type=int, default=0, metavar="PAGES", help='also ours, render "js", once')
    add("--profile", action="store_true", help="one more audit of ours under py-spy")
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
    return args


def _load() -> str:
    return core.loadavg().split(",")[0]


class Bench:
    """The runs on the site of one size (``site``, ``pages``), added to ``report``."""

    site: Site
    pages: int

    def __init__(self, opts: Options, dbs: Scratch, report: Report[Run]) -> None:
        self.opts, self.dbs, self.report = opts, dbs, report
        self.cpu = 0 if opts.pin else None
        self.version = ""  # advertools' and Scrapy's, once it ran
        self.stats: dict[int, dict[str, int]] = {}  # the site servers' counts, by size

    def at(self, pages: int, runs: Callable[[], None]) -> None:
        """``runs`` with a site of ``pages`` pages served."""
        with Site(pages, 1 if self.opts.pin else None) as self.site:
            self.pages = pages
            try:
                runs()
            finally:
                self.stats[pages] = self.site.stats()

    def _expect(self, label: str, pages: int) -> None:
        if pages != self.pages:
            raise RuntimeError(f"{label} crawled {pages} pages, expected {self.pages}")

    def ours(
        self, store: str, n: int, on_start: Callable[[int], None] | None = None, render: str = "raw"
    ) -> Run:
        with self.dbs.fresh(store) as (url, user_id):
            got = audit(
                url,
                user_id,
                self.site.url,
                self.opts.concurrency,
                max_pages=min(2 * self.pages, MAX_PAGES),
                log=self.dbs.root / "worker.log",
                cpu=self.cpu,
                on_start=on_start,
                render=render,
            )
        label = store if render == "raw" else f"{store}, render {render}"
        self._expect(f"seojobs ({label})", got.pages)
        blocked = len(private_links(self.pages))
        if got.blocked != blocked:
            raise RuntimeError(f"seojobs stored {got.blocked} blocked links, not {blocked}")
        return Run(OURS, label, n, got.pages, got.seconds, got.cpu, got.peak_rss, _load())

    def crawler(self, system: str, n: int) -> Run:
        """One run of a crawler process (``python -m bench.lib.crawl_<system>``), pinned like
        our worker, the peak RSS of its process tree sampled."""
        output = self.dbs.root / f"advertools_{n}.jl"
        output.unlink(missing_ok=True)  # advertools appends to an existing file
        if system == PEER:
            args = [str(self.opts.peer_python), "-m", "bench.lib.crawl_advertools", str(output)]
        else:
            args = [sys.executable, "-m", "bench.lib.crawl_bare"]
        cpu = self.cpu
        proc = subprocess.Popen(
            [*args, self.site.url, str(self.opts.concurrency)],
            cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO)},
            stdout=subprocess.PIPE,
            preexec_fn=(lambda: os.sched_setaffinity(0, {cpu})) if cpu is not None else None,
        )
        sampler = core.TreeSampler(proc.pid, interval=SAMPLE)
        out, _ = proc.communicate()
        peak = sampler.stop()
        output.unlink(missing_ok=True)
        if proc.returncode != 0:
            raise RuntimeError(f"{args[2]} exited with {proc.returncode}")
        got = json.loads(out.splitlines()[-1])
        self._expect(system, int(got["pages"]))
        if got.get("private"):
            raise RuntimeError(f"advertools fetched {got['private']} disallowed pages")
        self.version = got.get("version", self.version)
        return Run(system, "-", n, self.pages, got["seconds"], got["cpu"], peak, _load())

    def rounds(self, render: bool = False) -> None:
        """Every round on the site: ours on each store then the peers (one after the other, so
        a burst of other load meets them alike); with ``render``, ours raw then rendered."""
        add, only = self.report.add, self.opts.only
        for n in range(1, self.opts.rounds + 1):
            for store in self.opts.stores if render or "ours" in only else ():
                add(self.ours(store, n))
                if render:
                    add(self.ours(store, n, render="js"))
            for system, name in ((PEER, "advertools"), (BARE, "bare")):
                if name in only and not render:
                    add(self.crawler(system, n))

    def profile(self) -> list[str]:
        """One more audit of ours under py-spy: where the worker's GIL time goes."""
        store, runs = self.opts.stores[0], list[Run]()
        core.progress(f"profile: one more audit ({store}) under py-spy")
        with ExitStack() as stack:
            got: list[spy.Recording] = []

            def attach(pid: int) -> None:  # py-spy attached before the job is created
                got.append(stack.enter_context(spy.recording(pid, spy.SELF_RATE)))

            self.at(self.opts.pages[0], lambda: runs.append(self.ours(store, 0, attach)))
        pages = runs[0].pages
        return spy.shares(
            got[0].raw,
            spy.AUDIT_CATEGORIES,
            lambda n, _total: n / spy.SELF_RATE / pages * 1000,
            f"profile: {{total:,}} GIL samples at {spy.SELF_RATE} Hz over one audit of {pages:,} "
            "pages ({all:.3f} ms of GIL time per page; sampling slows the run); ms per page:",
        )


def environment(opts: Options) -> list[str]:
    pin = (
        "crawlers (our worker, advertools and its Scrapy child, the bare loop) pinned to "
        "CPU 0, the site server to CPU 1"
        if opts.pin
        else "no CPU pinning"
    )
    render = f'ours with render: "js" on a {opts.render:,}-page site beside ours raw on it'
    return [
        core.versions("aiohttp", "selectolax", "sqlalchemy", "psycopg"),
        pin,
        f"site: {', '.join(f'{n:,}' for n in opts.pages)} pages of ~8 KB, ~20 internal links "
        "each, robots.txt (Disallow: /private/, linked from every 250th page below "
        f"{MAX_PAGES:,} pages) and sitemap.xml (an index past {SITEMAP_URLS:,} URLs), served "
        "from memory by a raw asyncio server (bench/lib/auditsite.py)",
        *([render] if opts.render else []),
        f"concurrency {opts.concurrency} for all three, no delay; ours: "
        f"SEOJOBS_SITE_AUDIT_CONCURRENCY={opts.concurrency}, SEOJOBS_FETCH_HOST_CONCURRENCY="
        f"{opts.concurrency}, SEOJOBS_FETCH_HOST_DELAY=0, every check on (external links, "
        "sitemaps), every page stored",
    ]


def main(argv: list[str] | None = None) -> int:
    opts = parse_args(argv)
    results = report()

    def body(stack: ExitStack) -> None:
        dbs = Scratch(stack, postgres="pg" in opts.stores, prefix="seojobs_audit")
        bench = Bench(opts, dbs, results)
        results.start(dbs.pg, *environment(opts))
        for pages in opts.pages:
            bench.at(pages, bench.rounds)
        if opts.render:
            bench.at(opts.render, lambda: bench.rounds(render=True))
        if opts.profile:
            results.extra = bench.profile()
        results.notes = [
            "clocks, CPU and peak RSS of each system: docs/bench/audit.md; ratios are taken "
            "within each round and the targets judged on their median",
            *([f"peer: {bench.version}"] if bench.version else []),
            f"site server: {bench.stats} (requests for /private/ must be 0)",
        ]

    return results.main(body, "processes stopped, scratch databases removed", opts.pin)


if __name__ == "__main__":
    raise SystemExit(main())
