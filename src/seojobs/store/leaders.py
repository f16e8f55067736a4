"""Leader election by lease row: whoever holds an unexpired lease on a role is its leader."""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import Connection, delete, select
from sqlalchemy.dialects import postgresql, sqlite

from seojobs.store.db import MAINTENANCE_CHANNEL, Database, notify
from seojobs.store.tables import leaders


def acquire(
    db: Database, conn: Connection, role: str, owner: str, now: datetime, ttl: float
) -> bool:
    """Take or renew the lease on ``role``. True when ``owner`` holds it afterwards."""
    dialect_insert = postgresql.insert if db.dialect == "postgresql" else sqlite.insert
    stmt = dialect_insert(leaders).values(
        name=role, owner=owner, expires_at=now + timedelta(seconds=ttl)
    )
    upsert = stmt.on_conflict_do_update(
        index_elements=[leaders.c.name],
        set_={"owner": stmt.excluded.owner, "expires_at": stmt.excluded.expires_at},
        where=(leaders.c.owner == owner) | (leaders.c.expires_at < now),
    ).returning(leaders.c.owner)
    return conn.execute(upsert).scalar() == owner


def held_until(conn: Connection, role: str) -> datetime | None:
    """When the lease on ``role`` runs out (None: nobody holds it): before then, no one else
    can take it."""
    found: datetime | None = conn.execute(
        select(leaders.c.expires_at).where(leaders.c.name == role)
    ).scalar()
    return found


def resign(conn: Connection, role: str, owner: str) -> None:
    """Give the lease up; the others' maintenance loops, which wait for it to run out, are
    woken to take it at once."""
    gone = conn.execute(delete(leaders).where(leaders.c.name == role, leaders.c.owner == owner))
    if gone.rowcount:
        notify(conn, MAINTENANCE_CHANNEL)
