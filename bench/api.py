"""API status-GET benchmark: ``python bench/api.py [--jobs N] [--connections 16,64] ...``.

What it measures, its targets and how to read its report: docs/bench/api.md.
"""

from __future__ import annotations

import sys
from pathlib import Path

# The repository root, not bench/ (where queue.py would shadow the standard library's queue).
sys.path[0] = str(Path(__file__).resolve().parents[1])

import argparse
import functools
import os
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from bench.lib import cli, load, procstat, spy
from bench.lib.api_report import (
    LABELS,
    SYSTEMS,
    TARGET_RATIO,
    Results,
    Sample,
    failures,
    render,
    summarise,
)
from bench.lib.load import Load, Target
from bench.lib.ours import Seeded, seed
from bench.lib.scratch import (
    ScratchPostgres,
    ScratchSqlite,
    analyze_sqlite,
    pg_url,
    sqlite_url,
    vacuum_postgres,
)
from bench.lib.servers import (
    BARE_PATH,
    STATUS_PATH,
    UVICORN_OPTIONS,
    Server,
    check_bare,
    check_ours,
    limiter_count,
)

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


Options = argparse.Namespace  # what parse_args returns


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
        "--connections",
        type=cli.positive_ints,
        default=(16, 64),
        help="load concurrency list (16,64)",
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
    return a


# -- systems and samples ----------------------------------------------------------------------


@dataclass
class System:
    key: str
    label: str
    server: Server
    target: Target


class Driver:
    def __init__(self, opts: Options) -> None:
        self.opts = opts
        self.wrk = load.wrk_path()  # else the Python load generator

    @property
    def loadgen_name(self) -> str:
        if self.wrk:
            return f"{load.wrk_version(self.wrk)}, 1 thread, Lua script"
        return "Python asyncio load generator (separate process; wrk not installed)"

    def load(self, target: Target, connections: int, seconds: float, pause_ms: float = 0.0) -> Load:
        if self.wrk:
            return load.run_wrk(self.wrk, target, connections, seconds, pause_ms)
        return load.run_python(target, connections, seconds, pause_ms)

    def measure(
        self, system: System, connections: int, seconds: float, rnd: int, offered: float = 0.0
    ) -> Sample:
        pid = system.server.pid
        pause_ms = connections / offered * 1000 if offered else 0.0
        cpu0, busy0, kids0 = (
            procstat.proc_cpu(pid),
            procstat.machine_busy(),
            procstat.children_cpu(),
        )
        t0 = time.monotonic()
        load = self.load(system.target, connections, seconds, pause_ms)
        wall = time.monotonic() - t0
        server_cpu = procstat.proc_cpu(pid) - cpu0
        loadgen_cpu = procstat.children_cpu() - kids0
        others = (procstat.machine_busy() - busy0 - server_cpu - loadgen_cpu) / (
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


# -- phases -----------------------------------------------------------------------------------


def run_main(driver: Driver, systems: list[System], results: Results) -> None:
    opts = driver.opts
    for system in systems:
        for c in opts.connections:
            driver.load(system.target, c, opts.warmup)
    cli.progress(
        f"warmed up; {opts.rounds} rounds of {opts.duration:.0f} s per system and concurrency"
    )
    for rnd in range(opts.rounds):
        order = systems[rnd % len(systems) :] + systems[: rnd % len(systems)]
        for c in opts.connections:
            for system in order:
                sample = driver.measure(system, c, opts.duration, rnd)
                results.samples.append(sample)
                cli.progress(
                    f"round {rnd + 1} c={c} {system.label}: {sample.load.rate:,.0f} req/s, "
                    f"p50 {sample.load.p50_ms:.1f} ms, p99 {sample.load.p99_ms:.1f} ms"
                )


def paced_rate(results: Results, opts: Options) -> float:
    """The fixed load: a share of the bare endpoint's best median req/s in the closed loop."""
    rows = summarise(results.samples, opts.connections)
    return opts.paced_share * max(r.rate for r in rows if r.key == "bare")


def run_paced(driver: Driver, systems: list[System], results: Results) -> None:
    """Latency at one fixed offered load, the same for every system (see docs/bench/api.md)."""
    opts = driver.opts
    c, rate = opts.paced_connections, paced_rate(results, opts)
    cli.progress(f"fixed load: {rate:,.0f} req/s offered over {c} connections")
    for rnd in range(opts.rounds):
        order = systems[rnd % len(systems) :] + systems[: rnd % len(systems)]
        for system in order:
            sample = driver.measure(system, c, opts.duration, rnd, offered=rate)
            results.samples.append(sample)
            cli.progress(
                f"round {rnd + 1} fixed load {system.label}: {sample.load.rate:,.0f} req/s, "
                f"p50 {sample.load.p50_ms:.1f} ms, p99 {sample.load.p99_ms:.1f} ms"
            )


def run_profiles(driver: Driver, systems: list[System], results: Results) -> None:
    opts = driver.opts
    binary = spy.available()
    if binary is None:
        results.notes.append("py-spy not found: no profile")
        return
    c = opts.connections[0]
    for system in systems:
        proc, out, tmp = spy.record(binary, system.server.pid, opts.profile_seconds)
        time.sleep(0.5)  # py-spy attaches
        load = driver.load(system.target, c, opts.profile_seconds + 1)
        requests = round(load.rate * opts.profile_seconds)
        label = f"{system.label}, {c} connections"
        keep = opts.profile_raw / f"{system.key}.txt" if opts.profile_raw else None
        prof = spy.finish(proc, out, tmp, label, opts.profile_seconds, requests, keep)
        results.profiles.append(prof)
        cli.progress(f"profiled {label}")


def _environment(driver: Driver, pg: ScratchPostgres | None) -> list[str]:
    opts = driver.opts
    lines = [
        cli.machine(pg),
        cli.versions(*PACKAGES),
        f"servers: one process each, uvicorn {' '.join(UVICORN_OPTIONS[2:])}; "
        "ours = create_app(Settings(), run_worker=False)",
        f"ours: SEOJOBS_RATE_LIMIT={opts.rate_limit} (in-process MemoryWindows, moving "
        "window); status reads on the event loop (store/fastread.py: SQLite connection on the "
        "loop, or psycopg async pool of 10 with batched lookups)",
        f"load: {driver.loadgen_name}; random job ids over the whole table; "
        f"Authorization header on every request (bare too)",
        f"load average at start: {procstat.loadavg()}",
    ]
    return lines


def _status_target(seeded: Seeded, port: int) -> Target:
    return Target(port, STATUS_PATH, seeded.first_id, seeded.count, seeded.api_key)


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
    cli.unwind_on_sigterm()
    opts = parse_args(argv)
    driver = Driver(opts)
    results = Results()
    partial = cli.partial_report(
        lambda: render(results, opts) if results.samples else "",
        "servers stopped, scratch databases dropped",
    )
    with partial, ExitStack() as stack:
        pg = stack.enter_context(ScratchPostgres()) if "postgresql" in opts.only else None
        sqlite_scratch = stack.enter_context(ScratchSqlite())
        log_dir = sqlite_scratch.root
        results.environment = _environment(driver, pg)
        seeded: dict[str, tuple[str, Seeded]] = {}
        if "sqlite" in opts.only:
            seeded["sqlite"] = _seed_sqlite(opts, sqlite_scratch, results)
            cli.progress(results.setup[-1])
        if pg is not None:
            seeded["postgresql"] = _seed_postgres(opts, pg, results)
            cli.progress(results.setup[-1])
        any_key = next(iter(seeded.values()))[1].api_key
        systems = [
            _start(
                stack,
                "bare",
                "bench.lib.servers:bare",
                BARE_PATH,
                {},
                log_dir,
                lambda port: Target(port, BARE_PATH, 0, 0, any_key),
            )
        ]
        check_bare(systems[0].server)
        for key, (url, s) in seeded.items():
            system = _start(
                stack,
                key,
                "bench.lib.servers:ours",
                "/healthz",
                _ours_env(url, opts),
                log_dir,
                functools.partial(_status_target, s),
            )
            headers = check_ours(system.server, system.label, s)
            results.setup.append(f"{LABELS[key]}: sanity GETs 200/200/401; {headers}")
            systems.append(system)
        run_main(driver, systems, results)
        if opts.paced_connections > 0:
            run_paced(driver, systems, results)
        limit = int(opts.rate_limit.split("/")[0])
        for system in systems[1:]:
            counted = limiter_count(system.server, seeded[system.key][1], limit)
            results.setup.append(
                f"{system.label}: the rate limiter counted {counted:,} requests in its "
                "last 60 s window (its code path ran on every request)"
            )
        failing = failures(results, opts.connections)
        if opts.profile == "always" or (opts.profile == "auto" and failing):
            run_profiles(driver, systems, results)
        results.environment.append(f"load average at end: {procstat.loadavg()}")
    print(render(results, opts), end="", flush=True)
    return cli.exit_code(failures(results, opts.connections))


if __name__ == "__main__":
    raise SystemExit(main())
