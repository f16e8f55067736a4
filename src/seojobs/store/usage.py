"""Quota accounting: one row per charge, summed over the quota's period."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from sqlalchemy import Connection, delete, func, insert, select

from seojobs.store.db import Database
from seojobs.store.tables import usage_charges, users


def lock_user(db: Database, conn: Connection, user_id: int) -> None:
    """Serialise quota decisions of one user (SQLite's writer lock already does)."""
    if db.dialect == "postgresql":
        conn.execute(select(users.c.id).where(users.c.id == user_id).with_for_update())


def used(conn: Connection, user_id: int, quota: str, since: datetime) -> int:
    """How much of ``quota`` the user was charged since ``since``."""
    query = select(func.coalesce(func.sum(usage_charges.c.amount), 0)).where(
        usage_charges.c.user_id == user_id,
        usage_charges.c.quota == quota,
        usage_charges.c.charged_at >= since,
    )
    return int(conn.execute(query).scalar_one())


def charge(
    conn: Connection, user_id: int, job_id: int, amounts: Mapping[str, int], now: datetime
) -> None:
    rows = [
        {"user_id": user_id, "job_id": job_id, "quota": q, "amount": n, "charged_at": now}
        for q, n in amounts.items()
        if n
    ]
    if rows:
        conn.execute(insert(usage_charges), rows)


def prune(conn: Connection, before: datetime) -> int:
    return conn.execute(delete(usage_charges).where(usage_charges.c.charged_at < before)).rowcount
