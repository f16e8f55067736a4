"""API status-GET benchmark; what it measures and its targets: docs/bench/api.md."""

from __future__ import annotations

import os
import sys

sys.path[0] = os.path.dirname(sys.path[0])  # the repo, not bench/ (queue.py)

import json
from argparse import Namespace as Options  # what parse_args returns
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from bench.lib import core, ours, spy
from bench.lib.core import (
    BARE_PATH,
    CONSTANT,
    STATUS_PATH,
    UVICORN_OPTIONS,
    LoadTarget,
    Run,
    Sample,
    Server,
    Target,
    columns,
    median,
    median_of,
    run_wrk,
    wrk_version,
)
from bench.lib.ours import Seeded, seed
from bench.lib.report import Report

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


def _row(samples: list[Sample], what: tuple[str, int, float], **extra: float) -> Row:
    """Medians over the rounds of one system's samples (one concurrency, one load shape:
    ``what`` is (system, connections, the offered req/s of a fixed load or 0))."""
    figures = ("rate", "p50_ms", "p99_ms")
    rate, p50, p99 = (median_of(samples, what, figure) for figure in figures)
    p99_max = max(s.load.p99_ms for s in samples if s.what == what)
    cpu, others = median_of(samples, what, "cpu_ms"), median_of(samples, what, "others")
    return Row(*what[:2], rate, p50, p99, p99_max, cpu, others, offered=what[2], **extra)


def summarise(samples: list[Sample], connections: tuple[int, ...]) -> list[Row]:
    """The closed-loop rows, with each system's ratios to the bare endpoint in the same round."""
    rows = []
    for c in connections:
        bare = {s.round: s.load.rate for s in samples if s.what == ("bare", c, 0.0)}
        bare_cpu = median_of(samples, ("bare", c, 0.0), "cpu_ms")
        for key in SYSTEMS:
            mine = [s for s in samples if s.what == (key, c, 0.0)]
            if mine:
                ratios = [s.load.rate / bare[s.round] for s in mine if bare.get(s.round)]
                cpu_ratio = bare_cpu / median([s.cpu_ms for s in mine])
                rows.append(_row(samples, (key, c, 0.0), ratio=median(ratios), cpu_ratio=cpu_ratio))
    return rows


def summarise_paced(samples: list[Sample]) -> list[Row]:
    """The fixed-load rows."""
    paced = dict.fromkeys(s.what for s in samples if s.what[2])
    return [_row(samples, what) for key in SYSTEMS for what in paced if what[0] == key]


def _rates(samples: list[Sample], key: str, c: int) -> str:
    return " / ".join(f"{s.load.rate:,.0f}" for s in samples if s.what == (key, c, 0.0))


COMMON: list[tuple[str, Callable[[Row], str]]] = [
    ("system", lambda r: LABELS[r.key]),
    ("conns", lambda r: str(r.connections)),
    ("req/s", lambda r: f"{r.rate:,.0f}"),
    ("p50 ms", lambda r: f"{r.p50:.1f}"),
    ("p99 ms", lambda r: f"{r.p99:.1f}"),
    ("worst p99", lambda r: f"{r.p99_max:.1f}"),
    ("CPU ms/req", lambda r: f"{r.cpu_ms:.2f}"),
]


class Results(Report[Sample]):
    """The samples (what: (system, connections, offered req/s or 0)), the profiles."""

    def __init__(self, opts: Options) -> None:
        super().__init__("API status GET benchmark (bench/api.py)", judge=self.targets)
        self.blocks = [self.closed, self.paced, self.profile_lines]
        self.opts = opts
        self.profiles: list[spy.Profile] = []

    def closed(self, samples: list[Sample]) -> list[str]:
        opts = self.opts
        spec: list[tuple[str, Callable[[Row], str]]] = [
            *COMMON[:3],
            ("per round", lambda r: _rates(samples, r.key, r.connections)),
            *COMMON[3:],
            ("x bare", lambda r: f"{r.ratio:.2f}"),
            ("x bare CPU", lambda r: f"{r.cpu_ratio:.2f}"),
            ("other load", lambda r: f"{r.others:.0%}"),
        ]
        return [
            f"Throughput and latency: medians of {opts.rounds} interleaved round(s) of "
            f"{opts.duration:.0f} s (closed loop, keep-alive)",
            *columns(spec, summarise(samples, opts.connections)),
            "  (what each column counts: docs/bench/api.md)",
        ]

    def paced(self, samples: list[Sample]) -> list[str]:
        paced = summarise_paced(samples)
        if not paced:
            return []
        first = paced[0]
        pause = first.connections / first.offered * 1000
        offered = ("offered", lambda r: f"{r.offered:,.0f}")
        return [
            f"Latency at a fixed load: {first.offered:,.0f} req/s offered to every system "
            f"({self.opts.paced_share:.0%} of the bare endpoint's best req/s above) over "
            f"{first.connections} connections,",
            f"each pausing a random time (exponential, mean {pause:.0f} ms) after every answer; "
            "medians of the rounds",
            *columns([*COMMON[:2], offered, *COMMON[2:]], paced),
        ]

    def profile_lines(self, _samples: list[Sample]) -> list[str]:
        out = ["Profiles (py-spy record --gil, during a separate run):"] if self.profiles else []
        for prof in self.profiles:
            brief = prof.label.startswith(LABELS["bare"])
            out += ["", *(f"  {line}" if line else "" for line in spy.render(prof, brief))]
        return out

    def targets(self, samples: list[Sample]) -> list[Target]:
        """Throughput at every concurrency, p99 where it is judged (``P99_JUDGED_UP_TO``) and
        at the fixed load."""
        found = []
        for r in summarise(samples, self.opts.connections):
            if r.key != "bare":
                where = f"{LABELS[r.key]}, {r.connections} connections"
                ratio = f">= {TARGET_RATIO:.0%} of bare's req/s"
                found.append((f"{where}: {ratio}", f"{r.ratio:.2f} x", r.ratio_ok))
                if r.connections <= P99_JUDGED_UP_TO:
                    p99 = f"p99 <= {TARGET_P99_MS:.0f} ms"
                    found.append((f"{where}: {p99}", f"{r.p99:.1f} ms", r.p99_ok))
        for r in summarise_paced(samples):
            if r.key != "bare":
                what = f"{LABELS[r.key]}, fixed load: p99 <= {TARGET_P99_MS:.0f} ms"
                found.append((what, f"{r.p99:.1f} ms", r.p99_ok))
        return found


# -- sanity checks before the load ----------------------------------------------------------


def check_bare(server: Server) -> None:
    """The bare endpoint answers its constant."""
    status, _headers, body = server.get(BARE_PATH, {})
    if status != 200 or json.loads(body) != CONSTANT:
        raise RuntimeError(f"bare endpoint answered {status}: {body[:200]!r}")


def check_ours(server: Server, label: str, seeded: Seeded) -> str:
    """One open job, one completed job and one bad key; returns the rate-limit headers seen."""
    auth = {"Authorization": seeded.api_key}
    for job_id, state in ((seeded.first_id, "pending"), (seeded.first_id + 1, "completed")):
        status, headers, body = server.get(f"{STATUS_PATH}{job_id}", auth)
        doc = json.loads(body)
        if status != 200 or doc.get("job_id") != job_id or doc.get("status") != state:
            raise RuntimeError(f"{label}: job {job_id} answered {status}: {body[:200]!r}")
        lower = {k.lower(): v for k, v in headers.items()}
        if state == "pending" and "retry-after" not in lower:
            raise RuntimeError(f"{label}: no Retry-After on an open job")
        if "ratelimit-policy" not in lower:
            raise RuntimeError(f"{label}: no RateLimit-Policy header: the limiter did not run")
    status, _h, _b = server.get(f"{STATUS_PATH}{seeded.first_id}", {"Authorization": "x"})
    if status != 401:
        raise RuntimeError(f"{label}: a wrong key answered {status}, not 401")
    return f"RateLimit-Policy: {lower['ratelimit-policy']}, RateLimit: {lower['ratelimit']}"


def limiter_count(server: Server, seeded: Seeded, limit: int) -> int:
    """Requests the limiter counted in its current window (from the RateLimit header)."""
    _s, headers, _b = server.get(
        f"{STATUS_PATH}{seeded.first_id}", {"Authorization": seeded.api_key}
    )
    lower = {k.lower(): v for k, v in headers.items()}
    remaining = int(lower["ratelimit"].split("r=")[1].split(";")[0])
    return limit - remaining


BARE_APP = "bench.lib.core:bare_app"
PACKAGES = (
    "fastapi",
    "starlette",
    "uvicorn",
    "httptools",
    "anyio",
    "sqlalchemy",
    "psycopg",
    "psycopg-pool",
    "limits",
)


def parse_args(argv: list[str] | None) -> Options:
    p = core.parser(
        "bench/api.py",
        "Status GETs per second and p50/p99 latency from one API process with N jobs in the "
        "table, on SQLite and PostgreSQL, beside a bare FastAPI endpoint.",
    )
    add = p.add_argument
    add("--jobs", type=int, default=100_000, help="jobs in the table")
    add("--connections", type=core.positive_ints, default="16,64", help="load connections")
    add("--duration", type=float, default=6.0, help="seconds per measured run")
    add("--warmup", type=float, default=2.0, help="seconds of warm-up per server")
    add("--rounds", type=int, default=3, help="interleaved rounds; medians")
    add("--only", type=core.choice(SYSTEMS), default="sqlite,postgresql", help="and bare")
    add("--rate-limit", default=core.UNLIMITED, help="SEOJOBS_RATE_LIMIT")
    why = "py-spy the servers: when a target fails (auto), always or never"
    add("--profile", choices=("auto", "always", "never"), default="auto", help=why)
    add("--profile-seconds", type=float, default=8.0)
    add("--profile-raw", type=Path, metavar="DIR", help="keep py-spy's raw stacks there")
    why = "connections of the fixed-load latency runs; 0 skips them"
    add("--paced-connections", type=int, default=64, help=why)
    why = "their offered load, as a share of the bare endpoint's peak req/s"
    add("--paced-share", type=float, default=TARGET_RATIO, help=why)
    a = p.parse_args(argv)
    if a.jobs < 1 or a.rounds < 1 or a.duration <= 0:
        p.error("--jobs, --rounds and --duration must be positive")
    return a


@dataclass
class System:
    key: str
    label: str
    server: Server
    target: LoadTarget

    def run(self, connections: int, offered: float = 0.0) -> Run:
        """A wrk run of ``connections`` against it; paced to ``offered`` req/s when set."""
        pause_ms = connections / offered * 1000 if offered else 0.0
        label = f"fixed load {self.label}" if offered else f"c={connections} {self.label}"
        what = (self.key, connections, offered)
        return Run(what, label, self.server, self.target, connections, pause_ms)


# -- set-up -----------------------------------------------------------------------------------


def _seed(opts: Options, scratch: ours.Scratch, store: str) -> tuple[str, Seeded, str]:
    """A new database of ``store`` with --jobs jobs; (its URL, the seeded jobs, a setup line)."""
    url = scratch.new(store, "seojobs_apibench")
    seeded = seed(url, opts.jobs)
    core.analyze(url)
    line = (
        f"{LABELS[store]}: {seeded.count:,} jobs (ids {seeded.first_id}..{seeded.last_id}) "
        f"seeded in {seeded.seconds:.1f} s, then ANALYZE"
    )
    return url, seeded, line


# -- phases -----------------------------------------------------------------------------------


def run_main(opts: Options, systems: list[System], results: Results) -> None:
    for system in systems:
        for c in opts.connections:
            run_wrk(system.target, c, opts.warmup)
    core.progress(
        f"warmed up; {opts.rounds} rounds of {opts.duration:.0f} s per system and concurrency"
    )
    groups = [[system.run(c) for system in systems] for c in opts.connections]
    core.interleave(groups, opts.rounds, opts.duration, results.runs)


def paced_rate(results: Results, opts: Options) -> float:
    """The fixed load: a share of the bare endpoint's best median req/s in the closed loop."""
    rows = summarise(results.runs, opts.connections)
    return float(opts.paced_share) * max(r.rate for r in rows if r.key == "bare")


def run_paced(opts: Options, systems: list[System], results: Results) -> None:
    """Latency at one fixed offered load, the same for every system (see docs/bench/api.md)."""
    c, rate = opts.paced_connections, paced_rate(results, opts)
    core.progress(f"fixed load: {rate:,.0f} req/s offered over {c} connections")
    groups = [[system.run(c, offered=rate) for system in systems]]
    core.interleave(groups, opts.rounds, opts.duration, results.runs)


def run_profiles(opts: Options, systems: list[System], results: Results) -> None:
    if spy.available() is None:
        results.notes.append("py-spy not found: no profile")
        return
    c = opts.connections[0]
    for system in systems:
        seconds, pid = opts.profile_seconds, system.server.pid
        with spy.recording(pid, spy.RATE, seconds, attach=0.5) as got:
            load = run_wrk(system.target, c, seconds + 1)
        requests = round(load.rate * seconds)
        label = f"{system.label}, {c} connections"
        if got.raw is not None and opts.profile_raw:
            opts.profile_raw.mkdir(parents=True, exist_ok=True)
            (opts.profile_raw / f"{system.key}.txt").write_text(got.raw)
        if got.raw is None:
            results.profiles.append(spy.Profile(label, seconds, requests, error=got.error))
        else:
            results.profiles.append(spy.analyse(got.raw, label, seconds, requests))
        core.progress(f"profiled {label}")


def main(argv: list[str] | None = None) -> int:
    opts = parse_args(argv)
    results = Results(opts)

    def body(stack: ExitStack) -> None:
        scratch = ours.Scratch(stack, postgres="postgresql" in opts.only)
        results.start(
            scratch.pg,
            core.versions(*PACKAGES),
            f"servers: one process each, uvicorn {' '.join(UVICORN_OPTIONS[2:])}; "
            "ours = create_app(Settings(), run_worker=False)",
            f"ours: SEOJOBS_RATE_LIMIT={opts.rate_limit} (in-process MemoryWindows, moving "
            "window); status reads on the event loop (store/fastread.py: SQLite connection on "
            "the loop, or psycopg async pool of 10 with batched lookups)",
            f"load: {wrk_version()}, 1 thread, Lua script; random job ids over the whole table; "
            f"Authorization header on every request (bare too)",
        )
        seeded: dict[str, Seeded] = {}
        systems: list[System] = []
        for store in ("sqlite", "postgresql"):
            if store not in opts.only:
                continue
            url, s, line = _seed(opts, scratch, store)
            core.progress(line)
            server = core.ours_server(url, scratch.root / f"{store}.log", opts.rate_limit)
            stack.enter_context(server)
            headers = check_ours(server, LABELS[store], s)
            results.environment += [line, f"{LABELS[store]}: sanity GETs 200/200/401; {headers}"]
            target = LoadTarget(server.port, STATUS_PATH, s.first_id, s.count, s.api_key)
            systems.append(System(store, LABELS[store], server, target))
            seeded[store] = s
        # The bare endpoint gets the same Authorization header, so requests are the same size.
        bare = stack.enter_context(Server(BARE_APP, BARE_PATH, {}, scratch.root / "bare.log"))
        check_bare(bare)
        target = LoadTarget(bare.port, BARE_PATH, auth=next(iter(seeded.values())).api_key)
        systems.insert(0, System("bare", LABELS["bare"], bare, target))
        run_main(opts, systems, results)
        if opts.paced_connections > 0:
            run_paced(opts, systems, results)
        limit = int(opts.rate_limit.split("/")[0])
        for system in systems[1:]:
            counted = limiter_count(system.server, seeded[system.key], limit)
            results.environment.append(
                f"{system.label}: the rate limiter counted {counted:,} requests in its "
                "last 60 s window (its code path ran on every request)"
            )
        failing = core.failed(results.targets(results.runs))
        if opts.profile == "always" or (opts.profile == "auto" and failing):
            run_profiles(opts, systems, results)

    return results.main(body, "servers stopped, scratch databases dropped")


if __name__ == "__main__":
    raise SystemExit(main())
