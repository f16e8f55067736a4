"""A project's tracked keywords and prompts (``tables.tracked_keywords``, ``tracked_prompts``):
added in bulk, each once by its key, listed oldest first, deleted one at a time or with the
project."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Table, delete, func, insert, select

from seojobs.records import TrackedKeyword, TrackedProject, TrackedPrompt
from seojobs.store import accounts
from seojobs.store.tables import tracked_keywords, tracked_prompts


def _location(text: str) -> int | str:
    return int(text) if text.isdigit() else text


def _keyword(row: Any) -> TrackedKeyword:
    return TrackedKeyword(
        id=row.id,
        keyword=row.keyword,
        location=_location(row.location),
        language=row.language,
        device=row.device,
        created_at=row.created_at,
    )


def _prompt(row: Any) -> TrackedPrompt:
    return TrackedPrompt(id=row.id, prompt=row.prompt, created_at=row.created_at)


def keywords(conn: Connection, project_id: int) -> list[TrackedKeyword]:
    query = (
        select(tracked_keywords)
        .where(tracked_keywords.c.project_id == project_id)
        .order_by(tracked_keywords.c.id)
    )
    return [_keyword(r) for r in conn.execute(query)]


def prompts(conn: Connection, project_id: int) -> list[TrackedPrompt]:
    query = (
        select(tracked_prompts)
        .where(tracked_prompts.c.project_id == project_id)
        .order_by(tracked_prompts.c.id)
    )
    return [_prompt(r) for r in conn.execute(query)]


def count(conn: Connection, table: Table, project_id: int) -> int:
    query = select(func.count()).select_from(table).where(table.c.project_id == project_id)
    return int(conn.execute(query).scalar_one())


def _existing(conn: Connection, table: Table, project_id: int, keys: Sequence[str]) -> set[str]:
    found: set[str] = set()
    for start in range(0, len(keys), 500):  # bounded IN lists
        part = keys[start : start + 500]
        query = select(table.c.key).where(table.c.project_id == project_id, table.c.key.in_(part))
        found.update(conn.execute(query).scalars())
    return found


def add(
    conn: Connection,
    table: Table,
    project_id: int,
    rows: Sequence[dict[str, Any]],
    now: datetime,
) -> list[int]:
    """Insert the rows (each with its ``key``) the project does not track yet; the ids of
    those added, in order. The caller holds the project's lock (``usage.lock_user``), so two
    requests adding the same keyword do not race past the check into the unique index."""
    existing = _existing(conn, table, project_id, [r["key"] for r in rows])
    fresh = [r | {"project_id": project_id, "created_at": now} for r in rows]
    fresh = [r for r in fresh if r["key"] not in existing]
    if not fresh:
        return []
    stmt = insert(table).returning(table.c.id, sort_by_parameter_order=True)
    return list(conn.execute(stmt, fresh).scalars())


def remove(conn: Connection, table: Table, project_id: int, row_id: int) -> bool:
    stmt = delete(table).where(table.c.project_id == project_id, table.c.id == row_id)
    return conn.execute(stmt).rowcount == 1


def clear(conn: Connection, table: Table, project_id: int) -> int:
    return conn.execute(delete(table).where(table.c.project_id == project_id)).rowcount or 0


def tracked_project(conn: Connection, project_id: int) -> TrackedProject:
    """The project with its tracked keywords and prompts (the project must exist)."""
    found = accounts.project(conn, project_id)
    if found is None:  # deleted while its job ran: the job goes with it
        return TrackedProject(project_id, None, (), ())
    return TrackedProject.of(found, keywords(conn, project_id), prompts(conn, project_id))
