"""Scale benchmark; what it measures and its targets: docs/bench/scale.md."""

from __future__ import annotations

import os
import sys

sys.path[0] = os.path.dirname(sys.path[0])  # the repo, not bench/ (queue.py)

import argparse
import json
import time
from argparse import Namespace as Options  # what parse_args returns
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import psycopg
from sqlalchemy import text

from bench.lib import core, ours
from bench.lib.core import (
    STATUS_PATH,
    LoadTarget,
    Run,
    Sample,
    ScratchPostgres,
    Server,
    ours_server,
    pg_conninfo,
    pg_url,
    run_wrk,
    vacuum_postgres,
    wrk_version,
)
from bench.lib.ours import SEED_PARAMS, create_user
from bench.lib.report import Report
from seojobs.services.indexing import CHECK
from seojobs.settings import Settings
from seojobs.store import jobs as job_sql
from seojobs.store.coltypes import utcnow
from seojobs.store.db import Database

TARGET_P99 = 1.5  # the large table's p99 within this of the small one's, per process count
TARGET_PAGE = 1.5  # page 10,000's p50 within this of page 1's
TARGET_GROWTH = 0.9  # a process more never leaves less than this of the throughput before
PAGES = 10_000
CHUNK = 20_000  # rows per COPY write
RETENTION_DAYS = Settings().retention_days
ROWS = text("SELECT (SELECT count(*) FROM jobs) + (SELECT count(*) FROM job_items)")


def parse_args(argv: list[str] | None) -> Options:
    what = (
        "Status GETs with N API processes on PostgreSQL at N and N/10 jobs; report pages; pruning"
    )
    p = argparse.ArgumentParser(prog="bench/scale.py", description=what)
    p.add_argument("--jobs", type=int, default=1_000_000, help="the large table (1000000)")
    p.add_argument("--items-per-job", type=int, default=10, help="items of each job (10)")
    p.add_argument("--processes", type=core.positive_ints, default=(1, 2, 4), help="1,2,4")
    p.add_argument("--connections", type=int, default=64, help="load connections (64)")
    p.add_argument("--page-size", type=int, default=50, help="report rows per page (50)")
    p.add_argument("--prune-share", type=float, default=0.1, help="jobs past retention (0.1)")
    p.add_argument("--duration", type=float, default=6.0, help="seconds per measured run (6)")
    p.add_argument("--warmup", type=float, default=3.0, help="seconds of warm-up per server (3)")
    p.add_argument("--rounds", type=int, default=3, help="interleaved rounds; medians (3)")
    a = p.parse_args(argv)
    if a.jobs < 10 or a.items_per_job < 1 or a.rounds < 1 or not 0 < a.prune_share < 1:
        p.error("--jobs >= 10, --items-per-job and --rounds >= 1, 0 < --prune-share < 1")
    return a


# -- the tables, written with COPY -------------------------------------------------------------


@dataclass(frozen=True)
class Table:
    label: str
    name: str  # the scratch database
    jobs: int
    items: int
    api_key: str  # a secret: handed to the load generator, never printed
    report_id: int  # the job whose report is paged
    seconds: float

    @property
    def url(self) -> str:
        return pg_url(self.name)


def _copy(
    conn: psycopg.Connection[tuple[object, ...]], statement: str, lines: Iterable[str]
) -> None:
    with conn.cursor().copy(statement) as copy:
        chunk: list[str] = []
        for line in lines:
            chunk.append(line)
            if len(chunk) == CHUNK:
                copy.write("".join(chunk))
                chunk.clear()
        copy.write("".join(chunk))


def seed(pg: ScratchPostgres, label: str, jobs: int, opts: Options) -> Table:
    """``jobs`` finished index checks of ``--items-per-job`` items (the oldest
    ``--prune-share`` past retention), then one more whose report holds 10,000 pages."""
    started = time.perf_counter()
    name = pg.create("seojobs_scalebench")
    user = create_user(pg_url(name))
    when = utcnow()  # as COPY's text, formatted once (10,000,000 lines)
    now, old = str(when), str(when - timedelta(days=RETENTION_DAYS + 1))
    per, report_items = opts.items_per_job, opts.page_size * PAGES
    params, counters = json.dumps(SEED_PARAMS), json.dumps({"indexed": per})
    result = json.dumps({"provider": "serper", "indexed": True})
    expired = round(jobs * opts.prune_share)

    def job_lines() -> Iterator[str]:
        for n in range(jobs + 1):
            total = per if n < jobs else report_items
            done = old if n < expired else now
            yield (
                f"{user.project_id}\t{CHECK}\t{params}\tcompleted\t0\t{done}\t{done}\t{done}"
                f"\t{done}\t{done}\t1\t0\t{total}\t{total}\t0\t{counters}\n"
            )

    with psycopg.connect(pg_conninfo(name)) as conn:
        _copy(
            conn,
            "COPY jobs (project_id, kind, params, state, priority, run_at, created_at, "
            "started_at, updated_at, completed_at, attempt, rescue_count, items_total, "
            "items_done, items_failed, counters) FROM STDIN",
            job_lines(),
        )
        first, last = conn.execute("SELECT min(id), max(id) FROM jobs").fetchone() or (0, 0)
        assert isinstance(first, int) and isinstance(last, int) and last - first == jobs

        def item_lines() -> Iterator[str]:
            for job_id in range(first, last + 1):
                for seq in range(per if job_id < last else report_items):
                    yield (
                        f"{job_id}\t{seq}\thttps://site-{job_id}.example/{seq}\tdone\tindexed"
                        f"\t{result}\t{now}\n"
                    )

        _copy(
            conn,
            "COPY job_items (job_id, seq, input, state, outcome, result, finished_at) FROM STDIN",
            item_lines(),
        )
    vacuum_postgres(name)
    items = jobs * per + report_items
    return Table(label, name, jobs, items, user.api_key, last, time.perf_counter() - started)


# -- the API processes and their samples ----------------------------------------------------


class Results(Report[Sample]):
    """The samples (what: (table or page, processes)), judged; the pruning's figures."""

    def __init__(self, opts: Options) -> None:
        super().__init__("Scale benchmark (bench/scale.py)", judge=self.checks)
        self.blocks = [self.table, self.pruning]
        self.notes = [
            "per-process efficiency: req/s over (processes x the req/s of one process); past "
            "the machine's cores it falls by design. CPU ms/req: the API processes' CPU per answer"
        ]
        self.opts = opts
        self.tables: list[Table] = []
        self.pruned: tuple[int, float] | None = None  # rows deleted, seconds

    def median(self, what: str, processes: int, figure: str) -> float:
        return core.median_of(self.runs, (what, processes), figure)

    def checks(self, _samples: list[Sample]) -> list[core.Target]:
        if len(self.tables) < 2 or not self.runs:
            return []
        small, big, opts = self.tables[0].label, self.tables[-1].label, self.opts
        found = []
        for n in opts.processes:
            p99, base = self.median(big, n, "p99_ms"), self.median(small, n, "p99_ms")
            what = f"{n} process(es): p99 at {big} <= {TARGET_P99} x at {small}"
            found.append(_vs(what, p99, base, ".1f", p99 <= TARGET_P99 * base, " ms"))
        for before, after in zip(opts.processes, opts.processes[1:], strict=False):
            rate, base = self.median(big, after, "rate"), self.median(big, before, "rate")
            what = f"{after} processes: req/s >= {TARGET_GROWTH} x {before}'s"
            found.append(_vs(what, rate, base, ",.0f", rate >= TARGET_GROWTH * base))
        last, first = f"page {PAGES:,}", opts.processes[0]
        p50, base = self.median(last, first, "p50_ms"), self.median("page 1", first, "p50_ms")
        what = f"report {last}: p50 <= {TARGET_PAGE} x page 1's"
        found.append(_vs(what, p50, base, ".1f", p50 <= TARGET_PAGE * base, " ms"))
        return found

    def table(self, samples: list[Sample]) -> list[str]:
        opts = self.opts
        one = {t.label: self.median(t.label, opts.processes[0], "rate") for t in self.tables}
        rows = [
            (what, n)
            for n in opts.processes
            for what in dict.fromkeys(s.what[0] for s in samples if s.what[1] == n)
        ]
        if not rows:
            return []

        def figure(name: str, spec: str) -> tuple[str, Callable[[tuple[str, int]], str]]:
            return name, lambda r: format(self.median(*r, FIGURES[name]), spec)

        def efficiency(row: tuple[str, int]) -> str:
            what, n = row
            return f"{self.median(what, n, 'rate') / (n * one[what]):.0%}" if what in one else "-"

        return [
            f"Status GETs (random finished jobs over the whole table) and report pages, "
            f"{opts.connections} connections: medians of {opts.rounds} interleaved round(s) of "
            f"{opts.duration:.0f} s",
            *core.columns(
                [
                    ("what", lambda r: r[0]),
                    ("processes", lambda r: str(r[1])),
                    figure("req/s", ",.0f"),
                    figure("p50 ms", ".1f"),
                    figure("p99 ms", ".1f"),
                    figure("CPU ms/req", ".2f"),
                    ("per-process efficiency", efficiency),
                ],
                rows,
            ),
        ]

    def pruning(self, _samples: list[Sample]) -> list[str]:
        if self.pruned is None:
            return []
        rows_gone, seconds = self.pruned
        return [
            f"Pruning ({self.tables[-1].label}, the leader's batches of 5,000 jobs until none is "
            f"past retention): {rows_gone:,} rows (jobs and items) in {seconds:.1f} s, "
            f"{rows_gone / seconds:,.0f} rows/s"
        ]


def page_path(table: Table, page: int, size: int) -> str:
    path = f"/api/v1/index-check/jobs/{table.report_id}/report?limit={size}"
    return path if page == 1 else f"{path}&cursor={size * (page - 1) - 1}"


def check_page(pool: Server, table: Table, page: int, size: int) -> None:
    """The page answers 200 with ``size`` rows, the first of them the page's first item."""
    status, _h, body = pool.get(page_path(table, page, size), {"Authorization": table.api_key})
    rows = json.loads(body).get("rows", []) if status == 200 else []
    want = f"https://site-{table.report_id}.example/{size * (page - 1)}"
    if len(rows) != size or rows[0]["url"] != want:
        raise RuntimeError(f"report page {page} answered {status}: {body[:200]!r}")


def run_processes(tables: list[Table], log_dir: Path, results: Results, opts: Options) -> None:
    """For each process count: both tables' pools up at once, their rounds interleaved; with
    the first count, the report pages of the large table too."""
    for n in opts.processes:
        with ExitStack() as stack:
            pools = [
                (t, ours_server(t.url, log_dir / f"{t.label}-{n}.log", processes=n)) for t in tables
            ]
            for _t, pool in pools:
                stack.enter_context(pool)
            targets = [
                (
                    t.label,
                    p,
                    LoadTarget(p.port, STATUS_PATH, t.report_id - t.jobs, t.jobs, t.api_key),
                )
                for t, p in pools
            ]
            if n == opts.processes[0]:
                big, pool = pools[-1]
                for page in (1, PAGES):
                    check_page(pool, big, page, opts.page_size)
                    path = page_path(big, page, opts.page_size)
                    targets.append(
                        (f"page {page:,}", pool, LoadTarget(pool.port, path, 0, 0, big.api_key))
                    )
            for _what, _pool, target in targets:
                run_wrk(target, opts.connections, opts.warmup)
            group = [
                Run((what, n), f"{n} process(es), {what}", pool, target, opts.connections)
                for what, pool, target in targets
            ]
            core.interleave([group], opts.rounds, opts.duration, results.runs)


def prune(table: Table, results: Results) -> None:
    """What the maintenance leader's prune step does, batch after batch until nothing is
    left past retention: jobs and their items, in rows per second."""
    db = Database(table.url)
    try:
        before = _rows(db)
        cutoff = utcnow() - timedelta(days=RETENTION_DAYS)
        started = time.perf_counter()
        while True:
            with db.write() as conn:
                if not job_sql.prune(conn, cutoff):
                    break
        results.pruned = (before - _rows(db), time.perf_counter() - started)
    finally:
        db.dispose()


def _rows(db: Database) -> int:
    with db.read() as conn:
        return int(conn.execute(ROWS).scalar_one())


FIGURES = {"req/s": "rate", "p50 ms": "p50_ms", "p99 ms": "p99_ms", "CPU ms/req": "cpu_ms"}


def _vs(what: str, value: float, base: float, fmt: str, ok: bool, unit: str = "") -> core.Target:
    return (what, f"{value:{fmt}} vs {base:{fmt}}{unit} ({value / base:.2f} x)", ok)


def main(argv: list[str] | None = None) -> int:
    opts = parse_args(argv)
    results = Results(opts)

    def body(stack: ExitStack) -> None:
        scratch = ours.Scratch(stack, postgres=True)
        assert scratch.pg is not None
        results.start(
            scratch.pg,
            f"API: uvicorn --workers N of create_app(Settings(), run_worker=False); "
            f"load: {wrk_version()}, 1 thread",
        )
        for jobs in (opts.jobs // 10, opts.jobs):
            table = seed(scratch.pg, f"{jobs:,} jobs", jobs, opts)
            results.tables.append(table)
            results.environment.append(
                f"{table.label}: {table.jobs + 1:,} jobs and {table.items:,} items written with "
                f"COPY in {table.seconds:.0f} s, then VACUUM ANALYZE; report job "
                f"{table.report_id} of {opts.page_size * PAGES:,} items"
            )
            core.progress(results.environment[-1])
        run_processes(results.tables, scratch.root, results, opts)
        prune(results.tables[-1], results)

    return results.main(body, "servers stopped, scratch databases dropped")


if __name__ == "__main__":
    raise SystemExit(main())
