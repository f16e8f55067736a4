"""Users and projects SQL."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Row, bindparam, delete, func, insert, select, update
from sqlalchemy.exc import IntegrityError

from seojobs.records import ProjectRecord, UserRecord
from seojobs.store.errors import Duplicate
from seojobs.store.tables import jobs, projects, schedules, users

DEFAULT_PROJECT = "default"


def create_user(
    conn: Connection, *, name: str, api_key_hash: str, rate_limit: str | None, now: datetime
) -> UserRecord:
    try:
        user_id = conn.execute(
            insert(users)
            .values(name=name, api_key_hash=api_key_hash, rate_limit=rate_limit, created_at=now)
            .returning(users.c.id)
        ).scalar_one()
    except IntegrityError:  # UNIQUE name, also when two commands race
        raise Duplicate(name) from None
    project = create_project(conn, user_id=user_id, name=DEFAULT_PROJECT, now=now, default=True)
    return UserRecord(
        id=user_id,
        name=name,
        rate_limit=rate_limit,
        quotas=None,
        created_at=now,
        default_project_id=project.id,
    )


def user_query() -> Any:
    """The columns of a :class:`UserRecord` (its default project joined)."""
    return select(
        users.c.id,
        users.c.name,
        users.c.rate_limit,
        users.c.quotas,
        users.c.created_at,
        projects.c.id.label("default_project_id"),
        users.c.disabled_at,
    ).join(projects, (projects.c.user_id == users.c.id) & projects.c.is_default.is_(True))


# A disabled user's key finds nobody.
_BY_KEY_HASH = user_query().where(
    users.c.api_key_hash == bindparam("key_hash"), users.c.disabled_at.is_(None)
)


def user_by_key_hash(conn: Connection, api_key_hash: str) -> UserRecord | None:
    row = conn.execute(_BY_KEY_HASH, {"key_hash": api_key_hash}).first()
    return UserRecord(**row._asdict()) if row else None


def user_by_id(conn: Connection, user_id: int) -> UserRecord | None:
    row = conn.execute(user_query().where(users.c.id == user_id)).first()
    return UserRecord(**row._asdict()) if row else None


def users_list(conn: Connection) -> list[UserRecord]:
    rows = conn.execute(user_query().order_by(users.c.id))
    return [UserRecord(**r._asdict()) for r in rows]


def user_by_name(conn: Connection, name: str) -> UserRecord | None:
    row = conn.execute(user_query().where(users.c.name == name)).first()
    return UserRecord(**row._asdict()) if row else None


def set_key_hash(conn: Connection, user_id: int, api_key_hash: str) -> None:
    conn.execute(update(users).where(users.c.id == user_id).values(api_key_hash=api_key_hash))


def disable(conn: Connection, user_id: int, now: datetime) -> None:
    conn.execute(
        update(users)
        .where(users.c.id == user_id, users.c.disabled_at.is_(None))
        .values(disabled_at=now)
    )


def owner_of_project(conn: Connection, project_id: int) -> UserRecord | None:
    owner = select(projects.c.user_id).where(projects.c.id == project_id).scalar_subquery()
    row = conn.execute(user_query().where(users.c.id == owner)).first()
    return UserRecord(**row._asdict()) if row else None


def schedule_count(conn: Connection, user_id: int) -> int:
    query = (
        select(func.count())
        .select_from(schedules.join(projects, projects.c.id == schedules.c.project_id))
        .where(projects.c.user_id == user_id)
    )
    return int(conn.execute(query).scalar_one())


def create_project(
    conn: Connection,
    *,
    user_id: int,
    name: str,
    now: datetime,
    default: bool = False,
    tracked: Mapping[str, Any] | None = None,
) -> ProjectRecord:
    try:
        row = conn.execute(
            insert(projects)
            .values(
                user_id=user_id, name=name, is_default=default, created_at=now, **(tracked or {})
            )
            .returning(*projects.c)
        ).one()
    except IntegrityError:  # UNIQUE (user_id, name), also when two requests race
        raise Duplicate(name) from None
    return _project(row)


_PROJECT = select(projects).where(projects.c.id == bindparam("project_id"))


def project(conn: Connection, project_id: int) -> ProjectRecord | None:
    row = conn.execute(_PROJECT, {"project_id": project_id}).first()
    return _project(row) if row else None


def projects_of(conn: Connection, user_id: int) -> list[ProjectRecord]:
    rows = conn.execute(
        select(projects).where(projects.c.user_id == user_id).order_by(projects.c.id)
    )
    return [_project(r) for r in rows]


def _project(row: Row[Any]) -> ProjectRecord:
    values = row._asdict()
    values["brand_names"] = tuple(values["brand_names"] or ())
    values["competitors"] = tuple(values["competitors"] or ())
    return ProjectRecord(**values)


def update_project(conn: Connection, project_id: int, values: Mapping[str, Any]) -> ProjectRecord:
    """Set a project's ``name`` and tracked fields (those in ``values``)."""
    try:
        row = conn.execute(
            update(projects)
            .where(projects.c.id == project_id)
            .values(**values)
            .returning(*projects.c)
        ).one()
    except IntegrityError:  # UNIQUE (user_id, name)
        raise Duplicate(str(values.get("name"))) from None
    return _project(row)


def delete_project(conn: Connection, project_id: int) -> bool:
    """Delete a project; its jobs, items and schedules go with it (FK cascades).

    On PostgreSQL the project's jobs are locked first, in id order, before the project row: a
    worker's write holds its job's row and goes on updating it after adding rows that point at
    it; a delete that had already taken the project row and queued for the job's would be
    ahead of that update, a deadlock (tests/integration/test_project_delete_locks.py)."""
    if conn.dialect.name == "postgresql":
        conn.execute(
            select(jobs.c.id)
            .where(jobs.c.project_id == project_id)
            .order_by(jobs.c.id)
            .with_for_update()
        ).all()
    return conn.execute(delete(projects).where(projects.c.id == project_id)).rowcount == 1


def set_quotas(conn: Connection, user_id: int, quotas: dict[str, int]) -> None:
    conn.execute(update(users).where(users.c.id == user_id).values(quotas=quotas))
