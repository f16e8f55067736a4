"""Tables and argument types, CPU and memory from /proc, scratch databases, child processes
(a uvicorn app, a ``seojobs worker``) and wrk, for every benchmark."""

from __future__ import annotations

import argparse
import compileall
import contextlib
import functools
import http.client
import importlib.metadata
import os
import platform
import resource
import secrets
import shutil
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import psycopg
from psycopg import sql

from bench.lib import REPO

if TYPE_CHECKING:
    from fastapi import FastAPI

from seojobs.api.protocol import UVICORN_HTTP, UVICORN_LOOP, UVICORN_PROXY_HEADERS

# -- the report -----------------------------------------------------------------------------

T = TypeVar("T")


def progress(message: str) -> None:
    print(f"  .. {message}", file=sys.stderr, flush=True)


def table(
    headers: Sequence[str], rows: Sequence[Sequence[str]], right: Collection[int] | None = None
) -> list[str]:
    """A header, a rule and the rows; columns in ``right`` are right-aligned (by default every
    column but the first)."""
    if right is None:
        right = range(1, len(headers))
    widths = [
        max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)
    ]

    def line(cells: Sequence[str]) -> str:
        out = [
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ]
        return "  " + "  ".join(out).rstrip()

    return [line(headers), "  " + "  ".join("-" * w for w in widths), *(line(r) for r in rows)]


def columns(
    spec: Sequence[tuple[str, Callable[[T], str]]],
    items: Iterable[T],
    right: Collection[int] | None = None,
) -> list[str]:
    """:func:`table` from (header, cell of an item) pairs, one row per item."""
    return table([h for h, _ in spec], [[cell(i) for _, cell in spec] for i in items], right)


Target = tuple[str, str, bool]  # (target, the measured value, passed)


def judged(
    found: Sequence[Target], headers: Sequence[str] = ("target", "measured", "")
) -> list[str]:
    """The targets table, each marked PASS or FAIL."""
    return table(headers, [[t, m, verdict(ok)] for t, m, ok in found], {1})


def failed(found: Iterable[Target]) -> list[str]:
    """The failed targets, one line each."""
    return [f"{t}: {m}" for t, m, ok in found if not ok]


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def parser(prog: str, description: str) -> argparse.ArgumentParser:
    """An argument parser whose help shows each option's default."""
    return argparse.ArgumentParser(
        prog=prog, description=description, formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )


def positive_ints(text: str) -> tuple[int, ...]:
    """An argparse type: "8,32,64" -> (8, 32, 64)."""
    values = tuple(int(part) for part in text.split(",") if part.strip())
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError("expected positive integers separated by commas")
    return values


def choice(allowed: Sequence[str]) -> Callable[[str], tuple[str, ...]]:
    """An argparse type: a comma-separated subset of ``allowed``, in the order given."""

    def parse(text: str) -> tuple[str, ...]:
        chosen = tuple(dict.fromkeys(p.strip() for p in text.split(",") if p.strip()))
        unknown = set(chosen) - set(allowed)
        if unknown or not chosen:
            raise argparse.ArgumentTypeError(f"choose from {', '.join(allowed)}")
        return chosen

    return parse


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def versions(*names: str) -> str:
    found = []
    for name in names:
        try:
            found.append(f"{name} {importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            found.append(f"{name} (not installed)")
    return ", ".join(found)


def machine(pg: ScratchPostgres | None = None) -> str:
    """The machine line every report starts with (PostgreSQL's version when it is used)."""
    line = (
        f"machine: {os.cpu_count()} CPUs, {platform.system()} {platform.release()}; "
        f"Python {platform.python_version()}; SQLite {sqlite3.sqlite_version}"
    )
    if pg is not None:
        line += f"; PostgreSQL {pg.server_version()} on 127.0.0.1 (same machine)"
    return line


# -- CPU and memory (Linux /proc) ------------------------------------------------------------

TICK = os.sysconf("SC_CLK_TCK")


def proc_cpu(pid: int, *, reaped: bool = False) -> float:
    """User + system CPU seconds of process ``pid`` so far (``reaped``: with those of the
    children it has waited for)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(v) for v in fields[11 : 15 if reaped else 13]) / TICK


def machine_busy() -> float:
    """CPU seconds the whole machine has been busy (every CPU, less idle and iowait)."""
    ticks = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    return (sum(ticks) - ticks[3] - ticks[4]) / TICK


def children_cpu() -> float:
    """CPU seconds of this process's children that have ended (e.g. a load generator)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def sched_seconds(tasks: Iterable[Path]) -> tuple[float, float]:
    """(seconds on a CPU, seconds runnable but waiting for one: other load taking our CPU) of
    ``tasks``: /proc/<pid>/task/* (threads that already ended are not counted), or
    /proc/thread-self (the calling thread, e.g. the event loop's)."""
    running = waiting = 0
    for task in tasks:
        with contextlib.suppress(OSError, ValueError):
            on_cpu, queued, _slices = (task / "schedstat").read_text().split()
            running, waiting = running + int(on_cpu), waiting + int(queued)
    return running / 1e9, waiting / 1e9


LOOP = Path("/proc/thread-self")  # the calling thread's: Meter is made and stopped on the loop


def loadavg() -> str:
    return ", ".join(Path("/proc/loadavg").read_text().split()[:3])


@dataclass(frozen=True)
class Usage:
    cpu: float  # this process's CPU seconds, every thread
    loop_wait: float  # seconds the calling (event-loop) thread was runnable but not running
    server_cpu: float  # the server process's (a site, a fake API)
    server_wait: float  # seconds the server process was runnable but not running
    others_busy: float  # CPUs used by every other process, on average


class Meter:
    """CPU used from now until ``stop`` by this process, a server child process (``pid``)
    and everything else on the machine."""

    def __init__(self, pid: int) -> None:
        self.pid, self.ours, self.loop = pid, time.process_time(), sched_seconds([LOOP])[1]
        self.server0, self.busy = self.server(), machine_busy()

    def stop(self, seconds: float) -> Usage:
        ours = time.process_time() - self.ours
        loop_wait = sched_seconds([LOOP])[1] - self.loop
        server_cpu, server_wait = (a - b for a, b in zip(self.server(), self.server0, strict=True))
        others = max(0.0, machine_busy() - self.busy - ours - server_cpu) / seconds
        return Usage(ours, loop_wait, server_cpu, server_wait, min(others, os.cpu_count() or 1))

    def server(self) -> tuple[float, float]:
        return sched_seconds(Path(f"/proc/{self.pid}/task").iterdir())


def descendants(pid: int) -> list[int]:
    """``pid`` and every process below it (children, grandchildren), from /proc."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        parents.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo += parents.get(current, [])
    return found


def memory(pid: int, key: str = "VmRSS") -> int:
    """Bytes of a memory figure of ``pid`` (0 once it is gone): ``VmRSS`` resident now, ``VmHWM``
    the kernel's high-water mark of it, ``Pss`` the proportional set size (shared pages divided
    among their sharers: a sum over Chromium's processes counts its libraries once)."""
    path = f"/proc/{pid}/{'smaps_rollup' if key == 'Pss' else 'status'}"
    with contextlib.suppress(OSError, IndexError, ValueError):
        for line in Path(path).read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    return 0


class TreeSampler:
    """Samples the resident memory (RSS, or PSS with ``pss``) of a process and its
    descendants (without the process itself with ``skip_root``: a benchmark sampling its own
    children); ``peak`` is the largest sum seen."""

    def __init__(
        self, pid: int, *, interval: float, skip_root: bool = False, pss: bool = False
    ) -> None:
        self.pid = pid
        self.peak = 0
        self._key = "Pss" if pss else "VmRSS"
        self._interval = interval
        self._skip = pid if skip_root else None
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._done.wait(self._interval):
            tree = [p for p in descendants(self.pid) if p != self._skip]
            self.peak = max(self.peak, sum(memory(p, self._key) for p in tree))

    def stop(self) -> int:
        self._done.set()
        self._thread.join()
        return self.peak


def stop(proc: subprocess.Popen[bytes], timeout: float = 10.0) -> None:
    """SIGTERM if ``proc`` still runs, then SIGKILL if it has not exited after ``timeout`` s."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


# -- scratch databases -----------------------------------------------------------------------

PG_HOST = "127.0.0.1"
PG_PORT = 5432
PG_USER = "postgres"


def pg_conninfo(dbname: str) -> str:
    return f"host={PG_HOST} port={PG_PORT} user={PG_USER} dbname={dbname}"


def pg_url(dbname: str) -> str:
    return f"postgresql://{PG_USER}@{PG_HOST}:{PG_PORT}/{dbname}"


class ScratchPostgres:
    """Creates databases named ``<prefix>_<run>_<n>`` and drops every one of them on exit."""

    def __init__(self) -> None:
        self.run_id = secrets.token_hex(4)
        self.created: list[str] = []
        self._admin: psycopg.Connection[tuple[object, ...]] | None = None
        self._counter = 0

    def __enter__(self) -> ScratchPostgres:
        self._admin = psycopg.connect(pg_conninfo("postgres"), autocommit=True)
        return self

    def __exit__(self, *exc: object) -> None:
        for name in reversed(self.created):
            self.drop(name)
        if self._admin is not None:
            self._admin.close()

    @property
    def admin(self) -> psycopg.Connection[tuple[object, ...]]:
        assert self._admin is not None, "use ScratchPostgres as a context manager"
        return self._admin

    def server_version(self) -> str:
        row = self.admin.execute("SHOW server_version").fetchone()
        return str(row[0]) if row else "?"

    def create(self, prefix: str, template: str | None = None) -> str:
        self._counter += 1
        name = f"{prefix}_{self.run_id}_{self._counter}"
        stmt = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
        if template is not None:
            stmt = sql.SQL("{} TEMPLATE {}").format(stmt, sql.Identifier(template))
        self.admin.execute(stmt)
        self.created.append(name)
        return name

    def drop(self, name: str) -> None:
        self.admin.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )
        if name in self.created:
            self.created.remove(name)


def sqlite_exec(url: str, *statements: str) -> None:
    """Run ``statements`` on the SQLite file at ``url``, each in its own transaction."""
    con = sqlite3.connect(url.removeprefix("sqlite:///"), isolation_level=None)
    try:
        for statement in statements:
            con.execute(statement)
    finally:
        con.close()


def vacuum_postgres(dbname: str, table: str | None = None) -> None:
    """``VACUUM ANALYZE`` of ``table``, or of the whole database."""
    statement: sql.SQL | sql.Composed = sql.SQL("VACUUM ANALYZE")
    if table is not None:
        statement = sql.SQL("VACUUM ANALYZE {}").format(sql.Identifier(table))
    with psycopg.connect(pg_conninfo(dbname), autocommit=True) as conn:
        conn.execute(statement)


def analyze(url: str) -> None:
    """Fresh planner statistics for the database at ``url`` (SQLite: and its WAL folded in)."""
    if url.startswith("sqlite:///"):
        sqlite_exec(url, "ANALYZE", "PRAGMA wal_checkpoint(TRUNCATE)")
    else:
        vacuum_postgres(url.rsplit("/", 1)[1])


# -- child processes -------------------------------------------------------------------------

# The protocol and loop seojobs serve uses (seojobs.api.protocol), for both.
UVICORN_OPTIONS = (
    *("--host", "127.0.0.1", "--loop", UVICORN_LOOP, "--http", UVICORN_HTTP),
    "--proxy-headers" if UVICORN_PROXY_HEADERS else "--no-proxy-headers",
    *("--no-access-log", "--log-level", "warning"),
)
START_TIMEOUT = 60.0
STATUS_PATH = "/api/v1/index-check/jobs/"  # a job id is appended


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def seojobs_env(**settings: object) -> dict[str, str]:
    """The caller's environment without its SEOJOBS_* settings, plus ``settings`` as
    SEOJOBS_<NAME> (``database_url=...`` is SEOJOBS_DATABASE_URL)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEOJOBS_")}
    env.update({f"SEOJOBS_{name.upper()}": str(value) for name, value in settings.items()})
    return env


class Server:
    """``uvicorn --factory <factory>`` on a free loopback port, until ``stop()``."""

    def __init__(
        self,
        factory: str,
        ready_path: str,
        env: dict[str, str],
        log: Path,
        extra: Sequence[str] = (),
    ) -> None:
        self.factory = factory
        self.extra = list(extra)
        self.ready_path = ready_path
        self.env = {**seojobs_env(), **env}
        self.log = log
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def __enter__(self) -> Server:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        with self.log.open("ab") as out:
            command = [sys.executable, "-m", "uvicorn", "--factory", self.factory]
            self.proc = subprocess.Popen(
                [*command, "--port", str(self.port), *UVICORN_OPTIONS, *self.extra],
                cwd=REPO,
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.factory} exited at start-up:\n{self.log_tail()}")
            with contextlib.suppress(OSError):
                if self.get(self.ready_path, {}, timeout=2)[0] == 200:
                    return
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"{self.factory} did not answer in {START_TIMEOUT:.0f} s")

    def get(
        self, path: str, headers: dict[str, str], timeout: float = 10
    ) -> tuple[int, dict[str, str], bytes]:
        """One request, for the sanity check before the load."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            conn.request("GET", path, headers=headers)
            response = conn.getresponse()
            return response.status, dict(response.getheaders()), response.read()
        finally:
            conn.close()

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None:
            stop(proc)

    def log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"


@functools.cache
def compile_seojobs() -> None:
    """seojobs' modules compiled to bytecode (in its ``__pycache__``), once per bench process,
    before a worker starts, as an installed seojobs has them (why: docs/bench/audit.md)."""
    import seojobs

    compileall.compile_dir(Path(seojobs.__file__).parent, quiet=1)


class WorkerProcess:
    """``seojobs worker`` as a child process (pinned to ``cpu``), its log lines kept in
    ``log``, reading our modules compiled (:func:`compile_seojobs`)."""

    def __init__(self, env: dict[str, str], log: Path, cpu: int | None = None) -> None:
        compile_seojobs()
        seojobs = Path(sys.executable).with_name("seojobs")
        self.log = log
        self.started = threading.Event()
        self.proc = subprocess.Popen(
            [str(seojobs), "worker", "--concurrency", "1"],
            cwd=REPO,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            preexec_fn=(lambda: os.sched_setaffinity(0, {cpu})) if cpu is not None else None,
        )
        threading.Thread(target=self._read_log, daemon=True).start()

    def _read_log(self) -> None:
        assert self.proc.stderr is not None
        with self.log.open("ab") as out:
            for line in self.proc.stderr:
                out.write(line)
                if b"starting" in line:
                    self.started.set()

    def wait_idle(self) -> None:
        """Until it logged its start and then used no CPU for 0.2 s (imports and connections
        done): CPU read after that is the job's."""
        deadline = time.monotonic() + START_TIMEOUT
        while not self.started.wait(0.1):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the worker did not start; see {self.log}")
        before = proc_cpu(self.proc.pid)
        while time.monotonic() < deadline:
            time.sleep(0.2)
            now = proc_cpu(self.proc.pid)
            if now - before < 0.01:
                return
            before = now
        raise RuntimeError("the worker kept busy before any job was created")

    def stop(self) -> None:
        stop(self.proc, timeout=30)


# -- the API apps (``uvicorn --factory bench.lib.core:ours_app`` / ``:bare_app``) ----------------

UNLIMITED = "100000000/minute"  # SEOJOBS_RATE_LIMIT: the limiter runs but never refuses


def ours_server(url: str, log: Path, rate_limit: str = UNLIMITED, processes: int = 1) -> Server:
    """Our API (no worker) on the database at ``url``, in ``processes`` uvicorn workers."""
    env = {"SEOJOBS_DATABASE_URL": url, "SEOJOBS_RATE_LIMIT": rate_limit}
    extra = ["--workers", str(processes)] if processes > 1 else []
    return Server("bench.lib.core:ours_app", "/healthz", env, log, extra)


def tree_cpu(pid: int) -> float:
    """CPU seconds of ``pid`` and its descendants so far."""
    return sum(proc_cpu(p) for p in descendants(pid))


BARE_PATH = "/const"

CONSTANT: dict[str, Any] = {
    "job_id": 1,
    "status": "pending",
    "title": None,
    "total_urls": 1,
    "failed_count": 0,
    "progress_percent": 0,
    "created_at": "2025-01-01T00:00:00+00:00",
    "completed_at": None,
    "error": None,
    "checked_urls": 0,
    "indexed_count": 0,
    "not_indexed_count": 0,
}


def ours_app() -> FastAPI:
    from seojobs.api import create_app
    from seojobs.settings import Settings

    return create_app(Settings(), run_worker=False)


def bare_app() -> FastAPI:
    from fastapi import FastAPI

    app = FastAPI()

    @app.get(BARE_PATH)
    async def const() -> dict[str, Any]:
        return CONSTANT

    return app


# -- the load generator: wrk with a Lua script ------------------------------------------------

# Writes one line the parent parses. Latencies are in microseconds (wrk's unit).
WRK_SCRIPT = """
local first, span, path, auth, pause
function init(args)
  first = tonumber(args[1])
  span = tonumber(args[2])
  path = args[3]
  auth = args[4]
  pause = tonumber(args[5])
  math.randomseed(os.time() + math.floor(os.clock() * 1000000))
end
function request()
  local target = path
  if span > 0 then
    target = path .. (first + math.random(0, span - 1))
  end
  return wrk.format("GET", target, {["Authorization"] = auth})
end
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    "WRK_RESULT %d %d %d %d %d %d %d %d %d %d %d\\n",
    summary.requests, summary.duration,
    latency:percentile(50), latency:percentile(99), latency.max, latency.mean,
    e.connect, e.read, e.write, e.status, e.timeout))
end
"""
# wrk paces a connection only if the script defines delay() (whole milliseconds).
WRK_PACING = """
function delay()
  return math.floor(-pause * math.log(1 - math.random()) + 0.5)
end
"""


@dataclass(frozen=True)
class Load:
    requests: int
    seconds: float
    p50_ms: float
    p99_ms: float
    max_ms: float
    mean_ms: float
    errors: int  # socket errors and timeouts
    bad_status: int  # answers other than 2xx/3xx

    @property
    def rate(self) -> float:
        return self.requests / self.seconds if self.seconds > 0 else 0.0

    def __str__(self) -> str:
        return f"{self.rate:,.0f} req/s, p50 {self.p50_ms:.1f} ms, p99 {self.p99_ms:.1f} ms"


@dataclass(frozen=True)
class LoadTarget:
    port: int
    path: str  # "/api/v1/index-check/jobs/" (a random id is appended), or a fixed path
    first_id: int = 0
    span: int = 0  # 0: the fixed path
    auth: str = ""  # the Authorization header sent


def wrk() -> str:
    """wrk's path; it is required (``apt-get install wrk``)."""
    found = shutil.which("wrk")
    if found is None:
        raise SystemExit("wrk not found: apt-get install wrk")
    return found


def wrk_version() -> str:
    out = subprocess.run([wrk(), "-v"], capture_output=True, text=True, check=False)
    return (out.stdout + out.stderr).strip().splitlines()[0] if out.stdout or out.stderr else "?"


def run_wrk(target: LoadTarget, connections: int, seconds: float, pause_ms: float = 0.0) -> Load:
    """``connections`` keep-alive connections GET ``target`` for ``seconds`` (one wrk thread),
    each pausing a random time of mean ``pause_ms`` after every answer when it is set."""
    with tempfile.TemporaryDirectory(prefix="seojobs_api_wrk_") as tmp:
        script = Path(tmp) / "status.lua"
        script.write_text(WRK_SCRIPT + (WRK_PACING if pause_ms > 0 else ""))
        cmd = [wrk(), "-t1", f"-c{connections}", f"-d{max(1, round(seconds))}s", "--timeout"]
        cmd += ["10s", "-s", str(script), f"http://127.0.0.1:{target.port}", "--"]
        cmd += [str(target.first_id), str(target.span), target.path, target.auth, str(pause_ms)]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 60, check=False)
    for line in out.stdout.splitlines():
        if line.startswith("WRK_RESULT "):
            f = [int(v) for v in line.split()[1:]]
            p50, p99, top, mean = (v / 1000 for v in f[2:6])
            return Load(f[0], f[1] / 1e6, p50, p99, top, mean, f[6] + f[7] + f[8] + f[10], f[9])
    raise RuntimeError(f"wrk gave no result (exit {out.returncode}): {out.stderr.strip()[-500:]}")


@dataclass(frozen=True)
class Run:
    """A load to measure: ``what`` (the caller's key of its samples; ``label`` for progress),
    wrk's ``connections`` against ``target`` on ``server``, each pausing ``pause_ms`` on average
    after every answer when it is set (a fixed offered load)."""

    what: tuple[Any, ...]
    label: str
    server: Server
    target: LoadTarget
    connections: int
    pause_ms: float = 0.0


@dataclass(frozen=True)
class Sample:
    """One measured :class:`Run`: its round, wrk's Load, the CPU ms of the server's process
    tree per answer and the share of the machine's CPUs every other process used (neither the
    server nor the load generator)."""

    what: tuple[Any, ...]
    round: int
    load: Load
    cpu_ms: float
    others: float


def loaded(run: Run, seconds: float, rnd: int = 0) -> Sample:
    """One :func:`run_wrk` of ``run``; raises on a socket error or a non-2xx answer."""
    cpu0 = tree_cpu(run.server.pid)  # (read outside the machine's span: it scans /proc)
    busy0, kids0, t0 = machine_busy(), children_cpu(), time.monotonic()
    load = run_wrk(run.target, run.connections, seconds, run.pause_ms)
    elapsed, busy, kids = time.monotonic() - t0, machine_busy(), children_cpu()
    server_cpu = tree_cpu(run.server.pid) - cpu0
    others = busy - busy0 - server_cpu - (kids - kids0)
    if load.errors or load.bad_status or not load.requests:
        raise RuntimeError(
            f"{load.errors} socket errors, {load.bad_status} non-2xx answers of {load.requests} "
            f"at {run.connections} connections\n{run.server.log_tail()}"
        )
    share = max(0.0, others / ((os.cpu_count() or 1) * elapsed))
    return Sample(run.what, rnd, load, server_cpu / load.requests * 1000, share)


def interleave(
    groups: Sequence[Sequence[Run]], rounds: int, seconds: float, found: list[Sample]
) -> None:
    """``rounds`` rounds of every run, each group's runs in an order rotating from round to
    round, so that a burst of other load hits them alike; each Sample added to ``found`` as
    it is measured (a report of an interrupted run has them)."""
    for rnd in range(rounds):
        for group in groups:
            shift = rnd % len(group)
            for run in [*group[shift:], *group[:shift]]:
                found.append(loaded(run, seconds, rnd))
                progress(f"round {rnd + 1} {run.label}: {found[-1].load}")


def median_of(samples: Iterable[Sample], what: tuple[Any, ...], figure: str) -> float:
    """The median ``figure`` (a Sample's or its Load's attribute) of the samples of ``what``."""
    found = [s for s in samples if s.what == what]
    return median([getattr(s if hasattr(s, figure) else s.load, figure) for s in found])
