"""Leader election by lease row: whoever holds an unexpired lease on a role is its leader."""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import Connection, delete
from sqlalchemy.dialects import postgresql, sqlite

from seojobs.store.db import Database
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


def resign(conn: Connection, role: str, owner: str) -> None:
    conn.execute(delete(leaders).where(leaders.c.name == role, leaders.c.owner == owner))
