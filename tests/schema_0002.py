"""A database as revision 0002 left it, with rows, for the migration tests.

The rows go in through frozen column lists (not ``seojobs.store.tables``, which follows the
newest revision) so later migrations cannot break the seeding. Before the upgrade the newest
user, project, schedule and job are deleted, as a user or the pruning would have done.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy import Connection, column, table

from seojobs.store import migrate
from seojobs.store.coltypes import UTCDateTime
from seojobs.store.db import Database

T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


def _at(minutes: int) -> datetime:
    return T0 + timedelta(minutes=minutes)


# Columns as of revision 0002, with the types that convert values for each dialect.
COLUMNS: dict[str, tuple[sa.ColumnClause[Any], ...]] = {
    "users": (
        column("id"),
        column("name"),
        column("api_key_hash"),
        column("rate_limit"),
        column("quotas", sa.JSON),
        column("created_at", UTCDateTime),
    ),
    "projects": (
        column("id"),
        column("user_id"),
        column("name"),
        column("is_default", sa.Boolean),
        column("created_at", UTCDateTime),
    ),
    "schedules": (
        column("id"),
        column("project_id"),
        column("name"),
        column("kind"),
        column("params", sa.JSON),
        column("interval_seconds"),
        column("cron"),
        column("start_at", UTCDateTime),
        column("next_tick_at", UTCDateTime),
        column("enabled", sa.Boolean),
        column("created_at", UTCDateTime),
    ),
    "jobs": tuple(
        column(name, kind)
        for name, kind in [
            ("id", None),
            ("project_id", None),
            ("kind", None),
            ("params", sa.JSON),
            ("state", None),
            ("priority", None),
            ("title", None),
            ("run_at", UTCDateTime),
            ("created_at", UTCDateTime),
            ("started_at", UTCDateTime),
            ("updated_at", UTCDateTime),
            ("completed_at", UTCDateTime),
            ("attempt", None),
            ("worker_id", None),
            ("lease_expires_at", UTCDateTime),
            ("rescue_count", None),
            ("error_code", None),
            ("error_message", None),
            ("items_total", None),
            ("items_done", None),
            ("items_failed", None),
            ("counters", sa.JSON),
            ("result", sa.JSON),
            ("parent_id", None),
            ("idempotency_key", None),
            ("schedule_id", None),
            ("schedule_tick", UTCDateTime),
        ]
    ),
    "job_items": (
        column("id"),
        column("job_id"),
        column("seq"),
        column("input"),
        column("state"),
        column("outcome"),
        column("result", sa.JSON),
        column("error_code"),
        column("error_message"),
        column("finished_at", UTCDateTime),
    ),
    "idempotency_keys": (
        column("id"),
        column("user_id"),
        column("key"),
        column("fingerprint"),
        column("state"),
        column("status_code"),
        column("body"),
        column("headers", sa.JSON),
        column("created_at", UTCDateTime),
        column("expires_at", UTCDateTime),
    ),
    "leaders": (column("name"), column("owner"), column("expires_at", UTCDateTime)),
}
TABLES = {name: table(name, *cols) for name, cols in COLUMNS.items()}

# The highest id each table handed out before the upgrade, and the highest still present.
HANDED_OUT = {"users": 3, "projects": 4, "schedules": 2, "jobs": 6}
PRESENT = {"users": 2, "projects": 3, "schedules": 1, "jobs": 4}


def _job(job_id: int, project_id: int, state: str, **extra: Any) -> dict[str, Any]:
    final = state in ("completed", "failed")
    row: dict[str, Any] = {
        "id": job_id,
        "project_id": project_id,
        "kind": "test_items",
        "params": {"urls": [f"https://example.test/{job_id}"]},
        "state": state,
        "priority": 0,
        "title": f"job {job_id}",
        "run_at": _at(job_id),
        "created_at": _at(job_id),
        "started_at": _at(job_id + 1) if state != "pending" else None,
        "updated_at": _at(job_id + 2),
        "completed_at": _at(job_id + 3) if final else None,
        "attempt": 1 if state != "pending" else 0,
        "worker_id": None,
        "lease_expires_at": None,
        "rescue_count": 0,
        "error_code": "boom" if state == "failed" else None,
        "error_message": "it broke" if state == "failed" else None,
        "items_total": 2,
        "items_done": 2 if final else 0,
        "items_failed": 0,
        "counters": {"ok": 2} if final else {},
        "result": {"done": True} if state == "completed" else None,
        "parent_id": None,
        "idempotency_key": None,
        "schedule_id": None,
        "schedule_tick": None,
    }
    row.update(extra)
    return row


def _item(item_id: int, job_id: int, seq: int, state: str) -> dict[str, Any]:
    return {
        "id": item_id,
        "job_id": job_id,
        "seq": seq,
        "input": f"https://example.test/{job_id}/{seq}",
        "state": state,
        "outcome": "ok" if state == "done" else None,
        "result": {"seq": seq} if state == "done" else None,
        "error_code": None,
        "error_message": None,
        "finished_at": _at(seq) if state == "done" else None,
    }


def _user(user_id: int, name: str) -> dict[str, Any]:
    quotas = {"index_submit": 10} if user_id == 1 else None
    return {
        "id": user_id,
        "name": name,
        "api_key_hash": f"{user_id:064x}",
        "rate_limit": "60/minute" if user_id == 2 else None,
        "quotas": quotas,
        "created_at": _at(0),
    }


def _project(project_id: int, user_id: int, name: str, default: bool) -> dict[str, Any]:
    return {
        "id": project_id,
        "user_id": user_id,
        "name": name,
        "is_default": default,
        "created_at": _at(project_id),
    }


def _schedule(schedule_id: int, project_id: int) -> dict[str, Any]:
    return {
        "id": schedule_id,
        "project_id": project_id,
        "name": f"nightly {schedule_id}",
        "kind": "test_noop",
        "params": {},
        "interval_seconds": 86400.0,
        "cron": None,
        "start_at": _at(0),
        "next_tick_at": _at(1440),
        "enabled": True,
        "created_at": _at(schedule_id),
    }


def _key(key_id: int, user_id: int) -> dict[str, Any]:
    return {
        "id": key_id,
        "user_id": user_id,
        "key": f"key-{key_id}",
        "fingerprint": f"{key_id:064x}",
        "state": "done",
        "status_code": 201,
        "body": '{"id": 1}',
        "headers": {"location": "/v1/jobs/1"},
        "created_at": _at(0),
        "expires_at": _at(1440),
    }


ROWS: dict[str, list[dict[str, Any]]] = {
    "users": [_user(1, "alice"), _user(2, "bob"), _user(3, "carol")],
    "projects": [
        _project(1, 1, "Default", True),
        _project(2, 1, "site", False),
        _project(3, 2, "Default", True),
        _project(4, 3, "Default", True),
    ],
    "schedules": [_schedule(1, 2), _schedule(2, 1)],
    "jobs": [
        _job(1, 1, "completed"),
        _job(2, 2, "pending", idempotency_key="k-2"),
        _job(3, 2, "failed", schedule_id=1, schedule_tick=_at(1440)),
        _job(4, 1, "pending", parent_id=1),
        _job(5, 4, "pending"),
        _job(6, 1, "processing", worker_id="w1", lease_expires_at=_at(30)),
    ],
    "job_items": [
        _item(1, 1, 0, "done"),
        _item(2, 1, 1, "done"),
        _item(3, 2, 0, "pending"),
        _item(4, 3, 0, "done"),
        _item(5, 4, 0, "pending"),
        _item(6, 6, 0, "pending"),
    ],
    "idempotency_keys": [_key(1, 1), _key(2, 2), _key(3, 3)],
    "leaders": [{"name": "maintenance", "owner": "w1", "expires_at": _at(60)}],
}

# What was deleted before the upgrade: carol (with her project 4, its job 5 and her key),
# schedule 2 and job 6 -- each the newest of its table.
DELETIONS = (
    "DELETE FROM users WHERE id = 3",
    "DELETE FROM schedules WHERE id = 2",
    "DELETE FROM jobs WHERE id = 6",
)


def build(db: Database) -> None:
    """Migrate an empty database to 0002, seed it, delete the newest rows."""
    migrate.upgrade(db, "0002")
    with db.write() as conn:
        for name, rows in ROWS.items():
            conn.execute(TABLES[name].insert(), rows)
            if db.dialect == "postgresql" and "id" in rows[0]:
                # The rows carry their ids; move the sequence past them as if it had given
                # them out.
                conn.execute(
                    sa.text(f"SELECT setval(pg_get_serial_sequence('{name}', 'id'), :top)"),
                    {"top": max(row["id"] for row in rows)},
                )
        for statement in DELETIONS:
            conn.execute(sa.text(statement))


def snapshot(conn: Connection) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of the 0002 columns, in key order."""
    found = {}
    for name, cols in COLUMNS.items():
        query = sa.select(*cols).select_from(TABLES[name]).order_by(cols[0])
        found[name] = [tuple(row) for row in conn.execute(query)]
    return found
