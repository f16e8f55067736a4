"""The site audit's own migration (``kinds/site_audit/migrations``, a branch of seojobs' one
chain) on a database in use: the audit_pages table joins the schema, its rows belong to their
job (deleted with it, on both stores), and a downgrade removes it. A database migrated when
seojobs' 0006 created the table keeps it, rows and all."""

from __future__ import annotations

from typing import Any

from sqlalchemy import delete, func, inspect, select

from seojobs.kinds.site_audit.pagetable import MIGRATIONS, PAGE_TABLE
from seojobs.store import kindrows, migrate
from seojobs.store.db import Database
from seojobs.store.tables import jobs
from tests.schema_0002 import TABLES, _job

audit_pages = kindrows.declare(PAGE_TABLE)
EXTRA = (MIGRATIONS,)


def _page(job_id: int, seq: int) -> dict[str, Any]:
    return {
        "job_id": job_id,
        "seq": seq,
        "url": f"https://example.test/{seq}",
        "status": 200,
        "indexable": True,
        "in_links": 1,
        "out_links": 2,
        "external_links": 0,
    }


def _tables(db: Database) -> set[str]:
    with db.read() as conn:
        return set(inspect(conn).get_table_names())


def _bobs_audits(db: Database) -> None:
    with db.write() as conn:  # bob's audits (project 3), from before the upgrade
        conn.execute(TABLES["jobs"].insert(), [_job(20, 3, "completed", kind="site_audit")])
        conn.execute(TABLES["jobs"].insert(), [_job(21, 3, "completed", kind="site_audit")])


def _pages_per_job(db: Database) -> list[tuple[Any, ...]]:
    with db.read() as conn:
        found = conn.execute(select(audit_pages.c.job_id, func.count()).group_by("job_id"))
        return sorted(tuple(row) for row in found)


def test_upgrade_adds_audit_pages_that_go_with_their_job(at_0002: Database) -> None:
    migrate.upgrade(at_0002, extra=EXTRA)
    migrate.downgrade(at_0002, "0005", extra=EXTRA)
    migrate.upgrade(at_0002, "0006")  # seojobs' own chain no longer creates it
    assert "audit_pages" not in _tables(at_0002)
    _bobs_audits(at_0002)
    migrate.upgrade(at_0002, extra=EXTRA)
    assert migrate.is_current(at_0002, EXTRA)
    with at_0002.write() as conn:
        conn.execute(audit_pages.insert(), [_page(20, 0), _page(20, 1), _page(21, 0)])
    with at_0002.write() as conn:
        conn.execute(delete(jobs).where(jobs.c.id == 20))
    assert _pages_per_job(at_0002) == [(21, 1)]
    migrate.downgrade(at_0002, "0005", extra=EXTRA)
    assert "audit_pages" not in _tables(at_0002)
    assert migrate.current_revision(at_0002, EXTRA) == "0005"


def test_a_table_made_by_the_old_0006_is_kept_with_its_rows(at_0002: Database) -> None:
    migrate.upgrade(at_0002)  # seojobs' chain alone: where 0006 used to create the table
    assert not migrate.is_current(at_0002, EXTRA)
    _bobs_audits(at_0002)
    with at_0002.write() as conn:
        audit_pages.create(conn)
        conn.execute(audit_pages.insert(), [_page(20, 0), _page(21, 0), _page(21, 1)])
    migrate.upgrade(at_0002, extra=EXTRA)
    assert migrate.is_current(at_0002, EXTRA)
    assert _pages_per_job(at_0002) == [(20, 1), (21, 2)]
