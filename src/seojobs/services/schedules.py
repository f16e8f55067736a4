"""Collection schedules (``services.schedules``): recurring jobs of a kind in a project,
fired by the leader."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from croniter import croniter

from seojobs.engine.maintenance import first_tick, latest_due_tick
from seojobs.engine.registry import InvalidParams
from seojobs.records import ScheduleRecord, UserRecord
from seojobs.services import texts
from seojobs.services.base import Part, ServiceBase
from seojobs.services.errors import Conflict, Invalid, NotFound
from seojobs.services.jobs import Jobs, Origin
from seojobs.services.quotas import Quotas
from seojobs.settings import Settings
from seojobs.store import accounts
from seojobs.store import schedules as schedule_sql
from seojobs.store import usage as usage_sql
from seojobs.store.errors import Duplicate
from seojobs.timefmt import rfc3339

MAX_INTERVAL_SECONDS = 3650 * 86400.0  # ten years: ticks stay representable


def interval_bounds(settings: Settings) -> dict[str, tuple[float, float]]:
    """The least and the greatest ``every_days`` and ``every_seconds`` (both inclusive)."""
    least, day = settings.schedule_min_interval_seconds, settings.day_seconds
    return {
        "every_days": (least / day, MAX_INTERVAL_SECONDS / day),
        "every_seconds": (least, MAX_INTERVAL_SECONDS),
    }


class Schedules(Part):
    def __init__(self, base: ServiceBase, jobs: Jobs, quotas: Quotas) -> None:
        super().__init__(base)
        self.jobs = jobs
        self.quotas = quotas

    def create(
        self,
        user: UserRecord,
        *,
        name: str,
        kind: str,
        params: dict[str, Any],
        project_id: int | None = None,
        every_days: float | None = None,
        every_seconds: float | None = None,
        cron: str | None = None,
        start_at: datetime | None = None,
    ) -> ScheduleRecord:
        """A recurring job. ``every_days`` is in units of ``SEOJOBS_DAY_SECONDS``."""
        name = texts.checked_name(name)
        cron = texts.cron(cron)
        spec = self.base.kind(kind)
        if not spec.schedulable:
            raise Invalid("type", f"{kind} jobs cannot be scheduled; start them one at a time")
        named = self.base.project(user, project_id) if project_id else None
        home = named.id if named is not None else user.default_project_id
        params = self.jobs.with_project(spec, home, params, named=named is not None)
        model = self.base.validated(spec, params)
        self.base.runnable(spec, model)
        self.quotas.fits(user, self.jobs.cost(spec, model))
        interval = self.interval(every_days, every_seconds, cron)
        project = self.base.project(user, project_id) if project_id else None
        now = self.clock()
        start = start_at or now
        try:
            tick = first_tick(interval_seconds=interval, cron=cron, start_at=start)
        except (ValueError, OverflowError) as exc:  # e.g. "0 0 30 2 *": valid, never due
            raise Invalid("cron" if cron else "start_at", f"no next run ({exc})") from None
        try:
            with self.db.write() as conn:
                usage_sql.lock_user(self.db, conn, user.id)  # the cap holds under races
                if accounts.schedule_count(conn, user.id) >= self.settings.max_schedules_per_user:
                    raise Conflict(
                        f"you have {self.settings.max_schedules_per_user} schedules, the most "
                        "this server allows (SEOJOBS_MAX_SCHEDULES_PER_USER); delete one first",
                        "schedule_limit",
                    )
                return schedule_sql.create(
                    conn,
                    project_id=project.id if project else user.default_project_id,
                    name=name,
                    kind=kind,
                    params=model.model_dump(mode="json"),
                    interval_seconds=interval,
                    cron=cron,
                    start_at=start,
                    first_tick=tick,
                    now=now,
                )
        except Duplicate:
            message = f"this project already has a schedule named {name!r}"
            raise Conflict(message, "name_taken") from None

    def interval(
        self, every_days: float | None, every_seconds: float | None, cron: str | None
    ) -> float | None:
        given = [v is not None for v in (every_days, every_seconds, cron)]
        if sum(given) != 1:
            raise Invalid("schedule", "give exactly one of every_days, every_seconds or cron")
        if cron is not None:
            self._check_cron(cron)
            return None
        field, value = (
            ("every_days", every_days)
            if every_days is not None
            else ("every_seconds", every_seconds)
        )
        assert value is not None
        # Compared in the field's own unit, with the bounds the OpenAPI document states.
        least, most = interval_bounds(self.settings)[field]
        if not least <= value <= most:
            raise Invalid(
                field,
                f"the interval must be from {least:g} to {most:g} (from "
                f"SEOJOBS_SCHEDULE_MIN_INTERVAL_SECONDS to ten years); got {value:g}",
            )
        return value * (self.settings.day_seconds if field == "every_days" else 1.0)

    def _check_cron(self, expression: str) -> None:
        fields = expression.split()
        if len(fields) != 5 and not (len(fields) == 6 and self.settings.schedule_allow_seconds):
            hint = (
                " (a seconds field needs SEOJOBS_SCHEDULE_ALLOW_SECONDS=true)"
                if (len(fields) == 6)
                else ""
            )
            raise Invalid("cron", f"{expression!r} must have five fields{hint}")
        if not croniter.is_valid(expression):
            raise Invalid("cron", f"{expression!r} is not a valid cron expression")

    def in_project(self, user: UserRecord, project_id: int) -> list[ScheduleRecord]:
        """The schedules of one of the user's projects, oldest first."""
        self.base.project(user, project_id)
        with self.db.read() as conn:
            return schedule_sql.list_for_project(conn, project_id)

    def get(self, user: UserRecord, project_id: int, schedule_id: int) -> ScheduleRecord:
        self.base.project(user, project_id)
        with self.db.read() as conn:
            found = schedule_sql.get(conn, schedule_id)
        if found is None or found.project_id != project_id:
            raise NotFound(f"schedule {schedule_id}")
        return found

    def set_enabled(
        self, user: UserRecord, project_id: int, schedule_id: int, enabled: bool
    ) -> ScheduleRecord:
        """Pause (``enabled=False``) or resume a schedule. A resumed schedule that missed
        ticks while paused starts one job for the latest of them, as after downtime."""
        self.get(user, project_id, schedule_id)
        with self.db.write() as conn:
            return schedule_sql.set_enabled(conn, schedule_id, enabled)

    def delete(self, user: UserRecord, project_id: int, schedule_id: int) -> None:
        """Stop a schedule; the jobs it already started stay (their schedule_id becomes null)."""
        self.get(user, project_id, schedule_id)
        with self.db.write() as conn:
            schedule_sql.delete_one(conn, schedule_id)

    def fire(self, schedule: ScheduleRecord, now: datetime) -> int | None:
        """Start the job of a schedule's latest due tick, exactly as a POST would (items,
        quotas, follow-ups), and move the schedule on, in one transaction. The guarded move
        and UNIQUE (schedule, tick) make the tick fire once however many leaders race.
        Returns the new job's id, or None when the tick had already fired."""
        tick, following = latest_due_tick(schedule, now)
        spec = self.registry.get(schedule.kind)
        params: Any = schedule.params
        if schedule.collection:  # what the project tracks now (issue 29.1)
            params = self.jobs.with_project(spec, schedule.project_id, params)
        try:
            model: Any = spec.validate(params)
        except InvalidParams as exc:
            if not schedule.collection:
                raise  # stored params that no longer validate: an upgrade left them behind
            # What the project tracks no longer makes a job (no keyword tracked any more):
            # the tick's job is stored failed with why, where the owner looks.
            model, invalid = None, ("invalid_params", str(exc))
        with self.db.write() as conn:
            owner = accounts.owner_of_project(conn, schedule.project_id)
            if owner is None:  # the project went away after the schedule was read
                return None
            # The user's lock before the schedule's row, the order a collection change takes
            # (CollectionConfig: the user, then the schedule it rewrites). Advancing first
            # held the row while the job's quota waited for the user: with a change waiting
            # for the row, PostgreSQL found a deadlock and aborted one (a 503, or a skipped
            # tick).
            usage_sql.lock_user(self.db, conn, owner.id)
            if not schedule_sql.advance(conn, schedule.id, schedule.next_tick_at, following):
                return None
            title = f"{schedule.name} ({rfc3339(tick)})"
            origin = Origin(schedule.id, tick)
            if model is None:
                job_id, created = self.jobs.insert_failed(
                    conn, spec, params, invalid, schedule.project_id, now, title, origin
                )
            else:
                job_id, created = self.jobs.insert(
                    conn,
                    owner,
                    spec,
                    model,
                    project_id=schedule.project_id,
                    run_at=now,
                    now=now,
                    title=title,
                    origin=origin,
                )
        return job_id if created else None
