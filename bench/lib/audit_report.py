"""``bench/audit.py``'s report: every run, the medians per system, the ratios within each
round, and the targets (from issue 13) marked PASS or FAIL."""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass, field

from bench.lib.cli import table, verdict

OURS = "seojobs"
PEER = "advertools"
BARE = "bare aiohttp+selectolax"
PEER_FACTOR = 4.0  # ours >= 4 x advertools' pages/s
BARE_FACTOR = 0.2  # ours >= 0.2 x the bare loop's pages/s


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
        """(ours, other) for every round that ran both."""
        rounds: dict[int, dict[str, Run]] = defaultdict(dict)
        for run in self.runs:
            rounds[run.round][run.label] = run
        return [(r[ours], r[other]) for r in rounds.values() if ours in r and other in r]

    def ratios(self, ours: str, other: str) -> list[float]:
        """ours' pages/s over ``other``'s, one per round that ran both."""
        return [a.rate / b.rate for a, b in self.pairs(ours, other)]


def _mb(value: float) -> str:
    return f"{value / 1e6:,.0f} MB"


def _rows(results: Results) -> list[list[str]]:
    return [
        [
            run.label,
            str(run.round),
            f"{run.pages:,}",
            f"{run.seconds:.1f}",
            f"{run.rate:,.0f}",
            f"{run.cpu_ms_per_page:.2f}",
            _mb(run.peak_rss),
            run.load,
        ]
        for run in results.runs
    ]


def _median_rows(results: Results) -> list[list[str]]:
    rows = []
    for label, runs in results.by_label().items():
        rows.append(
            [
                label,
                str(len(runs)),
                f"{statistics.median(r.rate for r in runs):,.0f}",
                f"{statistics.median(r.cpu_ms_per_page for r in runs):.2f}",
                _mb(max(r.peak_rss for r in runs)),
            ]
        )
    return rows


def targets(results: Results) -> list[tuple[str, str, bool]]:
    """(target, the measured value, passed) for every store of ours that ran."""
    found = []
    labels = results.by_label()
    peer_rss = max((r.peak_rss for r in labels.get(PEER, [])), default=0)
    for label, runs in labels.items():
        if not label.startswith(OURS):
            continue
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
    return found


def failures(results: Results) -> list[str]:
    return [f"{name}: {value}" for name, value, ok in targets(results) if not ok]


def render(results: Results) -> str:
    lines = ["", "site audit crawl", *(f"  {line}" for line in results.environment), ""]
    headers = [
        "system",
        "round",
        "pages",
        "seconds",
        "pages/s",
        "CPU ms/page",
        "peak RSS",
        "load (1 min)",
    ]
    lines += table(headers, _rows(results))
    if results.runs:
        lines.append("")
        headers = ["system", "runs", "median pages/s", "median CPU ms/page", "max peak RSS"]
        lines += table(headers, _median_rows(results))
        labels = results.by_label()
        for label in labels:
            for other in (PEER, BARE):
                pairs = results.pairs(label, other) if label.startswith(OURS) else []
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
        lines += table(["target", "measured", ""], [[n, v, verdict(ok)] for n, v, ok in found])
    if results.notes:
        lines += ["", *(f"  - {note}" for note in results.notes)]
    if results.extra:
        lines += ["", *(f"  {line}" for line in results.extra)]
    return "\n".join(lines) + "\n"
