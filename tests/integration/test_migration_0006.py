"""Migration 0006 on a database in use: the audit_pages table joins the schema, its rows
belong to their job (deleted with it, on both stores), and a downgrade removes it."""

from __future__ import annotations

from typing import Any

from sqlalchemy import delete, func, inspect, select

from seojobs.store import migrate
from seojobs.store.db import Database
from seojobs.store.tables import audit_pages, jobs
from tests.schema_0002 import TABLES, _job


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


def test_upgrade_adds_audit_pages_that_go_with_their_job(at_0002: Database) -> None:
    migrate.upgrade(at_0002, "0005")
    assert "audit_pages" not in _tables(at_0002)
    with at_0002.write() as conn:  # bob's audits (project 3), from before the upgrade
        conn.execute(TABLES["jobs"].insert(), [_job(20, 3, "completed", kind="site_audit")])
        conn.execute(TABLES["jobs"].insert(), [_job(21, 3, "completed", kind="site_audit")])
    migrate.upgrade(at_0002)
    with at_0002.write() as conn:
        conn.execute(audit_pages.insert(), [_page(20, 0), _page(20, 1), _page(21, 0)])
    with at_0002.write() as conn:
        conn.execute(delete(jobs).where(jobs.c.id == 20))
    with at_0002.read() as conn:
        left = conn.execute(select(audit_pages.c.job_id, func.count()).group_by("job_id")).all()
    assert [tuple(row) for row in left] == [(21, 1)]
    migrate.downgrade(at_0002, "0005")
    assert "audit_pages" not in _tables(at_0002)
    assert migrate.current_revision(at_0002) == "0005"
