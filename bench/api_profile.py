"""Where the API process spends its time under load: py-spy against the server's pid.

``py-spy record --gil --format raw`` samples only the thread that holds the GIL, so each sample
is a moment of Python work in the process (any thread: the event loop or a pool worker). Time
with no thread holding the GIL (waiting for the socket, for the database server, for a thread
to be woken, inside SQLite's C code) is not sampled; ``gil_busy`` says how much of the wall
time had a sample.

Two views of the same samples:

- by step of the status GET (inclusive: a sample counts for every step on its stack, so these
  do not add up to 100 %), converted to microseconds of GIL time per request;
- by library of the innermost frame (exclusive: adds up to 100 %).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from bench.api_report import table

RATE = 200  # samples per second
FRAME = re.compile(r"^(?P<func>.*) \((?P<file>.*?)(?::\d+)?\)$")

# (label, matcher on (function, file)); inclusive.
STEPS: list[tuple[str, tuple[str, str]]] = [
    ("uvicorn h11 protocol: parse request", ("H11Protocol.data_received", "uvicorn/")),
    ("middleware + routing + FastAPI (whole app call)", ("FastAPI.__call__", "fastapi/")),
    ("  FastAPI solve_dependencies", ("solve_dependencies", "fastapi/")),
    ("  dep `services` (sync: runs in the pool)", ("services", "seojobs/api/deps.py")),
    ("  dep `current_user` (sync: runs in the pool)", ("current_user", "seojobs/api/deps.py")),
    ("    Services.authenticate (sha256 + user query)", ("Services.authenticate", "seojobs/")),
    ("    RateLimiter.hit (limits, moving window)", ("RateLimiter.hit", "seojobs/")),
    ("  handler get_check -> _status", ("_status", "seojobs/api/v1.py")),
    ("    v1._job -> Services.job (job + project)", ("Services.job", "seojobs/")),
    ("    v1._body (status dict)", ("_body", "seojobs/api/v1.py")),
    ("    JSONResponse (build + json.dumps)", ("JSONResponse.render", "starlette/")),
    ("  response send (middleware wrappers, h11)", ("Response.__call__", "starlette/")),
    ("thread pool: event-loop side (run_in_threadpool)", ("run_in_threadpool", "starlette/")),
    ("SQLAlchemy: engine.connect / pool checkout", ("Engine.connect", "sqlalchemy/")),
    ("SQLAlchemy: transaction begin (+ SQLite BEGIN)", ("Connection.begin", "sqlalchemy/")),
    ("SQLAlchemy: Connection.execute (all statements)", ("Connection.execute", "sqlalchemy/")),
    ("SQLite connect hook (new pool connection)", ("_sqlite_on_connect", "seojobs/")),
    ("limits storage expiry timer thread", ("Timer.run", "threading.py")),
]

LIBRARIES = {
    "sqlalchemy": "SQLAlchemy",
    "psycopg": "psycopg (driver)",
    "sqlite3": "sqlite3 (driver)",
    "fastapi": "FastAPI",
    "starlette": "Starlette",
    "anyio": "anyio (thread pool)",
    "uvicorn": "uvicorn",
    "h11": "h11",
    "asyncio": "asyncio event loop",
    "selectors.py": "asyncio event loop",
    "threading.py": "threading (thread hand-off, Timer)",
    "queue.py": "threading (thread hand-off, Timer)",
    "concurrent": "threading (thread hand-off, Timer)",
    "limits": "limits (rate limiter)",
    "seojobs": "seojobs",
    "bench": "seojobs",
    "json": "json",
    "pydantic": "pydantic",
    "pydantic_core": "pydantic",
}


@dataclass
class Profile:
    label: str
    seconds: float
    requests: int
    samples: int = 0
    steps: dict[str, int] = field(default_factory=dict)
    libraries: Counter[str] = field(default_factory=Counter)
    worker_thread: int = 0  # samples on a pool worker thread
    pool_overhead: int = 0  # ... of which not inside our code (hand-off, anyio)
    error: str | None = None

    @property
    def gil_busy(self) -> float:
        return self.samples / (RATE * self.seconds) if self.seconds else 0.0

    def per_request_us(self, samples: int) -> float:
        return samples / RATE / self.requests * 1e6 if self.requests else 0.0


def available() -> str | None:
    here = Path(__file__).resolve().parent.parent / ".venv" / "bin" / "py-spy"
    return str(here) if here.exists() else shutil.which("py-spy")


def start(binary: str, pid: int, seconds: float, out: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            binary,
            "record",
            "--pid",
            str(pid),
            "--duration",
            str(max(1, round(seconds))),
            "--rate",
            str(RATE),
            "--format",
            "raw",
            "--gil",
            "--nonblocking",
            "-o",
            str(out),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def _frames(stack: str) -> list[tuple[str, str]]:
    frames = []
    for raw in stack.split(";"):
        m = FRAME.match(raw)
        frames.append((m["func"], m["file"]) if m else (raw, ""))
    return frames


def _library(file: str) -> str:
    head = file.split("/", 1)[0]
    return LIBRARIES.get(head, "other")


OUR_WORK = {"services", "current_user", "Services.authenticate", "Services.job", "_body"}


def analyse(raw: str, label: str, seconds: float, requests: int) -> Profile:
    prof = Profile(label=label, seconds=seconds, requests=requests)
    steps: Counter[str] = Counter()
    for line in raw.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        frames = _frames(stack)
        prof.samples += n
        prof.libraries[_library(frames[-1][1])] += n
        for name, (func, where) in STEPS:
            if any(f == func and where in file for f, file in frames):
                steps[name] += n
        if any(f == "WorkerThread.run" for f, _ in frames):
            prof.worker_thread += n
            if not any(f in OUR_WORK and "seojobs/" in file for f, file in frames):
                prof.pool_overhead += n
    prof.steps = {name: steps[name] for name, _ in STEPS}
    return prof


def record(binary: str, pid: int, seconds: float) -> tuple[subprocess.Popen[bytes], Path, Path]:
    tmp = Path(tempfile.mkdtemp(prefix="seojobs_api_spy_"))
    out = tmp / "profile.txt"
    return start(binary, pid, seconds, out), out, tmp


def finish(
    proc: subprocess.Popen[bytes], out: Path, tmp: Path, label: str, seconds: float, requests: int
) -> Profile:
    try:
        _, err = proc.communicate(timeout=seconds + 30)
        if not out.exists():
            detail = err.decode(errors="replace").strip()[-300:]
            return Profile(label, seconds, requests, error=f"py-spy wrote nothing: {detail}")
        return analyse(out.read_text(), label, seconds, requests)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return Profile(label, seconds, requests, error="py-spy did not finish")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def render(prof: Profile, brief: bool = False) -> list[str]:
    if prof.error:
        return [f"{prof.label}: {prof.error}"]
    rps = prof.requests / prof.seconds if prof.seconds else 0.0
    lines = [
        f"{prof.label}: {prof.samples:,} GIL samples at {RATE} Hz over {prof.seconds:.0f} s, "
        f"{prof.requests:,} requests ({rps:,.0f}/s while sampled).",
        f"A thread held the GIL {prof.gil_busy:.0%} of the wall time: "
        f"{prof.per_request_us(prof.samples):,.0f} us of GIL time per request.",
    ]
    if brief:
        return lines
    lines.append("")
    total = prof.samples or 1
    rows = [
        [name, f"{n / total:.1%}", f"{prof.per_request_us(n):,.0f}"]
        for name, n in prof.steps.items()
    ]
    rows.append(
        [
            "thread pool: worker side outside our code (hand-off)",
            f"{prof.pool_overhead / total:.1%}",
            f"{prof.per_request_us(prof.pool_overhead):,.0f}",
        ]
    )
    lines += table(["step of the status GET (inclusive)", "GIL samples", "us/request"], rows)
    lines.append("")
    rows = [
        [lib, f"{n / total:.1%}", f"{prof.per_request_us(n):,.0f}"]
        for lib, n in prof.libraries.most_common()
    ]
    lines += table(
        ["library of the innermost frame (exclusive)", "GIL samples", "us/request"], rows
    )
    return lines
