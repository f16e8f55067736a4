"""The ceilings: the same work as ours with nothing but a driver.

How each works: docs/bench/queue.md and docs/bench/check.md.
"""

from __future__ import annotations

import sqlite3
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg

from bench.lib.core import pg_conninfo
from bench.lib.ours import Burn

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

SQLITE_COMPLETE = """
UPDATE jobs SET state = 'completed', completed_at = ?, updated_at = ?,
    worker_id = NULL, lease_expires_at = NULL
WHERE state = 'processing' AND (id, attempt) IN (VALUES {pairs})
"""


def burn_postgres(dbname: str, jobs: int, batch: int) -> Burn:
    # No server-side prepared statements: after psycopg's fifth execution PostgreSQL may pick a
    # generic plan for the unnest() completion that is twice as slow as the custom one.
    with psycopg.connect(pg_conninfo(dbname), prepare_threshold=None) as conn:
        conn.execute("SELECT 1")
        conn.commit()
        started = time.perf_counter()
        done = 0
        while True:
            now = datetime.now(UTC)
            claimed = conn.execute(
                PG_CLAIM, {"worker": WORKER_ID, "lease": now + LEASE, "now": now, "limit": batch}
            ).fetchall()
            conn.commit()
            if not claimed:
                break
            finished = datetime.now(UTC)
            cur = conn.execute(
                PG_COMPLETE,
                {
                    "now": finished,
                    "ids": [row[0] for row in claimed],
                    "attempts": [row[1] for row in claimed],
                },
            )
            done += cur.rowcount
            conn.commit()
        ended = time.perf_counter()
    _check(done, jobs)
    return Burn(f"bare loop (batch {batch})", "postgresql", 1, jobs, ended - started)


def _sqlite_ts(value: datetime) -> str:
    """The text SQLAlchemy stores for our UTCDateTime on SQLite (naive UTC)."""
    return value.astimezone(UTC).replace(tzinfo=None).strftime("%Y-%m-%d %H:%M:%S.%f")


def burn_sqlite(path: Path, jobs: int, batch: int) -> Burn:
    # The same connection set-up as seojobs.store.db: WAL, synchronous=NORMAL, BEGIN IMMEDIATE.
    conn = sqlite3.connect(path, isolation_level=None, timeout=30)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA foreign_keys=ON")
        started = time.perf_counter()
        done = 0
        while True:
            now = datetime.now(UTC)
            conn.execute("BEGIN IMMEDIATE")
            claimed = conn.execute(
                SQLITE_CLAIM,
                {
                    "worker": WORKER_ID,
                    "lease": _sqlite_ts(now + LEASE),
                    "now": _sqlite_ts(now),
                    "limit": batch,
                },
            ).fetchall()
            conn.execute("COMMIT")
            if not claimed:
                break
            finished = _sqlite_ts(datetime.now(UTC))
            pairs = ", ".join("(?, ?)" for _ in claimed)
            args: list[object] = [finished, finished]
            for row in claimed:
                args.extend((row[0], row[1]))
            conn.execute("BEGIN IMMEDIATE")
            done += conn.execute(SQLITE_COMPLETE.format(pairs=pairs), args).rowcount
            conn.execute("COMMIT")
        ended = time.perf_counter()
    finally:
        conn.close()
    _check(done, jobs)
    return Burn(f"bare loop (batch {batch})", "sqlite", 1, jobs, ended - started)


def burn(url: str, jobs: int, batch: int) -> Burn:
    """The bare loop on the database at ``url`` (SQLite or PostgreSQL)."""
    if url.startswith("sqlite:///"):
        return burn_sqlite(Path(url.removeprefix("sqlite:///")), jobs, batch)
    return burn_postgres(url.rsplit("/", 1)[1], jobs, batch)


def _check(done: int, jobs: int) -> None:
    if done != jobs:
        raise RuntimeError(f"bare loop completed {done} jobs, expected {jobs}")
