"""``bench/audit.py``'s report: every run, the medians per system, the ratios within each
round, and the targets (issues 13 and 26) marked PASS or FAIL."""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

from bench.lib.cli import columns, failed, judged

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
            ours = max(r.peak_rss for r in runs)
            found.append(
                (
                    f"{label} peak RSS <= advertools'",
                    f"{_mb(ours)} vs {_mb(peer_rss)}",
                    ours <= peer_rss,
                )
            )
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
