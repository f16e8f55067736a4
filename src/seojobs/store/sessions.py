"""Dashboard sessions and the server's own secrets (SQL)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Connection, bindparam, delete, insert, select
from sqlalchemy.exc import IntegrityError

from seojobs.records import UserRecord
from seojobs.store import accounts
from seojobs.store.db import Database
from seojobs.store.tables import dashboard_sessions, server_secrets, users


def create(
    conn: Connection,
    *,
    token_hash: str,
    user_id: int,
    csrf_token: str,
    now: datetime,
    expires_at: datetime,
) -> None:
    key_hash = conn.execute(select(users.c.api_key_hash).where(users.c.id == user_id)).scalar_one()
    conn.execute(delete(dashboard_sessions).where(dashboard_sessions.c.expires_at <= now))
    conn.execute(
        insert(dashboard_sessions).values(
            token_hash=token_hash,
            user_id=user_id,
            key_hash=key_hash,
            csrf_token=csrf_token,
            created_at=now,
            expires_at=expires_at,
        )
    )


# Built once, its values bound at execution: every dashboard page reads its session, and
# building the statement again cost more than running it.
_FIND = (
    accounts.user_query()
    .add_columns(dashboard_sessions.c.csrf_token)
    .join(dashboard_sessions, dashboard_sessions.c.user_id == users.c.id)
    .where(
        dashboard_sessions.c.token_hash == bindparam("token_hash"),
        dashboard_sessions.c.expires_at > bindparam("now"),
        dashboard_sessions.c.key_hash == users.c.api_key_hash,
        users.c.disabled_at.is_(None),
    )
)


def find(conn: Connection, token_hash: str, now: datetime) -> tuple[UserRecord, str] | None:
    """The session's user and CSRF token, while the session is unexpired, its user enabled
    and the user's key the one they signed in with."""
    # one statement: the session and its user
    row = conn.execute(_FIND, {"token_hash": token_hash, "now": now}).first()
    if row is None:
        return None
    fields = row._asdict()
    csrf = fields.pop("csrf_token")
    return UserRecord(**fields), csrf


def end(conn: Connection, token_hash: str) -> None:
    conn.execute(delete(dashboard_sessions).where(dashboard_sessions.c.token_hash == token_hash))


def secret(db: Database, name: str, made: str) -> str:
    """The secret called ``name``; ``made`` becomes it when there is none yet (the first
    process to store one wins, every other reads that one)."""
    query = select(server_secrets.c.value).where(server_secrets.c.name == name)
    with db.read() as conn:
        value = conn.execute(query).scalar_one_or_none()
    if value is not None:
        return str(value)
    try:
        with db.write() as conn:
            conn.execute(insert(server_secrets).values(name=name, value=made))
    except IntegrityError:  # another process stored one first
        with db.read() as conn:
            return str(conn.execute(query).scalar_one())
    return made
