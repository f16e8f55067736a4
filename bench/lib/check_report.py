"""Results and the printed report of ``bench/check.py``."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass, field

from bench.lib.cli import columns, failed, verdict

TARGET_RATE = 500.0  # URLs/s per worker process
# "0.7 x the bare aiohttp loop" is withdrawn (issue 23): the ratio is still printed, and the
# targets that replace it are judged on the --layers ladder (check_layers.checks).

BARE = "bare aiohttp"  # the ceiling: our fetcher and Serper adapter send with aiohttp
BARE_HTTPX = "bare httpx"  # for comparison with the figures before the ceiling changed
OURS = "seojobs"


@dataclass(frozen=True)
class Run:
    """One timed pass over the URL list."""

    system: str  # OURS, BARE or BARE_HTTPX
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
    layer_checks: list[tuple[str, str, bool]] = field(default_factory=list)

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


@dataclass(frozen=True)
class Row:
    """One summary row: the best run of a key, and ours against the ceiling."""

    best: Run
    cpu_ms: float  # median CPU ms/URL over the key's runs
    ceiling: Run | None = None  # the bare aiohttp loop's best at the same concurrency
    ratio: float | None = None
    cpu_ratio: float | None = None
    httpx_ratio: float | None = None

    @property
    def rate_ok(self) -> bool | None:
        return self.best.rate >= TARGET_RATE if self.best.system == OURS else None


def _median_cpu(results: Results, key: tuple[str, str, int, int | None]) -> float:
    return statistics.median(r.cpu_ms_per_url for r in results.group(key))


def summary_rows(results: Results) -> list[Row]:
    rows = []
    for key in results.row_keys():
        best = results.best(key)
        assert best is not None
        cpu = _median_cpu(results, key)
        if best.system != OURS:
            rows.append(Row(best, cpu))
            continue
        ceiling_key = (BARE, "-", best.concurrency, None)
        ceiling = results.best(ceiling_key)
        httpx_run = results.best((BARE_HTTPX, "-", best.concurrency, None))
        rows.append(
            Row(
                best,
                cpu,
                ceiling,
                best.rate / ceiling.rate if ceiling else None,
                _median_cpu(results, ceiling_key) / cpu if ceiling else None,
                best.rate / httpx_run.rate if httpx_run else None,
            )
        )
    return rows


def failures(results: Results) -> list[str]:
    """The targets that failed, one line each (empty: every target passed)."""
    found = []
    for row in summary_rows(results):
        label = f"{row.best.dialect} c={row.best.concurrency} per-host {_host(row.best)}"
        if row.rate_ok is False:
            found.append(f"{label}: {row.best.rate:,.0f} URLs/s < {TARGET_RATE:.0f}")
    return found + failed(results.layer_checks)


def _fmt(value: float | None, spec: str = ".2f") -> str:
    return "-" if value is None else format(value, spec)


def _verdict(ok: bool | None) -> str:
    return "-" if ok is None else verdict(ok)


def _pct(seconds: Callable[[Run], float]) -> Callable[[Run], str]:
    return lambda r: f"{seconds(r) / r.seconds:.0%}"


def _summary(results: Results) -> list[str]:
    spec: list[tuple[str, Callable[[Row], str]]] = [
        ("system", lambda row: row.best.system),
        ("db", lambda row: row.best.dialect),
        ("conc", lambda row: str(row.best.concurrency)),
        ("per-host", lambda row: _host(row.best)),
        ("URLs/s", lambda row: f"{row.best.rate:,.0f}"),
        ("aiohttp URLs/s", lambda row: _fmt(row.ceiling.rate if row.ceiling else None, ",.0f")),
        ("ratio", lambda row: _fmt(row.ratio)),
        ("x httpx", lambda row: _fmt(row.httpx_ratio)),
        ("CPU ms/URL", lambda row: f"{row.cpu_ms:.2f}"),
        ("URLs/CPU-s", lambda row: f"{1000 / row.cpu_ms:,.0f}"),
        ("CPU ratio", lambda row: _fmt(row.cpu_ratio)),
        (f">= {TARGET_RATE:.0f}/s", lambda row: _verdict(row.rate_ok)),
    ]
    return columns(spec, summary_rows(results), {2, 4, 5, 6, 7, 8, 9, 10})


EVERY_RUN: list[tuple[str, Callable[[Run], str]]] = [
    ("system", lambda r: r.system),
    ("db", lambda r: r.dialect),
    ("conc", lambda r: str(r.concurrency)),
    ("per-host", _host),
    ("seconds", lambda r: f"{r.seconds:.2f}"),
    ("URLs/s", lambda r: f"{r.rate:,.0f}"),
    ("CPU ms/URL", lambda r: f"{r.cpu_ms_per_url:.2f}"),
    ("bench CPU", _pct(lambda r: r.cpu_seconds)),
    ("loop waits", _pct(lambda r: r.loop_wait_seconds)),
    ("site CPU", _pct(lambda r: r.server_cpu_seconds)),
    ("site waits", _pct(lambda r: r.server_wait_seconds)),
    ("others", lambda r: f"{r.others_busy:.2f}"),
]


def render(results: Results) -> str:
    out = ["", "seojobs index-check benchmark (bench/check.py)", ""]
    out += [f"  {line}" for line in results.environment]
    out += ["", "Every run, in the order run"]
    if results.runs:
        out += columns(EVERY_RUN, results.runs, {2, 4, 5, 6, 7, 8, 9, 10, 11})
    out += [
        "",
        "Summary: best run per row. ratio = our URLs/s / the bare aiohttp loop's at the same",
        "concurrency (the ceiling; compare where per-host = conc: the bare loop has no gate);",
        "x httpx = the same against the bare httpx loop, for comparison with older figures.",
        "URLs/CPU-s = 1000 / CPU ms/URL: what the process would do with a core to itself.",
        "CPU ratio = the bare aiohttp loop's CPU ms/URL / ours (medians): the ratio both would",
        "have if CPU-bound, and far less sensitive to other load on the machine than URLs/s.",
    ]
    if results.runs:
        out += _summary(results)
    if results.notes:
        out += ["", "Notes"] + [f"  {line}" for line in results.notes]
    return "\n".join(out) + "\n"
