"""``bench/queue.py``'s printed report: throughput table, ratios, wake-up latency, targets."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from bench.lib.cli import columns, failed, judged, table
from bench.lib.jobs import Burn, Wake

TARGET_RATE = 10_000.0
TARGET_RATIO = {"sqlite": 0.30, "postgresql": 0.55}  # x its bare loop (issue 23)
TARGET_PEER = 15.0  # PostgreSQL jobs/s x Procrastinate's
TARGET_WAKE = 0.050


@dataclass
class Results:
    jobs: int
    environment: list[str] = field(default_factory=list)
    burns: list[Burn] = field(default_factory=list)
    wakes: list[Wake] = field(default_factory=list)
    unfinished: list[str] = field(default_factory=list)  # peer burn-downs that timed out

    def runs(self, system_prefix: str, dialect: str) -> list[Burn]:
        return [
            b for b in self.burns if b.system.startswith(system_prefix) and b.dialect == dialect
        ]

    def best(self, system_prefix: str, dialect: str) -> Burn | None:
        runs = self.runs(system_prefix, dialect)
        return max(runs, key=lambda b: b.rate) if runs else None

    def wake(self, dialect: str) -> Wake | None:
        """The headline wake-up for a dialect: the first seojobs measurement made on it."""
        return next((w for w in self.wakes if w.system == "seojobs" and w.dialect == dialect), None)

    def peer_wake(self) -> Wake | None:
        return next((w for w in self.wakes if w.system.startswith("procrastinate")), None)


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def _concurrency_note(results: Results, best: Burn) -> str:
    tried = sorted({b.concurrency for b in results.runs(best.system, best.dialect)})
    if len(tried) == 1:
        return str(best.concurrency)
    return f"{best.concurrency} (best of {', '.join(map(str, tried))})"


ORDER = (
    ("seojobs", "sqlite"),
    ("bare loop", "sqlite"),
    ("seojobs", "postgresql"),
    ("procrastinate", "postgresql"),
    ("bare loop", "postgresql"),
)


EVERY_RUN: list[tuple[str, Callable[[Burn], str]]] = [
    ("system", lambda b: b.system),
    ("dialect", lambda b: b.dialect),
    ("concurrency", lambda b: str(b.concurrency)),
    ("seconds", lambda b: f"{b.seconds:.2f}"),
    ("jobs/s", lambda b: f"{b.rate:,.0f}"),
    ("handler runs", lambda b: "-" if b.handler_runs is None else f"{b.handler_runs:,}"),
]
WAKES: list[tuple[str, Callable[[Wake], str]]] = [
    ("system", lambda w: w.system),
    ("dialect", lambda w: w.dialect),
    ("wake-up path", lambda w: w.how),
    ("samples", lambda w: str(len(w.samples))),
    ("median", lambda w: _ms(w.median)),
    ("p90", lambda w: _ms(w.p90)),
    ("enqueue call", lambda w: _ms(w.enqueue_median)),
]


def render(results: Results) -> str:
    out: list[str] = ["", "seojobs queue benchmark (bench/queue.py)", ""]
    out += [f"  {line}" for line in results.environment]
    out += [
        f"  {results.jobs:,} no-op jobs per burn-down, pre-inserted before the clock starts; the",
        "  clock runs from worker start until the database shows every job done.",
        "",
        "Throughput (best run per system)",
    ]
    rows = []
    for system, dialect in ORDER:
        best = results.best(system, dialect)
        if best is None:
            continue
        conc = "1 connection" if system == "bare loop" else _concurrency_note(results, best)
        rows.append([best.system, dialect, conc, f"{best.seconds:.2f}", f"{best.rate:,.0f}"])
    if rows:
        out += table(["system", "dialect", "concurrency", "seconds", "jobs/s"], rows, {3, 4})
    out += ["", "Every run"]
    if results.burns:
        out += columns(EVERY_RUN, results.burns, {2, 3, 4, 5})
    if results.unfinished:
        out += ["", "Did not finish (given up below 100 jobs/s)"]
        out += [f"  {line}" for line in results.unfinished]
    out += _ratios(results)
    out += _wakes(results)
    out += _targets(results)
    return "\n".join(out) + "\n"


def _ratios(results: Results) -> list[str]:
    rows = []
    for dialect in ("sqlite", "postgresql"):
        ours = results.best("seojobs", dialect)
        if ours is None:
            continue
        bare = results.best("bare loop", dialect)
        if bare is not None:
            rows.append([dialect, "seojobs / bare loop", f"{ours.rate / bare.rate:.3f}"])
        peer = results.best("procrastinate", dialect)
        if peer is not None:
            rows.append([dialect, "seojobs / procrastinate", f"{ours.rate / peer.rate:.2f}"])
    if not rows:
        return []
    return ["", "Ratios (best runs)", *table(["dialect", "ratio", "value"], rows, {2})]


def _wakes(results: Results) -> list[str]:
    if not results.wakes:
        return []
    return [
        "",
        "Wake-up latency: enqueue (before the insert) to handler start, on an idle worker",
        *columns(WAKES, results.wakes, {3, 4, 5, 6}),
        "  enqueue call: median time from before the enqueue to its return (ours: one insert",
        "  transaction in a thread; Procrastinate: defer_async); the rest is the worker's side.",
    ]


def checks(results: Results) -> list[tuple[str, str, bool]]:
    """(target, measured, passed) for every target the run measured."""
    out = []
    for dialect, label in (("postgresql", "PostgreSQL"), ("sqlite", "SQLite")):
        ours = results.best("seojobs", dialect)
        if ours is None:
            continue
        target = f"{label} >= {TARGET_RATE:,.0f} jobs/s"
        out.append((target, f"{ours.rate:,.0f}", ours.rate >= TARGET_RATE))
        bare = results.best("bare loop", dialect)
        if bare is not None:
            ratio = ours.rate / bare.rate
            target = f"{label} >= {TARGET_RATIO[dialect]:.2f} x its bare loop"
            out.append((target, f"{ratio:.3f}", ratio >= TARGET_RATIO[dialect]))
        peer = results.best("procrastinate", dialect) if dialect == "postgresql" else None
        if ours is not None and peer is not None:
            times = ours.rate / peer.rate
            target = f"{label} >= {TARGET_PEER:.0f} x Procrastinate"
            out.append((target, f"{times:.1f}", times >= TARGET_PEER))
    for dialect, label in (("sqlite", "SQLite"), ("postgresql", "PostgreSQL")):
        wake = results.wake(dialect)
        if wake is not None:
            target = f"{label} median wake-up < {TARGET_WAKE * 1000:.0f} ms"
            out.append((target, _ms(wake.median), wake.median < TARGET_WAKE))
    wake, peer = results.wake("postgresql"), results.peer_wake()
    if wake is not None and peer is not None:
        measured = f"{_ms(wake.median)} vs {_ms(peer.median)}"
        out.append(
            ("PostgreSQL median wake-up < Procrastinate's", measured, wake.median < peer.median)
        )
    return out


def failures(results: Results) -> list[str]:
    return failed(checks(results))


def _targets(results: Results) -> list[str]:
    found = checks(results)
    if not found:
        return []
    out = ["", "Targets", *judged(found, ("target", "measured", "verdict"))]
    if results.wake("sqlite") is not None:
        out += [
            "  SQLite wake-ups: the in-process hook serves jobs enqueued through the worker's own",
            "  Database object; jobs from another connection or process are seen by the worker's",
            "  50 ms PRAGMA data_version watch (both rows of the wake-up table).",
        ]
    return out
