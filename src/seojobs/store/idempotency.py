"""Idempotency-Key records for POSTs (IETF draft; Stripe's behaviour)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from sqlalchemy import Connection, delete, select, update
from sqlalchemy.dialects import postgresql, sqlite

from seojobs.store.db import Database
from seojobs.store.tables import idempotency_keys

Outcome = Literal["new", "replay", "in_flight", "mismatch"]


@dataclass(frozen=True)
class Stored:
    status_code: int
    body: str
    headers: dict[str, str]


def begin(
    db: Database,
    conn: Connection,
    *,
    user_id: int,
    key: str,
    fingerprint: str,
    now: datetime,
    ttl: float,
    in_flight_ttl: float,
) -> tuple[Outcome, Stored | None]:
    """Claim ``key`` for a request, or say what happened to it before.

    A request that died while in flight (its record older than ``in_flight_ttl``) or a record
    past its ``ttl`` no longer blocks the key.
    """
    dialect_insert = postgresql.insert if db.dialect == "postgresql" else sqlite.insert
    values = {
        "user_id": user_id,
        "key": key,
        "fingerprint": fingerprint,
        "state": "in_flight",
        "created_at": now,
        "expires_at": now + timedelta(seconds=ttl),
    }
    inserted = conn.execute(
        dialect_insert(idempotency_keys)
        .values(**values)
        .on_conflict_do_nothing()
        .returning(idempotency_keys.c.id)
    ).scalar()
    if inserted is not None:
        return "new", None
    row = conn.execute(
        select(idempotency_keys).where(
            idempotency_keys.c.user_id == user_id, idempotency_keys.c.key == key
        )
    ).one()
    stale = row.expires_at <= now or (
        row.state == "in_flight" and row.created_at <= now - timedelta(seconds=in_flight_ttl)
    )
    if stale:
        conn.execute(
            update(idempotency_keys).where(idempotency_keys.c.id == row.id).values(**values)
        )
        return "new", None
    if row.fingerprint != fingerprint:
        return "mismatch", None
    if row.state == "in_flight":
        return "in_flight", None
    return "replay", Stored(row.status_code, row.body or "", dict(row.headers or {}))


def finish(
    conn: Connection,
    *,
    user_id: int,
    key: str,
    status_code: int,
    body: str,
    headers: dict[str, Any],
) -> None:
    conn.execute(
        update(idempotency_keys)
        .where(idempotency_keys.c.user_id == user_id, idempotency_keys.c.key == key)
        .values(state="done", status_code=status_code, body=body, headers=headers)
    )


def abandon(conn: Connection, *, user_id: int, key: str) -> None:
    """Forget an in-flight key whose request was refused, so a corrected retry may use it."""
    conn.execute(
        delete(idempotency_keys).where(
            idempotency_keys.c.user_id == user_id,
            idempotency_keys.c.key == key,
            idempotency_keys.c.state == "in_flight",
        )
    )


def prune(conn: Connection, now: datetime) -> int:
    return conn.execute(
        delete(idempotency_keys).where(idempotency_keys.c.expires_at <= now)
    ).rowcount
