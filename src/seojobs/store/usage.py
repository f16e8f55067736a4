"""Quota accounting, derived from the jobs table (no counter to drift out of step)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Connection, func, select

from seojobs.store.db import Database
from seojobs.store.tables import jobs, projects, users


def lock_user(db: Database, conn: Connection, user_id: int) -> None:
    """Serialise quota decisions of one user (SQLite's writer lock already does)."""
    if db.dialect == "postgresql":
        conn.execute(select(users.c.id).where(users.c.id == user_id).with_for_update())


def urls_used(conn: Connection, user_id: int, kind: str, since: datetime) -> int:
    """URLs of ``kind`` jobs the user created since ``since`` (not counting jobs refused for
    quota, nor follow-up checks spawned by a submission)."""
    refused = (jobs.c.state == "failed") & (jobs.c.error_code == "quota_exceeded")
    query = (
        select(func.coalesce(func.sum(jobs.c.items_total), 0))
        .select_from(jobs.join(projects, projects.c.id == jobs.c.project_id))
        .where(
            projects.c.user_id == user_id,
            jobs.c.kind == kind,
            jobs.c.created_at >= since,
            # Follow-up checks are part of the submission that asked for them.
            jobs.c.parent_id.is_(None),
            ~refused,
        )
    )
    return int(conn.execute(query).scalar_one())
