"""Queue throughput and wake-up benchmark; what it measures and its targets: docs/bench/queue.md."""

from __future__ import annotations

import os
import sys

sys.path[0] = os.path.dirname(sys.path[0])  # the repo, not bench/ (queue.py)

import asyncio
import contextlib
import importlib.metadata
import logging
import sqlite3
import time
from argparse import Namespace as Options  # what parse_args returns
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

import procrastinate
import psycopg

from bench.lib import core, ours
from bench.lib.core import ScratchPostgres, Target, columns, pg_conninfo, table, vacuum_postgres
from bench.lib.ours import Burn, Counter, Stamps, Wake, burn_timeout, wait_until_done
from bench.lib.report import Report

TARGET_RATE = 10_000.0
TARGET_RATIO = {"sqlite": 0.30, "postgresql": 0.55}  # x its bare loop (issue 23)
TARGET_PEER = 15.0  # PostgreSQL jobs/s x Procrastinate's
TARGET_WAKE = 0.050


def best(runs: list[Burn], system: str, dialect: str) -> Burn | None:
    """The fastest of ``system``'s (a prefix) burn-downs on ``dialect``."""
    found = [b for b in runs if b.system.startswith(system) and b.dialect == dialect]
    return max(found, key=lambda b: b.rate) if found else None


def ratio(runs: list[Burn], dialect: str, other: str) -> float | None:
    """Our best jobs/s over ``other``'s best on ``dialect`` (None: one of them is missing)."""
    ours, theirs = best(runs, "seojobs", dialect), best(runs, other, dialect)
    return ours.rate / theirs.rate if ours and theirs else None


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


ORDER = (
    ("seojobs", "sqlite"),
    ("bare loop", "sqlite"),
    ("seojobs", "postgresql"),
    ("procrastinate", "postgresql"),
    ("bare loop", "postgresql"),
)


def throughput(runs: list[Burn]) -> list[str]:
    rows = []
    for system, dialect in ORDER:
        if (top := best(runs, system, dialect)) is None:
            continue
        tried = sorted(
            {b.concurrency for b in runs if b.system == top.system and b.dialect == dialect}
        )
        conc = (
            f"{top.concurrency} (best of {', '.join(map(str, tried))})"
            if len(tried) > 1
            else str(top.concurrency)
        )
        conc = "1 connection" if system == "bare loop" else conc
        rows.append([top.system, dialect, conc, f"{top.seconds:.2f}", f"{top.rate:,.0f}"])
    headers = ["system", "dialect", "concurrency", "seconds", "jobs/s"]
    return ["Throughput (best run per system)", *table(headers, rows, {3, 4})] if rows else []


def ratios(runs: list[Burn]) -> list[str]:
    rows = [
        [dialect, f"seojobs / {other}", format(value, spec)]
        for dialect in ("sqlite", "postgresql")
        for other, spec in (("bare loop", ".3f"), ("procrastinate", ".2f"))
        if (value := ratio(runs, dialect, other)) is not None
    ]
    return ["Ratios (best runs)", *table(["dialect", "ratio", "value"], rows, {2})] if rows else []


WAKES: list[tuple[str, Callable[[Wake], str]]] = [
    ("system", lambda w: w.system),
    ("dialect", lambda w: w.dialect),
    ("wake-up path", lambda w: w.how),
    ("samples", lambda w: str(len(w.samples))),
    ("median", lambda w: _ms(w.median)),
    ("p90", lambda w: _ms(w.p90)),
    ("enqueue call", lambda w: _ms(w.enqueue_median)),
]


class Results(Report[Burn]):
    """The burn-downs (a row each), the wake-ups and the peer's burn-downs given up."""

    def __init__(self, jobs: int) -> None:
        super().__init__(
            "seojobs queue benchmark (bench/queue.py)",
            [
                ("system", lambda b: b.system),
                ("dialect", lambda b: b.dialect),
                ("concurrency", lambda b: str(b.concurrency)),
                ("seconds", lambda b: f"{b.seconds:.2f}"),
                ("jobs/s", lambda b: f"{b.rate:,.0f}"),
                (
                    "handler runs",
                    lambda b: "-" if b.handler_runs is None else f"{b.handler_runs:,}",
                ),
            ],
            self.targets,
            lambda b: f"{b.system} {b.dialect} c={b.concurrency}: {b.rate:,.0f} jobs/s",
            [throughput, self.unfinished_block, ratios, self.wakes_block],
            right=(2, 3, 4, 5),
        )
        self.jobs = jobs
        self.wakes: list[Wake] = []
        self.unfinished: list[str] = []  # peer burn-downs that timed out

    def wake(self, dialect: str) -> Wake | None:
        """The headline wake-up for a dialect: the first seojobs measurement made on it."""
        return next((w for w in self.wakes if w.system == "seojobs" and w.dialect == dialect), None)

    def unfinished_block(self, _runs: list[Burn]) -> list[str]:
        if not self.unfinished:
            return []
        return ["Did not finish (given up below 100 jobs/s)", *(f"  {u}" for u in self.unfinished)]

    def wakes_block(self, _runs: list[Burn]) -> list[str]:
        if not self.wakes:
            return []
        return [
            "Wake-up latency: enqueue (before the insert) to handler start, on an idle worker",
            *columns(WAKES, self.wakes, {3, 4, 5, 6}),
            "  enqueue call: median time from before the enqueue to its return (ours: one",
            "  insert transaction in a thread; Procrastinate: defer_async); the rest is the",
            "  worker's side.",
        ]

    def targets(self, runs: list[Burn]) -> list[Target]:
        out = []
        for dialect, label in (("postgresql", "PostgreSQL"), ("sqlite", "SQLite")):
            if (ours := best(runs, "seojobs", dialect)) is None:
                continue
            out.append(
                (
                    f"{label} >= {TARGET_RATE:,.0f} jobs/s",
                    f"{ours.rate:,.0f}",
                    ours.rate >= TARGET_RATE,
                )
            )
            if (bare := ratio(runs, dialect, "bare loop")) is not None:
                target = f"{label} >= {TARGET_RATIO[dialect]:.2f} x its bare loop"
                out.append((target, f"{bare:.3f}", bare >= TARGET_RATIO[dialect]))
            if (times := ratio(runs, dialect, "procrastinate")) is not None:
                target = f"{label} >= {TARGET_PEER:.0f} x Procrastinate"
                out.append((target, f"{times:.1f}", times >= TARGET_PEER))
        for dialect, label in (("sqlite", "SQLite"), ("postgresql", "PostgreSQL")):
            if (wake := self.wake(dialect)) is not None:
                target = f"{label} median wake-up < {TARGET_WAKE * 1000:.0f} ms"
                out.append((target, _ms(wake.median), wake.median < TARGET_WAKE))
        peer = next((w for w in self.wakes if w.system.startswith("procrastinate")), None)
        if (mine := self.wake("postgresql")) is not None and peer is not None:
            measured = f"{_ms(mine.median)} vs {_ms(peer.median)}"
            out.append(
                ("PostgreSQL median wake-up < Procrastinate's", measured, mine.median < peer.median)
            )
        return out


DEFER_CHUNK = 1000

PEER_VERSION = importlib.metadata.version("procrastinate")

# Procrastinate logs every job at INFO.
logging.getLogger("procrastinate").setLevel(logging.WARNING)


def _app(dbname: str, pool_size: int | None) -> procrastinate.App:
    """``pool_size`` None keeps Procrastinate's default pool (psycopg_pool's: 4 connections)."""
    sizes = {} if pool_size is None else {"min_size": pool_size, "max_size": pool_size}
    connector = procrastinate.PsycopgConnector(conninfo=pg_conninfo(dbname), **sizes)
    return procrastinate.App(connector=connector)


@contextlib.asynccontextmanager
async def _worker(app: procrastinate.App, **options: Any) -> AsyncIterator[asyncio.Task[None]]:
    """Procrastinate's worker as a task for the block. Cancelling ``run_worker_async`` is its
    graceful stop (with wait=False it also ends alone)."""
    worker = app.run_worker_async(install_signal_handlers=False, **options)
    task = asyncio.create_task(worker, name="procrastinate-worker")
    try:
        yield task
    finally:
        if not task.done():
            task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def peer_schema(dbname: str) -> None:
    """Apply Procrastinate's schema to an empty database."""
    app = _app(dbname, pool_size=1)
    async with app.open_async():
        await app.schema_manager.apply_schema_async()


def _succeeded(conn: psycopg.Connection[tuple[object, ...]]) -> int:
    row = conn.execute(
        "SELECT count(*) FROM procrastinate_jobs WHERE status = 'succeeded'"
    ).fetchone()
    return int(str(row[0])) if row else 0


async def peer_burn(dbname: str, jobs: int, concurrency: int, pool_size: int | None) -> Burn:
    """Defer ``jobs`` no-ops in batches (not timed), then time a worker until all succeeded."""
    counter = Counter(jobs)
    app = _app(dbname, pool_size)

    @app.task(name="bench_noop")
    async def noop() -> None:
        counter.hit()

    async with app.open_async():
        for start in range(0, jobs, DEFER_CHUNK):
            await noop.batch_defer_async(*({} for _ in range(min(DEFER_CHUNK, jobs - start))))
        await asyncio.to_thread(vacuum_postgres, dbname, "procrastinate_jobs")
        with psycopg.connect(pg_conninfo(dbname), autocommit=True) as probe:
            started = time.perf_counter()
            async with _worker(app, concurrency=concurrency, wait=False) as task:
                count = partial(_succeeded, probe)
                ended = await wait_until_done(counter, count, jobs, task, burn_timeout(jobs))
    system = f"procrastinate {PEER_VERSION}"
    return Burn(system, "postgresql", concurrency, jobs, ended - started, counter.count)


async def peer_wake(dbname: str, samples: int, pool_size: int | None) -> Wake:
    stamps = Stamps()
    app = _app(dbname, pool_size)

    @app.task(name="bench_stamp", pass_context=True)
    async def stamp(context: procrastinate.JobContext) -> None:
        assert context.job.id is not None
        stamps.stamp(context.job.id)

    result = Wake(f"procrastinate {PEER_VERSION}", "postgresql", "LISTEN/NOTIFY")
    options = {"wait": True, "fetch_job_polling_interval": ours.POLL_INTERVAL}
    async with app.open_async(), _worker(app, concurrency=ours.WAKE_CONCURRENCY, **options):
        return await ours.sample_wakes(result, stamps, samples, stamp.defer_async)


WORKER_ID = "bench-bare"
LEASE = timedelta(seconds=30)

# ``id = ANY(ARRAY(subquery))`` rather than ``UPDATE ... FROM (subquery)``: the same rows, but
# PostgreSQL looks them up by primary key instead of hash-joining the subquery against a scan of
# the whole table (about 11 ms instead of 14 ms per 500 rows here).
PG_CLAIM = """
UPDATE jobs SET state = 'processing', attempt = attempt + 1, worker_id = %(worker)s,
    lease_expires_at = %(lease)s, started_at = coalesce(started_at, %(now)s), updated_at = %(now)s
WHERE id = ANY(ARRAY(
    SELECT id FROM jobs WHERE state = 'pending' AND run_at <= %(now)s
    ORDER BY priority, run_at, id LIMIT %(limit)s FOR UPDATE SKIP LOCKED
))
RETURNING id, attempt, kind, params
"""

PG_COMPLETE = """
UPDATE jobs SET state = 'completed', completed_at = %(now)s, updated_at = %(now)s,
    worker_id = NULL, lease_expires_at = NULL
WHERE (id, attempt) IN (SELECT * FROM unnest(%(ids)s::bigint[], %(attempts)s::int[]))
    AND state = 'processing'
"""

SQLITE_CLAIM = """
UPDATE jobs SET state = 'processing', attempt = attempt + 1, worker_id = :worker,
    lease_expires_at = :lease, started_at = coalesce(started_at, :now), updated_at = :now
WHERE id IN (
    SELECT id FROM jobs WHERE state = 'pending' AND run_at <= :now
    ORDER BY priority, run_at, id LIMIT :limit
)
RETURNING id, attempt, kind, params
"""

CLAIM = {"postgresql": PG_CLAIM, "sqlite": SQLITE_CLAIM}

SQLITE_COMPLETE = """
UPDATE jobs SET state = 'completed', completed_at = ?, updated_at = ?,
    worker_id = NULL, lease_expires_at = NULL
WHERE state = 'processing' AND (id, attempt) IN (VALUES {pairs})
"""


def _sqlite_ts(value: datetime) -> str:
    """The text SQLAlchemy stores for our UTCDateTime on SQLite (naive UTC)."""
    return value.astimezone(UTC).replace(tzinfo=None).strftime("%Y-%m-%d %H:%M:%S.%f")


def bare_burn(url: str, jobs: int, batch: int) -> Burn:
    """The bare loop on the database at ``url`` (SQLite or PostgreSQL): claim a batch in one
    transaction, complete it in a second, until a claim comes back empty."""
    dialect = "sqlite" if url.startswith("sqlite:///") else "postgresql"
    conn: Any
    if dialect == "sqlite":
        # The same connection set-up as seojobs.store.db: WAL, synchronous=NORMAL, BEGIN IMMEDIATE.
        conn = sqlite3.connect(url.removeprefix("sqlite:///"), isolation_level=None, timeout=30)
        for pragma in ("journal_mode=WAL", "synchronous=NORMAL", "foreign_keys=ON"):
            conn.execute(f"PRAGMA {pragma}")
        stamp: Callable[[datetime], object] = _sqlite_ts
    else:
        # No server-side prepared statements: after psycopg's fifth execution PostgreSQL may pick
        # a generic plan for the unnest() completion that is twice as slow as the custom one.
        conn = psycopg.connect(pg_conninfo(url.rsplit("/", 1)[1]), prepare_threshold=None)
        stamp = lambda value: value  # noqa: E731

    def transaction(statement: str, params: Any) -> Any:
        if dialect == "sqlite":
            conn.execute("BEGIN IMMEDIATE")
        cursor = conn.execute(statement, params)
        rows = cursor.fetchall() if "RETURNING" in statement else cursor.rowcount
        conn.commit()
        return rows

    try:
        conn.execute("SELECT 1")
        conn.commit()
        started = time.perf_counter()
        done = 0
        while True:
            now = datetime.now(UTC)
            claim = {"worker": WORKER_ID, "lease": stamp(now + LEASE), "now": stamp(now)}
            claimed = transaction(CLAIM[dialect], {**claim, "limit": batch})
            if not claimed:
                break
            finished = stamp(datetime.now(UTC))
            if dialect == "sqlite":
                pairs = ", ".join("(?, ?)" for _ in claimed)
                args = [finished, finished, *(v for row in claimed for v in row[:2])]
                done += transaction(SQLITE_COMPLETE.format(pairs=pairs), args)
            else:
                ids, attempts = [row[0] for row in claimed], [row[1] for row in claimed]
                done += transaction(
                    PG_COMPLETE, {"now": finished, "ids": ids, "attempts": attempts}
                )
        ended = time.perf_counter()
    finally:
        conn.close()
    if done != jobs:
        raise RuntimeError(f"bare loop completed {done} jobs, expected {jobs}")
    return Burn(f"bare loop (batch {batch})", dialect, 1, jobs, ended - started)


SQLITE_WAKES = (
    "SQLite wake-ups: the in-process hook serves jobs enqueued through the worker's own "
    "Database object; jobs from another connection or process are seen by the worker's 50 ms "
    "PRAGMA data_version watch (both rows of the wake-up table)."
)
SELECTABLE = ("sqlite", "postgresql", "procrastinate", "bare")
WAKE_ROUNDS = 5  # PostgreSQL wake-ups: ours and the peer's alternate in this many rounds


def parse_args(argv: list[str] | None) -> Options:
    parser = core.parser(
        "bench/queue.py",
        "Burn down no-op jobs with seojobs on SQLite and PostgreSQL, with Procrastinate on the "
        "same PostgreSQL server, and with a bare SQL loop (the ceiling); measure the wake-up "
        "latency of an idle worker.",
    )
    add = parser.add_argument
    add("--jobs", type=int, default=20_000, help="jobs per burn-down")
    add("--only", type=core.choice(SELECTABLE), default=",".join(SELECTABLE), help="systems")
    add("--concurrency", type=core.positive_ints, default="200,500,1000", help="ours; best kept")
    add("--peer-concurrency", type=core.positive_ints, default="10,50,200", help="Procrastinate's")
    add("--peer-pool", type=int, help="Procrastinate's pool size (None: its own, 4)")
    add("--batch", type=int, default=500, help="bare loop batch")
    add("--samples", type=int, default=50, help="wake-up samples per dialect; 0 skips")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error("--jobs must be at least 1")
    args.only = frozenset(args.only)
    chosen = args.only & {"sqlite", "postgresql"}  # bare runs on them, or on both if none
    args.bare = frozenset(
        d for d in ("sqlite", "postgresql") if "bare" in args.only and (d in chosen or not chosen)
    )
    return args


# -- the runs -------------------------------------------------------------------------------


@contextmanager
def fresh(dbs: ours.Scratch, dialect: str, jobs: int) -> Iterator[str]:
    """A new copy of the dialect's template with ``jobs`` pending jobs, for the block; its URL."""
    with dbs.fresh(dialect) as (url, _user_id):
        if jobs:
            ours.insert_jobs(url, dbs.user(dialect).project_id, jobs)
            core.analyze(url)
        yield url


def run_ours(opts: Options, dbs: ours.Scratch, dialect: str, results: Results) -> None:
    """Our burn-downs at each concurrency, the bare loop's, and on SQLite the wake-ups."""
    if dialect in opts.only:
        for concurrency in opts.concurrency:
            with fresh(dbs, dialect, opts.jobs) as url:
                results.add(asyncio.run(ours.burn(url, dialect, opts.jobs, concurrency)))
    if dialect in opts.bare:
        with fresh(dbs, dialect, opts.jobs) as url:
            results.add(bare_burn(url, opts.jobs, opts.batch))
    if dialect != "sqlite" or dialect not in opts.only or not opts.samples:
        return
    for same_db, how in (
        (True, "in-process hook (enqueued via the worker's Database object)"),
        (False, "data_version watch (separate Database object, as another process)"),
    ):
        project_id = dbs.user(dialect).project_id
        with fresh(dbs, dialect, 0) as url:
            wake = asyncio.run(
                ours.wake_latency(url, dialect, project_id, opts.samples, same_db=same_db, how=how)
            )
        results.wakes.append(wake)
        core.progress(f"seojobs sqlite wake-up, {how}: median {wake.median * 1000:.1f} ms")


def run_peer(opts: Options, scratch: ScratchPostgres, results: Results) -> str:
    """Procrastinate's burn-downs; returns its template database for the wake-ups."""
    template = scratch.create("procrastinate_bench_tpl")
    asyncio.run(peer_schema(template))
    for concurrency in opts.peer_concurrency:
        name = scratch.create("procrastinate_bench", template=template)
        try:
            results.add(asyncio.run(peer_burn(name, opts.jobs, concurrency, opts.peer_pool)))
        except TimeoutError as exc:
            # The peer too slow at one concurrency on a busy machine: say so, and still
            # measure the others and its wake-up, which our target is compared with.
            results.unfinished.append(f"procrastinate c={concurrency}: {exc}")
            core.progress(results.unfinished[-1])
        finally:
            scratch.drop(name)
    return template


def _rounds(samples: int) -> list[int]:
    """``samples`` split into WAKE_ROUNDS rounds (none empty)."""
    base, extra = divmod(samples, WAKE_ROUNDS)
    return [n for i in range(WAKE_ROUNDS) if (n := base + (i < extra))]


def run_pg_wakes(
    opts: Options,
    dbs: ours.Scratch | None,
    scratch: ScratchPostgres,
    peer_template: str | None,
    results: Results,
) -> None:
    """Our PostgreSQL wake-up and Procrastinate's, in alternating rounds after every
    burn-down, so that both meet the same load from the rest of the machine."""
    how = "LISTEN/NOTIFY (enqueued via a separate Database object)"
    mine = Wake("seojobs", "postgresql", how)
    theirs = Wake(f"procrastinate {PEER_VERSION}", "postgresql", "LISTEN/NOTIFY")
    for n in _rounds(opts.samples):
        if dbs is not None:
            project_id = dbs.user("postgresql").project_id
            with fresh(dbs, "postgresql", 0) as url:
                run = ours.wake_latency(url, "postgresql", project_id, n, same_db=False, how=how)
                mine.extend(asyncio.run(run))
        if peer_template is not None:
            name = scratch.create("procrastinate_bench", template=peer_template)
            theirs.extend(asyncio.run(peer_wake(name, n, opts.peer_pool)))
            scratch.drop(name)
    for wake in (mine, theirs):
        if wake.samples:
            results.wakes.append(wake)
            core.progress(f"{wake.system} postgresql wake-up: median {wake.median * 1000:.1f} ms")


def main(argv: list[str] | None = None) -> int:
    opts = parse_args(argv)
    results = Results(opts.jobs)

    def body(stack: ExitStack) -> None:
        needs_pg = bool({"postgresql", "procrastinate"} & opts.only or "postgresql" in opts.bare)
        dbs = ours.Scratch(stack, postgres=needs_pg)
        pool = opts.peer_pool or "its default 4"
        peer = f"Procrastinate {PEER_VERSION}, pool of {pool} connections"
        results.start(
            dbs.pg,
            *([peer] if dbs.pg is not None and "procrastinate" in opts.only else []),
            "seojobs: one Worker (poll_interval 1 s, lease 30 s, maintenance off); "
            f"bare loop: one connection, batches of {opts.batch}",
            f"{opts.jobs:,} no-op jobs per burn-down, pre-inserted before the clock starts; the "
            "clock runs from worker start until the database shows every job done.",
        )
        for dialect in ("sqlite", "postgresql"):
            run_ours(opts, dbs, dialect, results)
        if dbs.pg is not None:
            peer_template = (
                run_peer(opts, dbs.pg, results) if "procrastinate" in opts.only else None
            )
            if opts.samples:
                mine = dbs if "postgresql" in opts.only else None
                run_pg_wakes(opts, mine, dbs.pg, peer_template, results)
        if results.wake("sqlite") is not None:
            results.notes.append(SQLITE_WAKES)

    return results.main(body, "scratch databases dropped")


if __name__ == "__main__":
    raise SystemExit(main())
