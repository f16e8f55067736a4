"""``bench/api.py``'s driver: seed, start the servers, drive the load, print the report."""

from __future__ import annotations

import argparse
import functools
import importlib.metadata
import json
import os
import platform
import resource
import signal
import sqlite3
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

from bench import api_load, api_profile
from bench.api_apps import BARE_PATH, CONSTANT
from bench.api_load import Load, Target
from bench.api_report import median
from bench.api_seed import Seeded, seed
from bench.api_server import UVICORN_OPTIONS, Server
from bench.scratch import (
    ScratchPostgres,
    ScratchSqlite,
    analyze_sqlite,
    pg_url,
    sqlite_url,
    vacuum_postgres,
)
from bench.text import positive_ints, progress, table, verdict

STATUS_PATH = "/api/v1/index-check/jobs/"
TARGET_RATIO = 0.5
TARGET_P99_MS = 25.0
SYSTEMS = ("bare", "sqlite", "postgresql")
LABELS = {
    "bare": "bare FastAPI constant",
    "sqlite": "seojobs, SQLite",
    "postgresql": "seojobs, PostgreSQL",
}
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


@dataclass(frozen=True)
class Options:
    jobs: int
    connections: tuple[int, ...]
    duration: float
    warmup: float
    rounds: int
    only: frozenset[str]
    rate_limit: str
    profile: str
    profile_seconds: float
    profile_raw: Path | None
    loadgen: str
    paced_connections: int
    paced_share: float


def _only(text: str) -> frozenset[str]:
    chosen = frozenset(p.strip() for p in text.split(",") if p.strip())
    if not chosen or chosen - set(SYSTEMS):
        raise argparse.ArgumentTypeError(f"choose from {', '.join(SYSTEMS)}")
    return chosen | {"bare"}


def parse_args(argv: list[str] | None) -> Options:
    p = argparse.ArgumentParser(
        prog="bench/api.py",
        description=(
            "Status GETs per second and p50/p99 latency from one API process with N jobs in "
            "the table, on SQLite and PostgreSQL, beside a bare FastAPI endpoint."
        ),
    )
    p.add_argument("--jobs", type=int, default=100_000, help="jobs in the table (default 100000)")
    p.add_argument(
        "--connections", type=positive_ints, default=(16, 64), help="load concurrency list (16,64)"
    )
    p.add_argument("--duration", type=float, default=6.0, help="seconds per measured run (6)")
    p.add_argument("--warmup", type=float, default=2.0, help="seconds of warm-up per server (2)")
    p.add_argument("--rounds", type=int, default=3, help="interleaved rounds; medians (3)")
    p.add_argument(
        "--only",
        type=_only,
        default=frozenset(SYSTEMS),
        help="sqlite and/or postgresql (bare always runs)",
    )
    p.add_argument("--rate-limit", default="100000000/minute", help="SEOJOBS_RATE_LIMIT")
    p.add_argument(
        "--profile",
        choices=("auto", "always", "never"),
        default="auto",
        help="py-spy the servers: when a target fails (auto), always or never",
    )
    p.add_argument("--profile-seconds", type=float, default=8.0)
    p.add_argument(
        "--profile-raw",
        type=Path,
        default=None,
        metavar="DIR",
        help="also keep py-spy's raw folded stacks in DIR (one file per server)",
    )
    p.add_argument(
        "--loadgen",
        choices=("auto", "wrk", "python"),
        default="auto",
        help="wrk if installed (auto), or the Python fallback",
    )
    p.add_argument(
        "--paced-connections",
        type=int,
        default=64,
        help="connections of the fixed-load latency runs; 0 skips them (64)",
    )
    p.add_argument(
        "--paced-share",
        type=float,
        default=TARGET_RATIO,
        help="their offered load, as a share of the bare endpoint's peak req/s (0.5)",
    )
    a = p.parse_args(argv)
    if a.jobs < 1 or a.rounds < 1 or a.duration <= 0:
        p.error("--jobs, --rounds and --duration must be positive")
    return Options(
        jobs=a.jobs,
        connections=a.connections,
        duration=a.duration,
        warmup=a.warmup,
        rounds=a.rounds,
        only=a.only,
        rate_limit=a.rate_limit,
        profile=a.profile,
        profile_seconds=a.profile_seconds,
        profile_raw=a.profile_raw,
        loadgen=a.loadgen,
        paced_connections=a.paced_connections,
        paced_share=a.paced_share,
    )


# -- CPU accounting ---------------------------------------------------------------------------

TICK = os.sysconf("SC_CLK_TCK")


def _proc_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def _machine_busy() -> float:
    cpu = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    ticks = [int(v) for v in cpu]
    return (sum(ticks[:8]) - ticks[3] - ticks[4]) / TICK  # minus idle and iowait


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


# -- systems and samples ----------------------------------------------------------------------


@dataclass
class System:
    key: str
    label: str
    server: Server
    target: Target


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
    profiles: list[api_profile.Profile] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


class Driver:
    def __init__(self, opts: Options) -> None:
        self.opts = opts
        self.wrk = api_load.wrk_path() if opts.loadgen != "python" else None
        if opts.loadgen == "wrk" and self.wrk is None:
            raise SystemExit("--loadgen wrk: wrk is not installed (apt-get install wrk)")

    @property
    def loadgen_name(self) -> str:
        if self.wrk:
            return f"{api_load.wrk_version(self.wrk)}, 1 thread, Lua script"
        return "Python asyncio load generator (separate process; wrk not installed)"

    def load(self, target: Target, connections: int, seconds: float, pause_ms: float = 0.0) -> Load:
        if self.wrk:
            return api_load.run_wrk(self.wrk, target, connections, seconds, pause_ms)
        return api_load.run_python(target, connections, seconds, pause_ms)

    def measure(
        self, system: System, connections: int, seconds: float, rnd: int, offered: float = 0.0
    ) -> Sample:
        pid = system.server.pid
        pause_ms = connections / offered * 1000 if offered else 0.0
        cpu0, busy0, kids0, t0 = _proc_cpu(pid), _machine_busy(), _children_cpu(), time.monotonic()
        load = self.load(system.target, connections, seconds, pause_ms)
        wall = time.monotonic() - t0
        server_cpu = _proc_cpu(pid) - cpu0
        loadgen_cpu = _children_cpu() - kids0
        others = (_machine_busy() - busy0 - server_cpu - loadgen_cpu) / (
            (os.cpu_count() or 1) * wall
        )
        if load.errors or load.bad_status:
            raise RuntimeError(
                f"{system.label}: {load.errors} socket errors, {load.bad_status} non-2xx answers "
                f"at {connections} connections\n{system.server.log_tail()}"
            )
        return Sample(system.key, connections, rnd, load, server_cpu, max(0.0, others), offered)


# -- set-up -----------------------------------------------------------------------------------


def _seed_sqlite(opts: Options, scratch: ScratchSqlite, results: Results) -> tuple[str, Seeded]:
    path = scratch.new_path("api")
    url = sqlite_url(path)
    seeded = seed(url, opts.jobs)
    analyze_sqlite(path)
    results.setup.append(
        f"SQLite: {seeded.count:,} jobs (ids {seeded.first_id}..{seeded.last_id}) seeded in "
        f"{seeded.seconds:.1f} s, {path.stat().st_size / 1e6:.0f} MB file, WAL"
    )
    return url, seeded


def _seed_postgres(opts: Options, scratch: ScratchPostgres, results: Results) -> tuple[str, Seeded]:
    name = scratch.create("seojobs_apibench")
    url = pg_url(name)
    seeded = seed(url, opts.jobs)
    vacuum_postgres(name)
    results.setup.append(
        f"PostgreSQL: {seeded.count:,} jobs (ids {seeded.first_id}..{seeded.last_id}) seeded in "
        f"{seeded.seconds:.1f} s, then VACUUM ANALYZE"
    )
    return url, seeded


def _ours_env(url: str, opts: Options) -> dict[str, str]:
    return {"SEOJOBS_DATABASE_URL": url, "SEOJOBS_RATE_LIMIT": opts.rate_limit}


def _check_bare(system: System) -> None:
    status, _headers, body = system.server.get(BARE_PATH, {})
    if status != 200 or json.loads(body) != CONSTANT:
        raise RuntimeError(f"bare endpoint answered {status}: {body[:200]!r}")


def _check_ours(system: System, seeded: Seeded) -> str:
    """One open job, one completed job and one bad key; returns the rate-limit headers seen."""
    auth = {"Authorization": seeded.api_key}
    for job_id, state in ((seeded.first_id, "pending"), (seeded.first_id + 1, "completed")):
        status, headers, body = system.server.get(f"{STATUS_PATH}{job_id}", auth)
        doc = json.loads(body)
        if status != 200 or doc.get("job_id") != job_id or doc.get("status") != state:
            raise RuntimeError(f"{system.label}: job {job_id} answered {status}: {body[:200]!r}")
        lower = {k.lower(): v for k, v in headers.items()}
        if state == "pending" and "retry-after" not in lower:
            raise RuntimeError(f"{system.label}: no Retry-After on an open job")
        if "ratelimit-policy" not in lower:
            raise RuntimeError(
                f"{system.label}: no RateLimit-Policy header: the limiter did not run"
            )
    status, _h, _b = system.server.get(f"{STATUS_PATH}{seeded.first_id}", {"Authorization": "x"})
    if status != 401:
        raise RuntimeError(f"{system.label}: a wrong key answered {status}, not 401")
    return f"RateLimit-Policy: {lower['ratelimit-policy']}, RateLimit: {lower['ratelimit']}"


def _limiter_count(system: System, seeded: Seeded, limit: int) -> int:
    """Requests the limiter counted in its current window (from the RateLimit header)."""
    _s, headers, _b = system.server.get(
        f"{STATUS_PATH}{seeded.first_id}", {"Authorization": seeded.api_key}
    )
    lower = {k.lower(): v for k, v in headers.items()}
    remaining = int(lower["ratelimit"].split("r=")[1].split(";")[0])
    return limit - remaining


# -- phases -----------------------------------------------------------------------------------


def run_main(driver: Driver, systems: list[System], results: Results) -> None:
    opts = driver.opts
    for system in systems:
        for c in opts.connections:
            driver.load(system.target, c, opts.warmup)
    progress(f"warmed up; {opts.rounds} rounds of {opts.duration:.0f} s per system and concurrency")
    for rnd in range(opts.rounds):
        order = systems[rnd % len(systems) :] + systems[: rnd % len(systems)]
        for c in opts.connections:
            for system in order:
                sample = driver.measure(system, c, opts.duration, rnd)
                results.samples.append(sample)
                progress(
                    f"round {rnd + 1} c={c} {system.label}: {sample.load.rate:,.0f} req/s, "
                    f"p50 {sample.load.p50_ms:.1f} ms, p99 {sample.load.p99_ms:.1f} ms"
                )


def paced_rate(results: Results, opts: Options) -> float:
    """The fixed load: a share of the bare endpoint's best median req/s in the closed loop."""
    rows = summarise(results.samples, opts.connections)
    return opts.paced_share * max(r.rate for r in rows if r.key == "bare")


def run_paced(driver: Driver, systems: list[System], results: Results) -> None:
    """Latency at one fixed offered load, the same for every system (see bench/README.md)."""
    opts = driver.opts
    c, rate = opts.paced_connections, paced_rate(results, opts)
    progress(f"fixed load: {rate:,.0f} req/s offered over {c} connections")
    for rnd in range(opts.rounds):
        order = systems[rnd % len(systems) :] + systems[: rnd % len(systems)]
        for system in order:
            sample = driver.measure(system, c, opts.duration, rnd, offered=rate)
            results.samples.append(sample)
            progress(
                f"round {rnd + 1} fixed load {system.label}: {sample.load.rate:,.0f} req/s, "
                f"p50 {sample.load.p50_ms:.1f} ms, p99 {sample.load.p99_ms:.1f} ms"
            )


def _failing(results: Results, opts: Options) -> bool:
    summary = summarise(results.samples, opts.connections)
    paced = summarise_paced(results.samples)
    return any(not row.ratio_ok for row in summary if row.key != "bare") or any(
        not row.p99_ok for row in paced if row.key != "bare"
    )


def run_profiles(driver: Driver, systems: list[System], results: Results) -> None:
    opts = driver.opts
    binary = api_profile.available()
    if binary is None:
        results.notes.append("py-spy not found: no profile")
        return
    c = opts.connections[0]
    for system in systems:
        proc, out, tmp = api_profile.record(binary, system.server.pid, opts.profile_seconds)
        time.sleep(0.5)  # py-spy attaches
        load = driver.load(system.target, c, opts.profile_seconds + 1)
        requests = round(load.rate * opts.profile_seconds)
        label = f"{system.label}, {c} connections"
        keep = opts.profile_raw / f"{system.key}.txt" if opts.profile_raw else None
        prof = api_profile.finish(proc, out, tmp, label, opts.profile_seconds, requests, keep)
        results.profiles.append(prof)
        progress(f"profiled {label}")


# -- summary and report -----------------------------------------------------------------------


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


def render(results: Results, opts: Options) -> str:
    out = ["", "API status GET benchmark (bench/api.py)", ""]
    out += [f"  {line}" for line in results.environment]
    out += [""] + [f"  {line}" for line in results.setup] + [""]
    rows = summarise(results.samples, opts.connections)
    out.append(
        f"Throughput and latency: medians of {opts.rounds} interleaved round(s) of "
        f"{opts.duration:.0f} s (closed loop, keep-alive)"
    )
    out.append("")
    out += table(
        [
            "system",
            "conns",
            "req/s",
            "per round",
            "p50 ms",
            "p99 ms",
            "worst p99",
            "CPU ms/req",
            "x bare",
            "x bare CPU",
            "other load",
        ],
        [
            [
                LABELS[r.key],
                str(r.connections),
                f"{r.rate:,.0f}",
                _rates(results.samples, r.key, r.connections),
                f"{r.p50:.1f}",
                f"{r.p99:.1f}",
                f"{r.p99_max:.1f}",
                f"{r.cpu_ms:.2f}",
                f"{r.ratio:.2f}",
                f"{r.cpu_ratio:.2f}",
                f"{r.others:.0%}",
            ]
            for r in rows
        ],
    )
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
        out += table(
            ["system", "conns", "offered", "req/s", "p50 ms", "p99 ms", "worst p99", "CPU ms/req"],
            [
                [
                    LABELS[r.key],
                    str(r.connections),
                    f"{r.offered:,.0f}",
                    f"{r.rate:,.0f}",
                    f"{r.p50:.1f}",
                    f"{r.p99:.1f}",
                    f"{r.p99_max:.1f}",
                    f"{r.cpu_ms:.2f}",
                ]
                for r in paced
            ],
        )
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
            out += [f"  {line}" if line else "" for line in api_profile.render(prof, brief)]
            out.append("")
    if results.notes:
        out += ["", *(f"  note: {n}" for n in results.notes)]
    return "\n".join(out) + "\n"


def _environment(driver: Driver, pg: ScratchPostgres | None) -> list[str]:
    opts = driver.opts
    versions = ", ".join(f"{p} {importlib.metadata.version(p)}" for p in PACKAGES)
    lines = [
        f"machine: {os.cpu_count()} CPUs, {platform.system()} {platform.release()}; "
        f"Python {platform.python_version()}; SQLite {sqlite3.sqlite_version}"
        + (f"; PostgreSQL {pg.server_version()} on 127.0.0.1 (same machine)" if pg else ""),
        versions,
        f"servers: one process each, uvicorn {' '.join(UVICORN_OPTIONS[2:])}; "
        "ours = create_app(Settings(), run_worker=False)",
        f"ours: SEOJOBS_RATE_LIMIT={opts.rate_limit} (in-process MemoryWindows, moving "
        "window); status reads on the event loop (store/fastread.py: SQLite connection on the "
        "loop, or psycopg async pool of 10 with batched lookups)",
        f"load: {driver.loadgen_name}; random job ids over the whole table; "
        f"Authorization header on every request (bare too)",
        f"load average at start: {_loadavg()}",
    ]
    return lines


def _status_target(seeded: Seeded, port: int) -> Target:
    return Target(port, STATUS_PATH, seeded.first_id, seeded.count, seeded.api_key)


def _interrupt(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def _start(
    stack: ExitStack,
    key: str,
    factory: str,
    ready: str,
    env: dict[str, str],
    log_dir: Path,
    target: Callable[[int], Target],
) -> System:
    server = stack.enter_context(Server(factory, ready, env, log_dir / f"{key}.log"))
    return System(key, LABELS[key], server, target(server.port))


def main(argv: list[str] | None = None) -> int:
    signal.signal(signal.SIGTERM, _interrupt)
    opts = parse_args(argv)
    driver = Driver(opts)
    results = Results()
    try:
        with ExitStack() as stack:
            pg = stack.enter_context(ScratchPostgres()) if "postgresql" in opts.only else None
            sqlite_scratch = stack.enter_context(ScratchSqlite())
            log_dir = sqlite_scratch.root
            results.environment = _environment(driver, pg)
            seeded: dict[str, tuple[str, Seeded]] = {}
            if "sqlite" in opts.only:
                seeded["sqlite"] = _seed_sqlite(opts, sqlite_scratch, results)
                progress(results.setup[-1])
            if pg is not None:
                seeded["postgresql"] = _seed_postgres(opts, pg, results)
                progress(results.setup[-1])
            any_key = next(iter(seeded.values()))[1].api_key
            systems = [
                _start(
                    stack,
                    "bare",
                    "bench.api_apps:bare",
                    BARE_PATH,
                    {},
                    log_dir,
                    lambda port: Target(port, BARE_PATH, 0, 0, any_key),
                )
            ]
            _check_bare(systems[0])
            for key, (url, s) in seeded.items():
                system = _start(
                    stack,
                    key,
                    "bench.api_apps:ours",
                    "/healthz",
                    _ours_env(url, opts),
                    log_dir,
                    functools.partial(_status_target, s),
                )
                headers = _check_ours(system, s)
                results.setup.append(f"{LABELS[key]}: sanity GETs 200/200/401; {headers}")
                systems.append(system)
            run_main(driver, systems, results)
            if opts.paced_connections > 0:
                run_paced(driver, systems, results)
            limit = int(opts.rate_limit.split("/")[0])
            for system in systems[1:]:
                counted = _limiter_count(system, seeded[system.key][1], limit)
                results.setup.append(
                    f"{system.label}: the rate limiter counted {counted:,} requests in its "
                    "last 60 s window (its code path ran on every request)"
                )
            if opts.profile == "always" or (opts.profile == "auto" and _failing(results, opts)):
                run_profiles(driver, systems, results)
            results.environment.append(f"load average at end: {_loadavg()}")
    except KeyboardInterrupt:
        if results.samples:
            print(render(results, opts), end="", flush=True)
        print("\n(interrupted; servers stopped, scratch databases dropped)", flush=True)
        return 130
    print(render(results, opts), end="", flush=True)
    return 0
