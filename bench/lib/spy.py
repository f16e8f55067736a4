"""py-spy profiles (``record --gil --format raw``: each sample is a moment of Python work, the
thread holding the GIL): the API servers' by step of the status GET (inclusive) and by library
of the innermost frame (exclusive), for ``bench/api.py``; ``bench/check.py --profile`` and
``bench/audit.py --profile`` put each sample in the first category its stack matches. How to
read them: docs/bench/api.md, check.md and audit.md.
"""

from __future__ import annotations

import collections
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from bench.lib.core import table

RATE = 200  # samples per second of the API servers
SELF_RATE = 250  # of bench/check.py's own process
FRAME = re.compile(r"^(?P<func>.*) \((?P<file>.*?)(?::\d+)?\)$")


def _table(text: str) -> list[tuple[str, ...]]:
    """Rows of ``label | cell | ...`` lines (a label keeps its indentation)."""
    rows = [line.split(" | ") for line in text.strip("\n").splitlines()]
    return [(label.rstrip(), *(cell.strip() for cell in cells)) for label, *cells in rows]


# label | function | file: a sample counts for the step when a frame on its stack has a
# function (py-spy's qualified name) matching the regex in full, in a file whose path contains
# the text. Inclusive; indentation shows nesting. Names are those of the installed versions
# (FastAPI 0.165: its own APIRouter and _IncludedRouter do the route matching).
STEPS: list[tuple[str, tuple[str, str]]] = [
    (label, (func, where))
    for label, func, where in _table(r"""
uvicorn: read + parse the request | (H11|HttpTools)Protocol\.(data_received|on_\w+) | uvicorn/
ASGI app call (middleware, routing, handler, send) | FastAPI\.__call__ | fastapi/
  FastAPI routing: match the route | (API)?Route\.matches|_IncludedRouter\.(_?match(es)?|effective_candidates) | routing
  PathIdRoute handler (job_id validated) | PathIdRoute\.(__init__|get_route_handler)\.<locals>\.(app|handler) | seojobs/api/
    handler get_check -> v1._status | _status | seojobs/api/v1.py
      current_user (auth cache + rate limiter) | current_user | seojobs/api/deps.py
        _authenticate (sha256 of key, AuthCache) | _authenticate | seojobs/api/deps.py
        RateLimiter.hit (+ Verdict) | RateLimiter\.hit | seojobs/api/ratelimit.py
          MemoryWindows.hit (deque per user) | MemoryWindows\.hit | seojobs/api/
      Jobs.summary -> FastReads | Jobs\.summary | seojobs/services/
        FastReads.job (store/fastread.py) | FastReads\.job | seojobs/store/fastread.py
          SQLite read on the loop (Python side) | FastReads\._sqlite_rows | seojobs/store/fastread.py
          PostgreSQL: join the batch, wait | FastReads\._batch | seojobs/store/fastread.py
          row conversion (-> JobRecord) | FastReads\._record | seojobs/store/fastread.py
      indexing.status_body | status_body | seojobs/services/indexing.py
      JSONResponse (build + json.dumps) | JSONResponse\.render | starlette/
  response send (middleware wrappers) | Response\.__call__ | starlette/
    uvicorn: write the response | RequestResponseCycle\.send | uvicorn/
psycopg async pool + batch flush (own task) | FastReads\._flush | seojobs/store/fastread.py
  pool checkout + return (psycopg_pool) | AsyncConnectionPool\.(connection|getconn|putconn) | psycopg_pool/
  AsyncCursor.execute (send query, read result) | AsyncCursor\.execute | psycopg/
  AsyncCursor.fetchall (rows -> tuples) | AsyncCursor\.fetchall | psycopg/
expected ~0: anyio pool thread (auth-cache miss) | WorkerThread\.run | anyio/
expected ~0: asyncio.to_thread (SQLite busy) | _worker | concurrent/futures/thread.py
expected ~0: SQLAlchemy statement, anywhere | Connection\.execute | sqlalchemy/
expected ~0: FastAPI's solve_dependencies | solve_dependencies | fastapi/
""")  # noqa: E501
]
# label | pattern, checked in order: a sample counts for the first category whose pattern is
# in its stack (exclusive: the rows add up to 100 %), so the narrower come first.
# bench/check.py --profile, over this process:
CHECK_CATEGORIES = _table(r"""
httpcore: failed 'import sniffio' per lock use | current_async_library \(httpcore[^;]*;[^;]*_find_and_load
httpcore: pool scan (_assign_requests_to_connections) | _assign_requests_to_connections
DB: record each item (thread side: SQLAlchemy + SQLite) | record(_items)? \(seojobs/store/
DB: record each item (loop side: outcomes, lock, executor hop) | JobContext\.record
DB: claim, items page, completion, probe | sqlalchemy|sqlite3|seojobs/store/
diagnostics: canonical URL resolving (fetch.urls) | _canonical \(
diagnostics: parse_head (scanner; html.parser for odd markup) | parse_head
diagnostics: rest (verdict, to_dict, directives) | diagnose \(|Diagnostics\.to_dict
robots.txt: cache and protego verdicts | RobotsCache|protego
fetcher: guard, pinning, politeness gate | AddressGuard|pinned|Pinning|HostGate
fetcher: body read (_read_capped) | _read_capped
Serper: response parsing and URL match | SerperChecker\._parse|urlmatch
Serper: the POST (provider HTTP client) | SerperChecker\._attempt
fetcher: the page GET (HttpClient, aiohttp) | Fetcher\._hop
HTTP stack elsewhere (aiohttp protocol, httpx, yarl, multidict) | httpx/|httpcore/|h11/|anyio/|aiohttp/|yarl/|multidict/
seojobs glue (run_items, handler, worker) | seojobs/
asyncio event loop | asyncio/
""")  # noqa: E501
# bench/audit.py --profile, over the worker process:
AUDIT_CATEGORIES = _table(r"""
page parsing (page.parse_page: Lexbor, the walk, words, hash) | parse_page \(
links: join + normalise (crawler._links, page_key) | _links \(|_canonical \(|page_key \(
per-page checks (checks.page_findings) | page_findings \(
frontier: add_items (loop + DB thread) | Frontier\.add \(|add_items \(seojobs/store/
record results: DB thread (SQLAlchemy + SQLite/psycopg) | record(_items)? \(seojobs/store/
record results: loop side (outcomes, JSON of results) | JobContext\.(record|_write)
robots.txt verdicts | robots_verdict \(|RobotsCache|protego
fetcher: guard, pinning, politeness gate | AddressGuard|[Pp]inn|HostGate
fetcher: the page GET (HttpClient, aiohttp) | Fetcher\.fetch \(
site-wide checks and summary (after the crawl) | site_findings \(|summary \(
items read (open items, read back) | open_items|_open_items_after|items_page
other DB work (claim, heartbeat, listener) | sqlalchemy|sqlite3|psycopg|seojobs/store/
aiohttp / HTTP elsewhere | aiohttp/|yarl/|multidict/
seojobs glue (run_items, handler, worker) | seojobs/
asyncio event loop | asyncio/|selectors
""")
CHECK_EXCLUDE = re.compile(r"create_job|_verify|prepare_template|_warm \(")

_MATCHERS = [(name, re.compile(func), where) for name, (func, where) in STEPS]
# The outermost frame of a complete stack: the main thread's, or another thread's.
ROOTS = {"_run_module_as_main", "Thread._bootstrap"}

LIBRARIES = {
    "sqlalchemy": "SQLAlchemy",
    "psycopg": "psycopg (driver)",
    "psycopg_pool": "psycopg_pool",
    "sqlite3": "sqlite3 (driver)",
    "fastapi": "FastAPI",
    "starlette": "Starlette",
    "anyio": "anyio",
    "uvicorn": "uvicorn",
    "h11": "h11",
    "httptools": "httptools",
    "asyncio": "asyncio event loop",
    "selectors.py": "asyncio event loop",
    "threading.py": "threading (thread hand-off)",
    "queue.py": "threading (thread hand-off)",
    "concurrent": "threading (thread hand-off)",
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
    incomplete: int = 0  # samples whose stack does not reach a thread's entry point
    error: str | None = None

    @property
    def gil_busy(self) -> float:
        return self.samples / (RATE * self.seconds) if self.seconds else 0.0

    def per_request_us(self, samples: int) -> float:
        return samples / RATE / self.requests * 1e6 if self.requests else 0.0


def available() -> str | None:
    """py-spy beside the interpreter (the dev venv has it), else on PATH."""
    beside = Path(sys.executable).with_name("py-spy")
    return str(beside) if beside.exists() else shutil.which("py-spy")


@dataclass
class Recording:
    raw: str | None = None  # py-spy's raw stacks
    error: str | None = None  # why there are none


@contextmanager
def recording(
    pid: int, rate: int, seconds: float | None = None, attach: float = 1.0
) -> Iterator[Recording]:
    """py-spy samples ``pid`` for the block (which starts ``attach`` s later, once it is
    attached), or for ``seconds`` when set; then the Recording has its stacks or an error."""
    got = Recording()
    binary = available()
    if binary is None:
        got.error = "py-spy not found"
        yield got
        return
    with tempfile.TemporaryDirectory(prefix="seojobs_bench_spy_") as tmp:
        out = Path(tmp) / "raw.txt"
        args = [binary, "record", "--pid", str(pid), "--rate", str(rate), "--format", "raw"]
        if seconds is not None:
            args += ["--duration", str(max(1, round(seconds)))]
        proc = subprocess.Popen(
            [*args, "--gil", "-o", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        try:
            time.sleep(attach)
            yield got
        finally:
            if seconds is None:
                proc.send_signal(signal.SIGINT)
            try:
                _, err = proc.communicate(timeout=(seconds or 0) + 30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                got.error = "py-spy did not finish"
            else:
                got.raw = out.read_text() if out.exists() else None
                detail = err.decode(errors="replace").strip()[-300:]
                got.error = None if out.exists() else f"py-spy wrote nothing: {detail}"


def categorise(
    raw: str, categories: list[tuple[str, ...]], exclude: re.Pattern[str] | None
) -> tuple[int, collections.Counter[str]]:
    """(samples, samples per category) of py-spy's raw output: each sample counts for the
    first of ``categories`` whose pattern is in its stack; stacks ``exclude`` finds are left
    out (set-up work)."""
    total = 0
    found: collections.Counter[str] = collections.Counter()
    for line in raw.splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit() or (exclude is not None and exclude.search(stack)):
            continue
        total += int(count)
        name = next((n for n, pattern in categories if re.search(pattern, stack)), "other")
        found[name] += int(count)
    return total, found


def _frames(stack: str) -> list[tuple[str, str]]:
    frames = []
    for raw in stack.split(";"):
        m = FRAME.match(raw)
        frames.append((m["func"], m["file"]) if m else (raw, ""))
    return frames


def _library(file: str) -> str:
    head = file.split("/", 1)[0]
    return LIBRARIES.get(head, "other")


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
        if frames[0][0] not in ROOTS:
            prof.incomplete += n
        for name, func, where in _MATCHERS:
            if any(where in file and func.fullmatch(f) for f, file in frames):
                steps[name] += n
    prof.steps = {name: steps[name] for name, _ in STEPS}
    return prof


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
    if prof.incomplete:
        lines.append(
            f"{prof.incomplete / (prof.samples or 1):.0%} of the samples had an incomplete "
            "stack: counted by library, missed by the steps they do not reach."
        )
    if brief:
        return lines
    lines.append("")
    total = prof.samples or 1
    rows = [
        [name, f"{n / total:.1%}", f"{prof.per_request_us(n):,.0f}"]
        for name, n in prof.steps.items()
    ]
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


def shares(
    raw: str | None, categories: list[tuple[str, ...]], per: Callable[[int, int], float], head: str
) -> list[str]:
    """Where the GIL time of ``raw`` goes (``categorise``; CHECK_EXCLUDE left out with
    CHECK_CATEGORIES): each category's share and ``per(samples, total)`` ms, under ``head``
    (formatted with the ``total`` samples and ``all``, ``per`` of them)."""
    if raw is None:
        return ["profile: py-spy missing or could not attach (no permission?); skipped"]
    exclude = CHECK_EXCLUDE if categories is CHECK_CATEGORIES else None
    total, found = categorise(raw, categories, exclude)
    if not total:
        return ["profile: no samples"]
    rows = [[name, f"{n / total:.1%}", f"{per(n, total):.3f}"] for name, n in found.most_common()]
    return [
        head.format(total=total, all=per(total, total)),
        *table(["where the GIL time goes", "share", "ms"], rows),
    ]
