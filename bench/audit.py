"""Site-audit crawl benchmark: ``python bench/audit.py [--store sqlite|pg] [--rounds N] [...]``.

What it measures, its targets and how to read its report: docs/bench/audit.md.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path[0] = str(Path(__file__).resolve().parents[1])  # the repo, not bench/ (queue.py)

import importlib.util
import json
import os
import statistics
import subprocess
import time
from argparse import Namespace as Options  # what parse_args returns
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field

from bench.lib import REPO, core, spy
from bench.lib.auditsite import MAX_PAGES, SITEMAP_URLS, private_links
from bench.lib.core import columns, failed, judged
from bench.lib.ours import Scratch, audit
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


@dataclass
class Results:
    runs: list[Run] = field(default_factory=list)
    environment: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)  # printed last, as they are (a profile)

    def by_label(self) -> dict[str, list[Run]]:
        found: dict[str, list[Run]] = defaultdict(list)
        for run in self.runs:
            found[run.label].append(run)
        return found

    def pairs(self, ours: str, other: str) -> list[tuple[Run, Run]]:
        """(ours, other) for every round that ran both, on a site of the same size."""
        rounds: dict[tuple[int, int], dict[str, Run]] = defaultdict(dict)
        for run in self.runs:
            rounds[run.pages, run.round][run.label] = run
        return [(r[ours], r[other]) for r in rounds.values() if ours in r and other in r]

    def ratios(self, ours: str, other: str) -> list[float]:
        """ours' pages/s over ``other``'s, one per round that ran both."""
        return [a.rate / b.rate for a, b in self.pairs(ours, other)]


def _mb(value: float) -> str:
    return f"{value / 1e6:,.0f} MB"


RUNS: list[tuple[str, Callable[[Run], str]]] = [
    ("system", lambda r: r.label),
    ("round", lambda r: str(r.round)),
    ("pages", lambda r: f"{r.pages:,}"),
    ("seconds", lambda r: f"{r.seconds:.1f}"),
    ("pages/s", lambda r: f"{r.rate:,.0f}"),
    ("CPU ms/page", lambda r: f"{r.cpu_ms_per_page:.2f}"),
    ("peak RSS", lambda r: _mb(r.peak_rss)),
    ("load (1 min)", lambda r: r.load),
]
MEDIANS: list[tuple[str, Callable[[tuple[str, list[Run]]], str]]] = [
    ("system", lambda lr: lr[0]),
    ("runs", lambda lr: str(len(lr[1]))),
    ("median pages/s", lambda lr: f"{statistics.median(r.rate for r in lr[1]):,.0f}"),
    ("median CPU ms/page", lambda lr: f"{statistics.median(r.cpu_ms_per_page for r in lr[1]):.2f}"),
    ("max peak RSS", lambda lr: _mb(max(r.peak_rss for r in lr[1]))),
]


def targets(results: Results) -> list[tuple[str, str, bool]]:
    """(target, the measured value, passed) for every store of ours that ran."""
    found = []
    labels = results.by_label()
    peer_rss = max((r.peak_rss for r in labels.get(PEER, [])), default=0)
    for label, runs in labels.items():
        if not label.startswith(OURS) or RENDER in label:
            continue
        for pages in sorted({r.pages for r in runs}):
            peak = max(r.peak_rss for r in runs if r.pages == pages)
            target = f"{label} peak RSS <= {_mb(RSS_LIMIT)} at {pages:,} pages"
            found.append((target, _mb(peak), peak <= RSS_LIMIT))
        for other, factor, name in (
            (PEER, PEER_FACTOR, "advertools'"),
            (BARE, BARE_FACTOR, "the bare loop's"),
        ):
            ratios = results.ratios(label, other)
            if ratios:
                ratio = statistics.median(ratios)
                target = f"{label} >= {factor:g} x {name} pages/s"
                found.append((target, f"{ratio:.3g}x", ratio >= factor))
        if peer_rss:
            ours, what = max(r.peak_rss for r in runs), f"{label} peak RSS <= advertools'"
            found.append((what, f"{_mb(ours)} vs {_mb(peer_rss)}", ours <= peer_rss))
    ratios = results.ratios(PG, SQLITE)
    if ratios:
        ratio = statistics.median(ratios)
        target = f"{PG} >= {PG_FACTOR:g} x {SQLITE}'s pages/s"
        found.append((target, f"{ratio:.3g}x", ratio >= PG_FACTOR))
    return found


def failures(results: Results) -> list[str]:
    return failed(targets(results))


def render(results: Results) -> str:
    lines = ["", "site audit crawl", *(f"  {line}" for line in results.environment), ""]
    lines += columns(RUNS, results.runs)
    if results.runs:
        lines.append("")
        lines += columns(MEDIANS, results.by_label().items())
        labels = results.by_label()
        for label in labels:
            for other in (PEER, BARE, SQLITE):
                pairs = results.pairs(label, other) if label.startswith(OURS) else []
                pairs = pairs if label != other else []
                if pairs:
                    rate = ", ".join(f"{a.rate / b.rate:.2f}" for a, b in pairs)
                    cpu = ", ".join(
                        f"{b.cpu_ms_per_page / a.cpu_ms_per_page:.2f}" for a, b in pairs
                    )
                    lines.append(
                        f"  {label} / {other}, per round: pages/s {rate}; "
                        f"pages per CPU-second {cpu}"
                    )
    found = targets(results)
    if found:
        lines.append("")
        lines += judged(found)
    if results.notes:
        lines += ["", *(f"  - {note}" for note in results.notes)]
    if results.extra:
        lines += ["", *(f"  {line}" for line in results.extra)]
    return "\n".join(lines) + "\n"


SYSTEMS = ("ours", "advertools", "bare")
STORES = ("sqlite", "pg")
PEER_PYTHON = REPO / ".venv-peer" / "bin" / "python"
SAMPLE = 0.05  # seconds between RSS samples of a crawler's process tree


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
    sampler = core.TreeSampler(proc.pid, interval=SAMPLE)
    out, _ = proc.communicate()
    peak = sampler.stop()
    if proc.returncode != 0:
        raise RuntimeError(f"{args[2]} exited with {proc.returncode}")
    return json.loads(out.splitlines()[-1]), peak


class Bench:
    def __init__(self, opts: Options, dbs: Scratch, tmp: Path, results: Results) -> None:
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
        core.progress(
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
        core.progress(f"profile: one more audit ({store}) under py-spy")
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
    return core.loadavg().split(",")[0]


def _environment(opts: Options, bench: Bench) -> list[str]:
    pg = bench.dbs.pg
    pin = (
        "crawlers (our worker, advertools and its Scrapy child, the bare loop) pinned to "
        "CPU 0, the site server to CPU 1"
        if opts.pin
        else "no CPU pinning"
    )
    return [
        core.machine(pg) + f"; load average at start {core.loadavg()}",
        core.versions("aiohttp", "selectolax", "sqlalchemy", "psycopg"),
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
        "clocks, CPU and peak RSS of each system: docs/bench/audit.md; ratios are taken within "
        "each round and the targets judged on their median"
    ]
    if bench.version:
        notes.insert(1, f"peer: {bench.version}")
    if bench.stats:
        notes.append(f"site server: {bench.stats} (requests for /private/ must be 0)")
    return notes


def main(argv: list[str] | None = None) -> int:
    opts = parse_args(argv)
    results = Results()
    started = time.monotonic()

    def body(stack: ExitStack) -> None:
        if opts.pin:
            os.sched_setaffinity(0, {0})
        dbs = Scratch(stack, postgres="pg" in opts.stores, prefix="seojobs_audit")
        bench = Bench(opts, dbs, dbs.root, results)
        results.environment = _environment(opts, bench)
        bench.run_all()
        if opts.profile:
            results.extra = bench.profile()
        results.notes = _notes(bench)
        results.environment.append(core.wall(started))

    return core.run(
        body,
        lambda: render(results),
        lambda: failures(results),
        "processes stopped, scratch databases removed",
    )


if __name__ == "__main__":
    raise SystemExit(main())
