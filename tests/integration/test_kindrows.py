"""Rows a job writes to a table its kind owns (``store.kindrows``): a claim replaces all of
its job's rows at once, so a phase run again after a rescue leaves one set; a claim that
lost its job writes nothing."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import event, select

from seojobs.kinds.site_audit.pagetable import PAGE_TABLE
from seojobs.records import JobRecord
from seojobs.services import Services
from seojobs.store import jobs as job_sql
from seojobs.store import kindrows
from seojobs.store.coltypes import utcnow
from seojobs.store.db import Database

audit_pages = kindrows.declare(PAGE_TABLE)


def _claim(db: Database, worker: str, later: timedelta = timedelta(0)) -> JobRecord:
    with db.write() as conn:
        [claimed] = job_sql.claim(db, conn, worker, 1, utcnow() + later, 30)
    return claimed


def _page(seq: int, url: str) -> dict[str, Any]:
    return {"seq": seq, "url": url, "indexable": True, "in_links": seq, "out_links": 0}


def _write(db: Database, job: JobRecord, rows: list[dict[str, Any]]) -> None:
    rows = [{"external_links": 0, **row} for row in rows]
    with db.write() as conn:
        kindrows.replace(conn, job.id, job.attempt, "audit_pages", rows, utcnow())


def _stored(db: Database) -> list[tuple[Any, ...]]:
    query = select(audit_pages.c.job_id, audit_pages.c.seq, audit_pages.c.url)
    with db.read() as conn:
        return [tuple(r) for r in conn.execute(query.order_by(audit_pages.c.seq))]


def test_a_rescued_job_replaces_its_rows_and_the_lost_claim_writes_none(
    services: Services, db: Database
) -> None:
    user = services.accounts.create_user("alice").user
    job, _ = services.jobs.create(user, "test_noop", {})
    first = _claim(db, "w1")
    _write(db, first, [_page(0, "https://a.test/"), _page(1, "https://a.test/x")])
    with db.write() as conn:  # w1 dies after writing; the job is rescued
        assert job_sql.rescue(conn, utcnow() + timedelta(minutes=1), 3) == (1, 0)
    again = _claim(db, "w2", later=timedelta(minutes=2))
    _write(db, again, [_page(0, "https://a.test/"), _page(2, "https://a.test/y")])
    _write(db, again, [_page(0, "https://a.test/"), _page(2, "https://a.test/y")])
    assert _stored(db) == [(job.id, 0, "https://a.test/"), (job.id, 2, "https://a.test/y")]
    with pytest.raises(job_sql.LeaseLost):
        _write(db, first, [_page(5, "https://a.test/late")])
    assert len(_stored(db)) == 2


def test_only_registered_tables_are_written(services: Services, db: Database) -> None:
    user = services.accounts.create_user("alice").user
    services.jobs.create(user, "test_noop", {})
    claimed = _claim(db, "w1")
    with pytest.raises(ValueError, match="no kind table named 'jobs'"), db.write() as conn:
        kindrows.replace(conn, claimed.id, claimed.attempt, "jobs", [], utcnow())


def test_many_rows_round_trip_and_go_to_postgresql_in_one_copy(
    services: Services, db: Database
) -> None:
    """A page table's rows come back as written (JSON lists and null, text with tabs,
    newlines, backslashes and quotes, booleans), on both stores; on PostgreSQL as one COPY
    stream rather than an INSERT per row (what a 5,000-page audit's table cost: issue 26),
    on SQLite in INSERTs of many rows."""
    user = services.accounts.create_user("alice").user
    services.jobs.create(user, "test_noop", {})
    claimed = _claim(db, "w1")
    odd = 'tab\tnew\nline back\\slash "quoted" \\N comma, é'
    rows = [
        {
            **_page(n, f"https://a.test/{n}"),
            "title": odd if n % 2 else None,
            "issues": ["missing_h1", odd] if n % 3 else None,
            "indexable": n % 2 == 0,
            "status": 200,
        }
        for n in range(1200)
    ]
    inserts: list[str] = []

    def seen(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if statement.lstrip().upper().startswith("INSERT"):
            inserts.append(statement)

    event.listen(db.engine, "before_cursor_execute", seen)
    try:
        _write(db, claimed, rows)
    finally:
        event.remove(db.engine, "before_cursor_execute", seen)
    if db.dialect == "postgresql":
        assert inserts == []
    else:  # SQLite: INSERTs of many rows each, not one run per row (executemany's)
        assert inserts and all("), (" in statement for statement in inserts)
    query = select(
        audit_pages.c.seq,
        audit_pages.c.title,
        audit_pages.c.issues,
        audit_pages.c.indexable,
        audit_pages.c.status,
        audit_pages.c.external_links,
        audit_pages.c.h1,
        audit_pages.c.job_id,
    ).order_by(audit_pages.c.seq)
    with db.read() as conn:
        got = [tuple(r) for r in conn.execute(query)]
    assert got == [
        (r["seq"], r["title"], r["issues"], r["indexable"], 200, 0, None, claimed.id) for r in rows
    ]
