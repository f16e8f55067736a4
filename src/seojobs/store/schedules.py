"""Schedule SQL: create, list due ones, and fire one tick exactly once."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Connection, bindparam, delete, func, insert, select, update
from sqlalchemy.exc import IntegrityError

from seojobs.records import ScheduleRecord
from seojobs.store.db import MAINTENANCE_CHANNEL, notify
from seojobs.store.errors import Duplicate
from seojobs.store.tables import schedules


def _schedule(row: Any) -> ScheduleRecord:
    return ScheduleRecord(**row._asdict())


def create(
    conn: Connection,
    *,
    project_id: int,
    name: str,
    kind: str,
    params: dict[str, Any],
    interval_seconds: float | None,
    cron: str | None,
    start_at: datetime,
    first_tick: datetime,
    now: datetime,
    collection: bool = False,
    enabled: bool = True,
) -> ScheduleRecord:
    try:
        row = conn.execute(
            insert(schedules)
            .values(
                project_id=project_id,
                name=name,
                kind=kind,
                params=params,
                interval_seconds=interval_seconds,
                cron=cron,
                start_at=start_at,
                next_tick_at=first_tick,
                enabled=enabled,
                created_at=now,
                collection=collection,
            )
            .returning(*schedules.c)
        ).one()
    except IntegrityError:  # UNIQUE (project_id, name)
        raise Duplicate(name) from None
    return _ticks(conn, _schedule(row))


def _ticks(conn: Connection, schedule: ScheduleRecord) -> ScheduleRecord:
    """An enabled schedule made or changed: the maintenance loops, which sleep until the
    soonest tick they know of (:func:`next_tick`), look again once this commits."""
    if schedule.enabled:
        notify(conn, MAINTENANCE_CHANNEL)
    return schedule


def get(conn: Connection, schedule_id: int) -> ScheduleRecord | None:
    row = conn.execute(select(schedules).where(schedules.c.id == schedule_id)).first()
    return _schedule(row) if row else None


def list_for_project(conn: Connection, project_id: int) -> list[ScheduleRecord]:
    rows = conn.execute(
        select(schedules).where(schedules.c.project_id == project_id).order_by(schedules.c.id)
    )
    return [_schedule(r) for r in rows]


def delete_one(conn: Connection, schedule_id: int) -> bool:
    return conn.execute(delete(schedules).where(schedules.c.id == schedule_id)).rowcount == 1


# Every maintenance pass asks (once a second by default): built once, the statement costs its
# run alone (building it each pass cost as much again).
_DUE = (
    select(schedules)
    .where(
        schedules.c.enabled.is_(True),
        schedules.c.next_tick_at <= bindparam("now", type_=schedules.c.next_tick_at.type),
    )
    .order_by(schedules.c.next_tick_at)
    .limit(bindparam("limit"))
)


def due(conn: Connection, now: datetime, limit: int = 100) -> list[ScheduleRecord]:
    rows = conn.execute(_DUE, {"now": now, "limit": limit})
    return [_schedule(r) for r in rows]


_NEXT_TICK = select(func.min(schedules.c.next_tick_at)).where(schedules.c.enabled.is_(True))


def next_tick(conn: Connection) -> datetime | None:
    """When the soonest enabled schedule ticks (``ix_schedules_due``); None: none enabled."""
    found: datetime | None = conn.execute(_NEXT_TICK).scalar()
    return found


def advance(
    conn: Connection, schedule_id: int, expected_next: datetime, next_tick: datetime
) -> bool:
    """Move a schedule to its next tick, only from the value read: of two leaders that raced
    for one tick, one moves it and the other gets False."""
    stmt = (
        update(schedules)
        .where(schedules.c.id == schedule_id, schedules.c.next_tick_at == expected_next)
        .values(next_tick_at=next_tick)
    )
    return conn.execute(stmt).rowcount == 1


def disable(conn: Connection, schedule_id: int) -> None:
    conn.execute(update(schedules).where(schedules.c.id == schedule_id).values(enabled=False))


def set_enabled(conn: Connection, schedule_id: int, enabled: bool) -> ScheduleRecord:
    row = conn.execute(
        update(schedules)
        .where(schedules.c.id == schedule_id)
        .values(enabled=enabled)
        .returning(*schedules.c)
    ).one()
    return _ticks(conn, _schedule(row))


def reconfigure(
    conn: Connection,
    schedule_id: int,
    *,
    params: dict[str, Any],
    enabled: bool,
    interval_seconds: float | None,
    cron: str | None,
    start_at: datetime | None,
    next_tick: datetime | None,
) -> ScheduleRecord:
    """Set a collection's params, state and timing; its next tick moves only when given (a
    changed interval or cron), so re-stating a collection as it is starts nothing."""
    values: dict[str, Any] = {
        "params": params,
        "enabled": enabled,
        "interval_seconds": interval_seconds,
        "cron": cron,
    }
    if next_tick is not None:
        values |= {"next_tick_at": next_tick, "start_at": start_at}
    row = conn.execute(
        update(schedules)
        .where(schedules.c.id == schedule_id)
        .values(**values)
        .returning(*schedules.c)
    ).one()
    return _ticks(conn, _schedule(row))
