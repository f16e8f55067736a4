"""Results and the printed report of ``bench/check.py``."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from bench.text import table, verdict

TARGET_RATE = 500.0  # URLs/s per worker process
TARGET_RATIO = 0.7  # of the bare httpx loop at the same concurrency

BARE = "bare httpx"
OURS = "seojobs"


@dataclass(frozen=True)
class Run:
    """One timed pass over the URL list."""

    system: str  # OURS or BARE
    dialect: str  # sqlite | postgresql | "-" (bare)
    concurrency: int
    host_concurrency: int | None  # fetch_host_concurrency (None: the bare loop has no gate)
    urls: int
    seconds: float
    cpu_seconds: float  # this process, every thread (event loop, DB threads, listener)
    loop_wait_seconds: float  # the event-loop thread runnable but waiting for a CPU
    server_cpu_seconds: float  # the site + fake Serper process
    server_wait_seconds: float  # the site process runnable but waiting for a CPU
    others_busy: float  # CPUs kept busy by every other process meanwhile (PostgreSQL too)

    @property
    def rate(self) -> float:
        return self.urls / self.seconds

    @property
    def cpu_ms_per_url(self) -> float:
        return self.cpu_seconds * 1000 / self.urls

    @property
    def key(self) -> tuple[str, str, int, int | None]:
        return (self.system, self.dialect, self.concurrency, self.host_concurrency)


@dataclass
class Results:
    urls: int
    environment: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    runs: list[Run] = field(default_factory=list)

    def group(self, key: tuple[str, str, int, int | None]) -> list[Run]:
        return [r for r in self.runs if r.key == key]

    def best(self, key: tuple[str, str, int, int | None]) -> Run | None:
        runs = self.group(key)
        return max(runs, key=lambda r: r.rate) if runs else None

    def row_keys(self) -> list[tuple[str, str, int, int | None]]:
        return list(dict.fromkeys(r.key for r in self.runs))


def _host(run: Run) -> str:
    if run.host_concurrency is None:
        return "-"
    polite = " (default)" if run.host_concurrency == 2 else ""
    return f"{run.host_concurrency}{polite}"


def _summary_row(results: Results, key: tuple[str, str, int, int | None]) -> list[str]:
    best = results.best(key)
    assert best is not None
    cpu = statistics.median(r.cpu_ms_per_url for r in results.group(key))
    bare_key = (BARE, "-", best.concurrency, None)
    bare = results.best(bare_key) if best.system == OURS else None
    ratio = cpu_ratio = None
    if bare is not None:
        ratio = best.rate / bare.rate
        cpu_ratio = statistics.median(r.cpu_ms_per_url for r in results.group(bare_key)) / cpu
    return [
        best.system,
        best.dialect,
        str(best.concurrency),
        _host(best),
        f"{best.rate:,.0f}",
        f"{bare.rate:,.0f}" if bare else "-",
        f"{ratio:.2f}" if ratio is not None else "-",
        f"{cpu:.2f}",
        f"{1000 / cpu:,.0f}",
        f"{cpu_ratio:.2f}" if cpu_ratio is not None else "-",
        verdict(best.rate >= TARGET_RATE),
        verdict(ratio >= TARGET_RATIO) if ratio is not None else "-",
        verdict(cpu_ratio >= TARGET_RATIO) if cpu_ratio is not None else "-",
    ]


def _summary(results: Results) -> list[str]:
    rows = [_summary_row(results, key) for key in results.row_keys()]
    headers = [
        "system",
        "db",
        "conc",
        "per-host",
        "URLs/s",
        "bare URLs/s",
        "ratio",
        "CPU ms/URL",
        "URLs/CPU-s",
        "CPU ratio",
        f">= {TARGET_RATE:.0f}/s",
        f">= {TARGET_RATIO} x bare",
        f"CPU ratio >= {TARGET_RATIO}",
    ]
    return table(headers, rows, {2, 4, 5, 6, 7, 8, 9})


def _every_run(results: Results) -> list[str]:
    rows = [
        [
            r.system,
            r.dialect,
            str(r.concurrency),
            _host(r),
            f"{r.seconds:.2f}",
            f"{r.rate:,.0f}",
            f"{r.cpu_ms_per_url:.2f}",
            f"{r.cpu_seconds / r.seconds:.0%}",
            f"{r.loop_wait_seconds / r.seconds:.0%}",
            f"{r.server_cpu_seconds / r.seconds:.0%}",
            f"{r.server_wait_seconds / r.seconds:.0%}",
            f"{r.others_busy:.2f}",
        ]
        for r in results.runs
    ]
    headers = [
        "system",
        "db",
        "conc",
        "per-host",
        "seconds",
        "URLs/s",
        "CPU ms/URL",
        "bench CPU",
        "loop waits",
        "site CPU",
        "site waits",
        "others",
    ]
    return table(headers, rows, {2, 4, 5, 6, 7, 8, 9, 10, 11})


def render(results: Results) -> str:
    out = ["", "seojobs index-check benchmark (bench/check.py)", ""]
    out += [f"  {line}" for line in results.environment]
    out += ["", "Every run, in the order run"]
    if results.runs:
        out += _every_run(results)
    out += [
        "",
        "Summary: best run per row. ratio = our URLs/s / the bare loop's at the same concurrency.",
        "URLs/CPU-s = 1000 / CPU ms/URL: what the process would do with a core to itself.",
        "CPU ratio = the bare loop's CPU ms/URL / ours (medians): the ratio both would have if",
        "CPU-bound, and far less sensitive to other load on the machine than URLs/s.",
    ]
    if results.runs:
        out += _summary(results)
    if results.notes:
        out += ["", "Notes"] + [f"  {line}" for line in results.notes]
    return "\n".join(out) + "\n"
