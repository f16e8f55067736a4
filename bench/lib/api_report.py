"""``bench/api.py``'s samples, summary rows, targets and printed report."""

from __future__ import annotations

from argparse import Namespace
from collections.abc import Callable
from dataclasses import dataclass, field

from bench.lib import spy
from bench.lib.cli import columns, median, table, verdict
from bench.lib.load import Load

TARGET_RATIO = 0.5
TARGET_P99_MS = 25.0
# The closed-loop p99 is judged up to this many connections (and always at the fixed load):
# beyond, a saturated server's p99 is the length of the queue wrk keeps full (docs/bench/api.md).
P99_JUDGED_UP_TO = 16
SYSTEMS = ("bare", "sqlite", "postgresql")
LABELS = {
    "bare": "bare FastAPI constant",
    "sqlite": "seojobs, SQLite",
    "postgresql": "seojobs, PostgreSQL",
}


@dataclass(frozen=True)
class Sample:
    key: str
    connections: int
    round: int
    load: Load
    server_cpu: float  # CPU seconds of the server process
    others: float  # share of the machine's CPUs used by anything but server and load generator
    offered: float = 0.0  # req/s offered by a paced run; 0: closed loop

    @property
    def cpu_ms_per_request(self) -> float:
        return self.server_cpu / self.load.requests * 1000 if self.load.requests else 0.0


@dataclass
class Results:
    environment: list[str] = field(default_factory=list)
    setup: list[str] = field(default_factory=list)
    samples: list[Sample] = field(default_factory=list)
    profiles: list[spy.Profile] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Row:
    key: str
    connections: int
    rate: float
    p50: float
    p99: float
    p99_max: float
    cpu_ms: float
    others: float
    ratio: float = 0.0  # median over rounds of ours/bare in the same round (closed loop)
    cpu_ratio: float = 0.0  # bare's CPU ms/req over ours: the req/s ratio if both CPU-bound
    offered: float = 0.0  # the fixed load of a paced row; 0: closed loop

    @property
    def ratio_ok(self) -> bool:
        return self.ratio >= TARGET_RATIO

    @property
    def p99_ok(self) -> bool:
        return self.p99 <= TARGET_P99_MS


def _row(key: str, mine: list[Sample], **extra: float) -> Row:
    """Medians over the rounds of one system's samples (one concurrency, one load shape)."""
    return Row(
        key=key,
        connections=mine[0].connections,
        rate=median([s.load.rate for s in mine]),
        p50=median([s.load.p50_ms for s in mine]),
        p99=median([s.load.p99_ms for s in mine]),
        p99_max=max(s.load.p99_ms for s in mine),
        cpu_ms=median([s.cpu_ms_per_request for s in mine]),
        others=median([s.others for s in mine]),
        offered=mine[0].offered,
        **extra,
    )


def summarise(samples: list[Sample], connections: tuple[int, ...]) -> list[Row]:
    """The closed-loop rows, with each system's ratios to the bare endpoint in the same round."""
    rows = []
    for c in connections:
        closed = [s for s in samples if s.connections == c and not s.offered]
        bare = {s.round: s.load.rate for s in closed if s.key == "bare"}
        bare_cpu = median([s.cpu_ms_per_request for s in closed if s.key == "bare"])
        for key in SYSTEMS:
            mine = [s for s in closed if s.key == key]
            if mine:
                ratios = [s.load.rate / bare[s.round] for s in mine if bare.get(s.round)]
                cpu = median([s.cpu_ms_per_request for s in mine])
                rows.append(_row(key, mine, ratio=median(ratios), cpu_ratio=bare_cpu / cpu))
    return rows


def summarise_paced(samples: list[Sample]) -> list[Row]:
    """The fixed-load rows."""
    found = ([s for s in samples if s.key == key and s.offered] for key in SYSTEMS)
    return [_row(mine[0].key, mine) for mine in found if mine]


def _rates(samples: list[Sample], key: str, c: int) -> str:
    return " / ".join(
        f"{s.load.rate:,.0f}"
        for s in samples
        if s.key == key and s.connections == c and not s.offered
    )


COMMON: list[tuple[str, Callable[[Row], str]]] = [
    ("system", lambda r: LABELS[r.key]),
    ("conns", lambda r: str(r.connections)),
    ("req/s", lambda r: f"{r.rate:,.0f}"),
    ("p50 ms", lambda r: f"{r.p50:.1f}"),
    ("p99 ms", lambda r: f"{r.p99:.1f}"),
    ("worst p99", lambda r: f"{r.p99_max:.1f}"),
    ("CPU ms/req", lambda r: f"{r.cpu_ms:.2f}"),
]


def render(results: Results, opts: Namespace) -> str:
    out = ["", "API status GET benchmark (bench/api.py)", ""]
    out += [f"  {line}" for line in results.environment]
    out += [""] + [f"  {line}" for line in results.setup] + [""]
    rows = summarise(results.samples, opts.connections)
    out.append(
        f"Throughput and latency: medians of {opts.rounds} interleaved round(s) of "
        f"{opts.duration:.0f} s (closed loop, keep-alive)"
    )
    out.append("")
    samples = results.samples
    spec: list[tuple[str, Callable[[Row], str]]] = [
        *COMMON[:3],
        ("per round", lambda r: _rates(samples, r.key, r.connections)),
        *COMMON[3:],
        ("x bare", lambda r: f"{r.ratio:.2f}"),
        ("x bare CPU", lambda r: f"{r.cpu_ratio:.2f}"),
        ("other load", lambda r: f"{r.others:.0%}"),
    ]
    out += columns(spec, rows)
    out += [
        "",
        "  x bare: our req/s over the bare endpoint's in the same round (median of rounds).",
        "  CPU ms/req: user+system CPU of the server process per answered request.",
        "  x bare CPU: the bare endpoint's CPU ms/req over ours, the ratio the req/s would have",
        "  if both servers were CPU-bound (steadier than req/s when other work shares the CPUs;",
        "  PostgreSQL's own CPU is not in it).",
        "  other load: share of the machine's CPUs busy with anything but the server and the",
        "  load generator (other users' processes; for PostgreSQL rows also its backends).",
        "",
    ]
    paced = summarise_paced(results.samples)
    if paced:
        first = paced[0]
        pause = first.connections / first.offered * 1000
        out += [
            f"Latency at a fixed load: {first.offered:,.0f} req/s offered to every system "
            f"({opts.paced_share:.0%} of the bare endpoint's best req/s above) over "
            f"{first.connections} connections,",
            f"each pausing a random time (exponential, mean {pause:.0f} ms) after every answer; "
            "medians of the rounds",
            "",
        ]
        offered = ("offered", lambda r: f"{r.offered:,.0f}")
        out += columns([*COMMON[:2], offered, *COMMON[2:]], paced)
        out += [
            "",
            "  A connection pauses after each answer, so it sends at 1 / (pause + latency): a",
            "  server that answers slower is offered a little less (wrk cannot correct for that).",
            "  req/s far below the offered load means the server could not keep up.",
            "",
        ]
    out += [
        f"Targets: >= {TARGET_RATIO:.0%} of the bare endpoint's throughput, p99 <= "
        f"{TARGET_P99_MS:.0f} ms",
        "",
    ]
    out += table(
        ["system", "conns", "throughput vs bare", "p99, closed loop"],
        [
            [
                LABELS[r.key],
                str(r.connections),
                f"{verdict(r.ratio_ok)} ({r.ratio:.2f} x)",
                f"{verdict(r.p99_ok)} ({r.p99:.1f} ms)",
            ]
            for r in rows
            if r.key != "bare"
        ]
        + [
            [
                LABELS[r.key],
                f"{r.connections}, fixed load",
                "-",
                f"{verdict(r.p99_ok)} ({r.p99:.1f} ms)",
            ]
            for r in paced
            if r.key != "bare"
        ],
    )
    if results.profiles:
        out += ["", "Profiles (py-spy record --gil, during a separate run):", ""]
        for prof in results.profiles:
            brief = prof.label.startswith(LABELS["bare"])
            out += [f"  {line}" if line else "" for line in spy.render(prof, brief)]
            out.append("")
    if results.notes:
        out += ["", *(f"  note: {n}" for n in results.notes)]
    return "\n".join(out) + "\n"


def failures(results: Results, connections: tuple[int, ...]) -> list[str]:
    """The targets that failed, one line each: throughput at every concurrency, p99 where it is
    judged (see ``P99_JUDGED_UP_TO``) and at the fixed load."""
    failed = []
    for row in summarise(results.samples, connections):
        if row.key == "bare":
            continue
        where = f"{LABELS[row.key]}, {row.connections} connections"
        if not row.ratio_ok:
            failed.append(f"{where}: {row.ratio:.2f} x bare < {TARGET_RATIO}")
        if row.connections <= P99_JUDGED_UP_TO and not row.p99_ok:
            failed.append(f"{where}: p99 {row.p99:.1f} ms > {TARGET_P99_MS:.0f} ms")
    for row in summarise_paced(results.samples):
        if row.key != "bare" and not row.p99_ok:
            failed.append(f"{LABELS[row.key]}, fixed load: p99 {row.p99:.1f} ms")
    return failed
