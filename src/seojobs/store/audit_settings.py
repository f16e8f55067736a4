"""A project's site audit settings (``tables.audit_settings``): one JSON row per project."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Connection, delete, insert, select

from seojobs.store.tables import audit_settings


def get(conn: Connection, project_id: int) -> dict[str, Any]:
    """The settings the project stored; ``{}`` when it has none."""
    found = conn.execute(
        select(audit_settings.c.settings).where(audit_settings.c.project_id == project_id)
    ).scalar()
    return dict(found) if found else {}


def put(conn: Connection, project_id: int, settings: dict[str, Any], now: datetime) -> None:
    """Replace the project's settings (none stored when ``settings`` is empty)."""
    conn.execute(delete(audit_settings).where(audit_settings.c.project_id == project_id))
    if settings:
        values = {"project_id": project_id, "settings": settings, "updated_at": now}
        conn.execute(insert(audit_settings).values(**values))
