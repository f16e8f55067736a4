"""``bench/check.py --profile``: where one of our runs spends its CPU, sampled by py-spy.

py-spy attaches to this very process (``--gil``: only the thread holding the GIL is sampled,
so the shares add up to the CPU the run used in Python) while one SQLite run at the highest
concurrency goes; then every sample is put in the first category its stack matches.
"""

from __future__ import annotations

import collections
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from bench.check_report import OURS

if TYPE_CHECKING:
    from bench.check_harness import Bench

RATE = 250  # samples per second
# Checked in order; a sample counts for the first category whose pattern is in its stack.
CATEGORIES: tuple[tuple[str, str], ...] = (
    (
        "httpcore: failed 'import sniffio' per lock use",
        r"current_async_library \(httpcore[^;]*;[^;]*_find_and_load",
    ),
    ("httpcore: pool scan (_assign_requests_to_connections)", r"_assign_requests_to_connections"),
    ("DB: record each item (thread side: SQLAlchemy + SQLite)", r"Worker\.record_items"),
    ("DB: record each item (loop side: outcomes, lock, executor hop)", r"JobContext\.record"),
    ("DB: claim, items page, completion, probe", r"sqlalchemy|sqlite3|seojobs/store/"),
    ("diagnostics: canonical URL resolving (fetch.urls)", r"_canonical \("),
    ("diagnostics: parse_head (html.parser)", r"parse_head"),
    ("diagnostics: rest (verdict, to_dict, directives)", r"diagnose \(|Diagnostics\.to_dict"),
    ("robots.txt: cache and protego verdicts", r"RobotsCache|protego"),
    ("fetcher: guard, pinning, politeness gate", r"AddressGuard|pinned|Pinning|HostGate"),
    ("fetcher: body read (_read_capped)", r"_read_capped"),
    ("Serper: response parsing and URL match", r"SerperChecker\._parse|urlmatch"),
    ("Serper: the POST (provider HTTP client)", r"SerperChecker\._attempt"),
    ("fetcher: the page GET (aiohttp)", r"Fetcher\._exchange"),
    (
        "HTTP stack elsewhere (aiohttp protocol, httpx, yarl, multidict)",
        r"httpx/|httpcore/|h11/|anyio/|aiohttp/|yarl/|multidict/",
    ),
    ("seojobs glue (run_items, handler, worker)", r"seojobs/"),
    ("asyncio event loop", r"asyncio/"),
)
EXCLUDE = re.compile(r"create_job|_verify|prepare_template|_warm \(")


def _py_spy() -> str | None:
    beside = Path(sys.executable).with_name("py-spy")
    return str(beside) if beside.exists() else shutil.which("py-spy")


def categorise(raw: str) -> tuple[int, collections.Counter[str]]:
    """(samples, samples per category) of py-spy's ``--format raw`` output."""
    total = 0
    found: collections.Counter[str] = collections.Counter()
    for line in raw.splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit() or EXCLUDE.search(stack):
            continue
        total += int(count)
        name = next((n for n, pattern in CATEGORIES if re.search(pattern, stack)), "other")
        found[name] += int(count)
    return total, found


def profile(bench: Bench, concurrency: int) -> list[str]:
    """Run ours once under py-spy; return report lines."""
    spy = _py_spy()
    if spy is None:
        return ["profile: py-spy not found next to the interpreter or on PATH; skipped"]
    with tempfile.TemporaryDirectory(prefix="seojobs_check_spy_") as tmp:
        out = Path(tmp) / "raw.txt"
        args = [spy, "record", "--pid", str(os.getpid()), "--gil", "--rate", str(RATE)]
        args += ["--format", "raw", "--output", str(out)]
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            time.sleep(1.0)  # let py-spy attach
            bench.ours("sqlite", concurrency, concurrency)
        finally:
            proc.send_signal(signal.SIGINT)  # py-spy writes its output on SIGINT
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        run = bench.results.runs.pop()  # reported here, not among the timed runs
        if not out.exists():
            return ["profile: py-spy wrote nothing (no permission to attach?); skipped"]
        total, found = categorise(out.read_text())
    if not total:
        return ["profile: no samples"]
    per_url = run.cpu_ms_per_url
    lines = [
        f"profile ({OURS} sqlite, c={concurrency}, per-host {concurrency}, under py-spy --gil: "
        f"{run.rate:,.0f} URLs/s, {per_url:.2f} CPU ms/URL, {total:,} samples):",
    ]
    for name, count in found.most_common():
        share = count / total
        lines.append(f"  {share:6.1%}  {share * per_url:5.2f} ms/URL  {name}")
    return lines
