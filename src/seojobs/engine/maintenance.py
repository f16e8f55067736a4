"""Leader-only maintenance: rescue jobs of dead workers, fire schedule ticks, prune."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta

from croniter import croniter

from seojobs import telemetry
from seojobs.records import ScheduleRecord
from seojobs.settings import Settings
from seojobs.store import idempotency, leaders, usage
from seojobs.store import jobs as job_sql
from seojobs.store import schedules as schedule_sql
from seojobs.store.db import Database

log = logging.getLogger("seojobs.maintenance")
LEADER_ROLE = "maintenance"
# Usage charges outlive the longest quota period (a calendar month) with room to spare.
USAGE_KEEP_DAYS = 62


@dataclass
class MaintenanceReport:
    leader: bool = False
    resumed: int = 0
    lost: int = 0
    fired: int = 0
    schedule_errors: int = 0
    pruned: int = 0


def latest_due_tick(schedule: ScheduleRecord, now: datetime) -> tuple[datetime, datetime]:
    """The most recent tick at or before ``now`` and the tick after it.

    Ticks missed while nothing ran are not back-filled: one collection run catches up, which
    is what a user of a daily schedule wants after a day of downtime. Both forms compute the
    answer directly, without stepping through the missed ticks.
    """
    tick = schedule.next_tick_at
    if schedule.interval_seconds is not None:
        step = timedelta(seconds=schedule.interval_seconds)
        if step <= timedelta(0):
            raise ValueError(f"schedule {schedule.id}: interval {step} is not positive")
        missed = (now - tick) // step if now > tick else 0
        tick = tick + missed * step
        return tick, tick + step
    assert schedule.cron is not None
    following: datetime = croniter(schedule.cron, now).get_next(datetime)  # strictly after now
    latest: datetime = croniter(schedule.cron, now + timedelta(microseconds=1)).get_prev(datetime)
    return max(tick, latest), following


def first_tick(*, interval_seconds: float | None, cron: str | None, start_at: datetime) -> datetime:
    if interval_seconds is not None:
        return start_at
    assert cron is not None
    value: datetime = croniter(cron, start_at - timedelta(microseconds=1)).get_next(datetime)
    return value


# Creates the job of one tick and moves the schedule on, exactly once however many leaders
# race (services.schedules.fire): the job is created the way every job is, quotas included.
FireSchedule = Callable[[ScheduleRecord, datetime], "int | None"]


def fire_due_schedules(
    db: Database, now: datetime, fire: FireSchedule, report: MaintenanceReport | None = None
) -> int:
    """Fire every due schedule. A schedule that raises is logged, counted and moved past this
    tick (disabled if even its next tick cannot be computed), so it can neither stop the
    others nor be retried every pass."""
    report = report if report is not None else MaintenanceReport()
    with db.read() as conn:
        due = schedule_sql.due(conn, now)
    for schedule in due:
        try:
            if fire(schedule, now):
                report.fired += 1
        except Exception:
            report.schedule_errors += 1
            log.exception("schedule %s (%s) failed to fire; skipping", schedule.id, schedule.kind)
            _skip_tick(db, schedule, now)
    return report.fired


def _skip_tick(db: Database, schedule: ScheduleRecord, now: datetime) -> None:
    try:
        try:
            _tick, following = latest_due_tick(schedule, now)
        except (ValueError, OverflowError, ArithmeticError):
            with db.write() as conn:
                schedule_sql.disable(conn, schedule.id)
            log.error("schedule %s disabled: its next run cannot be computed", schedule.id)
            return
        with db.write() as conn:
            schedule_sql.advance(conn, schedule.id, schedule.next_tick_at, following)
    except Exception:  # the store itself is failing: the next pass tries again
        log.exception("schedule %s: could not skip its tick", schedule.id)


def run_once(
    db: Database,
    settings: Settings,
    owner: str,
    now: datetime,
    fire: FireSchedule | None = None,
) -> MaintenanceReport:
    """One maintenance pass; does nothing unless ``owner`` is (or becomes) the leader.

    Each step runs whatever the others did: a failing schedule or rescue must not stop the
    pruning, nor the other way round. Without ``fire`` (a worker built without services)
    schedules wait for a leader that has it.
    """
    report = MaintenanceReport()
    with db.write() as conn:
        report.leader = leaders.acquire(
            db, conn, LEADER_ROLE, owner, now, ttl=max(settings.lease_seconds, 5.0)
        )
    if not report.leader:
        return report
    with _step("rescue"), db.write() as conn:
        report.resumed, report.lost = job_sql.rescue(conn, now, settings.max_rescues)
        telemetry.RESCUES.labels("resumed").inc(report.resumed)
        telemetry.RESCUES.labels("failed").inc(report.lost)
        if report.resumed:
            db.notify(conn)
    if fire is not None:
        with _step("schedules"):
            fire_due_schedules(db, now, fire, report)
    # Real days, not DAY_SECONDS: a demo with short "days" must not delete results under users.
    cutoff = now - timedelta(days=settings.retention_days)
    with _step("prune"), db.write() as conn:
        report.pruned = job_sql.prune(conn, cutoff)
        idempotency.prune(conn, now)
        usage.prune(conn, now - timedelta(days=USAGE_KEEP_DAYS))
    if report.resumed or report.lost or report.fired or report.pruned or report.schedule_errors:
        log.info(
            "maintenance: resumed=%d lost=%d fired=%d schedule_errors=%d pruned=%d",
            report.resumed,
            report.lost,
            report.fired,
            report.schedule_errors,
            report.pruned,
        )
    return report


@contextlib.contextmanager
def _step(name: str) -> Iterator[None]:
    try:
        yield
    except Exception:
        log.exception("maintenance step %s failed; the others still run", name)


def resign(db: Database, owner: str) -> None:
    with db.write() as conn:
        leaders.resign(conn, LEADER_ROLE, owner)
