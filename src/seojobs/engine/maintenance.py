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
# Seconds between one leader's prunes: what is pruned was kept for days, so once a minute is
# as good as every pass, and each pass it was three DELETEs in a write transaction of their own.
PRUNE_EVERY = 60.0


@dataclass
class Standing:
    """What one worker's maintenance loop remembers from pass to pass, so that an idle pass
    (most of them) is cheap: a rescue and a look at the schedules. About half an idle pass's
    CPU went to renewing a lease that had most of its time left and to pruning (issue 24.1)."""

    # The leader lease this worker last took or renewed runs until then (on the clock
    # ``run_once`` is given): nobody else can take it before, so it is renewed only once a
    # third of it has passed. Two leaders for a moment (a row deleted by hand) would do no
    # harm: every step is safe to race (the rescue is fenced, a tick fires once, pruning is
    # idempotent).
    leader_until: datetime | None = None
    pruned_at: datetime | None = None

    def holds(self, now: datetime, ttl: float) -> bool:
        return self.leader_until is not None and now < self.leader_until - timedelta(
            seconds=ttl * 2 / 3
        )

    def prune_due(self, now: datetime) -> bool:
        return (
            self.pruned_at is None
            or now < self.pruned_at  # the clock went back: the interval is unknown
            or (now - self.pruned_at).total_seconds() >= PRUNE_EVERY
        )

    def renew_at(self, ttl: float) -> datetime | None:
        """When :meth:`holds` stops holding: the lease is renewed then."""
        if self.leader_until is None:
            return None
        return self.leader_until - timedelta(seconds=ttl * 2 / 3)


@dataclass
class MaintenanceReport:
    leader: bool = False
    resumed: int = 0
    lost: int = 0
    fired: int = 0
    schedule_errors: int = 0
    pruned: int = 0
    # The soonest moment a pass has something to do, by what this one read (a lease runs
    # out, a schedule ticks, the leader's lease is to be renewed or can be taken, pruning);
    # None: nothing known. Wake-ups say what else changes it (``MAINTENANCE_CHANNEL``: a
    # schedule made, enabled or moved; the leader resigned). A lease claimed after this pass
    # runs out ``lease_seconds`` after its claim at the soonest: the worker's loop looks
    # again within that.
    next_at: datetime | None = None

    def due(self, at: datetime | None) -> None:
        """``at`` is when something more comes due."""
        if at is not None and (self.next_at is None or at < self.next_at):
            self.next_at = at


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
    others nor be retried every pass. The report learns when the soonest schedule ticks next
    (nearly every pass: one read, of the soonest tick, and nothing due)."""
    report = report if report is not None else MaintenanceReport()
    with db.read() as conn:
        soonest = schedule_sql.next_tick(conn)
        due = [] if soonest is None or soonest > now else schedule_sql.due(conn, now)
    if not due:
        report.due(soonest)
        return report.fired
    for schedule in due:
        try:
            if fire(schedule, now):
                report.fired += 1
        except Exception:
            report.schedule_errors += 1
            log.exception("schedule %s (%s) failed to fire; skipping", schedule.id, schedule.kind)
            _skip_tick(db, schedule, now)
    with db.read() as conn:  # the ticks moved on (or a hundred more are due: at once)
        report.due(schedule_sql.next_tick(conn))
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
    standing: Standing | None = None,
) -> MaintenanceReport:
    """One maintenance pass; does nothing unless ``owner`` is (or becomes) the leader.

    Each step runs whatever the others did: a failing schedule or rescue must not stop the
    pruning, nor the other way round. Without ``fire`` (a worker built without services)
    schedules wait for a leader that has it. With ``standing`` (a worker's loop), a lease
    with most of its time left is not renewed, and pruning waits ``PRUNE_EVERY`` seconds
    after the last; without it (one pass on its own) the pass does both.
    """
    report = MaintenanceReport()
    report.leader = _lead(db, settings, owner, now, standing, report)
    if not report.leader:
        return report
    with _step("rescue"):
        _rescue(db, settings, now, report)
    if fire is not None:
        with _step("schedules"):
            fire_due_schedules(db, now, fire, report)
    if standing is None or standing.prune_due(now):
        report.pruned = _prune(db, settings, now)
        if standing is not None:
            standing.pruned_at = now
    if standing is not None:
        report.due(standing.renew_at(_ttl(settings)))
        if standing.pruned_at is not None:
            report.due(standing.pruned_at + timedelta(seconds=PRUNE_EVERY))
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


def _ttl(settings: Settings) -> float:
    return max(settings.lease_seconds, 5.0)


def _lead(
    db: Database,
    settings: Settings,
    owner: str,
    now: datetime,
    standing: Standing | None,
    report: MaintenanceReport,
) -> bool:
    """Is ``owner`` the leader: its lease still young (``standing``), or taken or renewed.
    Another's lease: the report learns when it runs out (it can be taken then)."""
    ttl = _ttl(settings)
    if standing is not None and standing.holds(now, ttl):
        return True
    with db.write() as conn:
        leader = leaders.acquire(db, conn, LEADER_ROLE, owner, now, ttl=ttl)
        if not leader:
            report.due(leaders.held_until(conn, LEADER_ROLE))
    if standing is not None:
        standing.leader_until = now + timedelta(seconds=ttl) if leader else None
    return leader


def _rescue(db: Database, settings: Settings, now: datetime, report: MaintenanceReport) -> None:
    # A read first: nearly every pass finds no lease run out, and then takes no write lock;
    # the report learns when the soonest lease runs out (rescue takes it once it has).
    with db.read() as conn:
        expiry = job_sql.next_expiry(conn)
    if expiry is None or expiry >= now:
        report.due(expiry)
        return
    with db.write() as conn:
        report.resumed, report.lost = job_sql.rescue(conn, now, settings.max_rescues)
        report.due(job_sql.next_expiry(conn))
        telemetry.RESCUES.labels("resumed").inc(report.resumed)
        telemetry.RESCUES.labels("failed").inc(report.lost)
        if report.resumed:
            db.notify(conn)


def _prune(db: Database, settings: Settings, now: datetime) -> int:
    # Real days, not DAY_SECONDS: a demo with short "days" must not delete results under users.
    cutoff = now - timedelta(days=settings.retention_days)
    with _step("prune"), db.write() as conn:
        pruned = job_sql.prune(conn, cutoff)
        idempotency.prune(conn, now)
        usage.prune(conn, now - timedelta(days=USAGE_KEEP_DAYS))
        return pruned
    return 0  # the step failed (logged)


@contextlib.contextmanager
def _step(name: str) -> Iterator[None]:
    try:
        yield
    except Exception:
        log.exception("maintenance step %s failed; the others still run", name)


def resign(db: Database, owner: str) -> None:
    with db.write() as conn:
        leaders.resign(conn, LEADER_ROLE, owner)
