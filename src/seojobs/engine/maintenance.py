"""Leader-only maintenance: rescue jobs of dead workers, fire schedule ticks, prune."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from croniter import croniter

from seojobs.settings import Settings
from seojobs.store import idempotency, leaders
from seojobs.store import jobs as job_sql
from seojobs.store import schedules as schedule_sql
from seojobs.store.db import Database
from seojobs.store.records import ScheduleRecord

log = logging.getLogger("seojobs.maintenance")
LEADER_ROLE = "maintenance"


@dataclass
class MaintenanceReport:
    leader: bool = False
    resumed: int = 0
    lost: int = 0
    fired: int = 0
    pruned: int = 0


def latest_due_tick(schedule: ScheduleRecord, now: datetime) -> tuple[datetime, datetime]:
    """The most recent tick at or before ``now`` and the tick after it.

    Ticks missed while nothing ran are not back-filled: one collection run catches up, which
    is what a user of a daily schedule wants after a day of downtime.
    """
    tick = schedule.next_tick_at
    if schedule.interval_seconds is not None:
        step = timedelta(seconds=schedule.interval_seconds)
        missed = int((now - tick) / step)
        tick = tick + missed * step
        return tick, tick + step
    assert schedule.cron is not None
    itr = croniter(schedule.cron, tick)
    following: datetime = itr.get_next(datetime)
    while following <= now:
        tick, following = following, itr.get_next(datetime)
    return tick, following


def first_tick(*, interval_seconds: float | None, cron: str | None, start_at: datetime) -> datetime:
    if interval_seconds is not None:
        return start_at
    assert cron is not None
    value: datetime = croniter(cron, start_at - timedelta(microseconds=1)).get_next(datetime)
    return value


def fire_due_schedules(db: Database, now: datetime) -> int:
    fired = 0
    with db.read() as conn:
        due = schedule_sql.due(conn, now)
    for schedule in due:
        tick, following = latest_due_tick(schedule, now)
        with db.write() as conn:
            if schedule_sql.fire(db, conn, schedule, schedule.next_tick_at, tick, following, now):
                fired += 1
    return fired


def run_once(db: Database, settings: Settings, owner: str, now: datetime) -> MaintenanceReport:
    """One maintenance pass; does nothing unless ``owner`` is (or becomes) the leader."""
    report = MaintenanceReport()
    with db.write() as conn:
        report.leader = leaders.acquire(
            db, conn, LEADER_ROLE, owner, now, ttl=max(settings.lease_seconds, 5.0)
        )
    if not report.leader:
        return report
    with db.write() as conn:
        report.resumed, report.lost = job_sql.rescue(conn, now, settings.max_rescues)
        if report.resumed:
            db.notify(conn)
    report.fired = fire_due_schedules(db, now)
    # Real days, not DAY_SECONDS: a demo with short "days" must not delete results under users.
    cutoff = now - timedelta(days=settings.retention_days)
    with db.write() as conn:
        report.pruned = job_sql.prune(conn, cutoff)
        idempotency.prune(conn, now)
    if report.resumed or report.lost or report.fired or report.pruned:
        log.info(
            "maintenance: resumed=%d lost=%d fired=%d pruned=%d",
            report.resumed,
            report.lost,
            report.fired,
            report.pruned,
        )
    return report


def resign(db: Database, owner: str) -> None:
    with db.write() as conn:
        leaders.resign(conn, LEADER_ROLE, owner)
