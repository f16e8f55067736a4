"""Schedule SQL: create, list due ones, and fire one tick exactly once."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Connection, delete, insert, select, update

from seojobs.store.db import Database
from seojobs.store.jobs import insert_job
from seojobs.store.records import NewJob, ScheduleRecord
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
) -> ScheduleRecord:
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
            enabled=True,
            created_at=now,
        )
        .returning(*schedules.c)
    ).one()
    return _schedule(row)


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


def due(conn: Connection, now: datetime, limit: int = 100) -> list[ScheduleRecord]:
    rows = conn.execute(
        select(schedules)
        .where(schedules.c.enabled.is_(True), schedules.c.next_tick_at <= now)
        .order_by(schedules.c.next_tick_at)
        .limit(limit)
    )
    return [_schedule(r) for r in rows]


def fire(
    db: Database,
    conn: Connection,
    schedule: ScheduleRecord,
    expected_next: datetime,
    tick: datetime,
    next_tick: datetime,
    now: datetime,
) -> int | None:
    """Enqueue the job of one tick and move the schedule on.

    The UNIQUE (schedule_id, schedule_tick) constraint on jobs makes the tick exactly-once even
    if two leaders overlap; the guarded UPDATE moves ``next_tick_at`` only from the value read.
    Returns the new job's id, or None when this tick had already fired.
    """
    moved = conn.execute(
        update(schedules)
        .where(schedules.c.id == schedule.id, schedules.c.next_tick_at == expected_next)
        .values(next_tick_at=next_tick)
    ).rowcount
    if moved != 1:
        return None
    job_id, created = insert_job(
        db,
        conn,
        NewJob(
            project_id=schedule.project_id,
            kind=schedule.kind,
            params=schedule.params,
            run_at=now,
            title=f"{schedule.name} ({tick.isoformat()})",
            schedule_id=schedule.id,
            schedule_tick=tick,
        ),
        now,
    )
    return job_id if created else None
