"""A project's collection (``services.collection``, issue 29.1): per schedulable kind, whether
it is collected and how often (daily, weekly, every N days of ``SEOJOBS_DAY_SECONDS``, or a UTC
cron expression), built on the schedules: one schedule per project and kind, marked
``collection``, whose params are only what the collection sets. Each tick adds what the
project tracks then (``Kind.project_params``: its domain, competitors, tracked keywords and
prompts) and starts an ordinary job of the project, charged like any other; params the
collection sets win over the project's.

Seed 001 collects rankings, local rankings, backlinks and GEO on a schedule, and runs audits
and web vitals only when started: kinds that declare ``collection_opt_in`` (``site_audit``,
``web_vitals``) stay off unless an entry says ``"enabled": true``; the others are on when an
entry names them without ``enabled``. A project has no collection until one is set.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from seojobs.engine.maintenance import first_tick
from seojobs.engine.registry import Kind
from seojobs.records import ScheduleRecord, UserRecord
from seojobs.schemarules import NULL, given
from seojobs.services import texts
from seojobs.services.base import Part, ServiceBase
from seojobs.services.errors import Conflict, FieldError, Invalid
from seojobs.services.schedules import Schedules
from seojobs.store import accounts
from seojobs.store import schedules as schedule_sql
from seojobs.store import usage as usage_sql
from seojobs.store.errors import Duplicate

TIMINGS = ("frequency", "every_days", "cron")
WEEK_DAYS = 7


def _only(field: str | None) -> dict[str, Any]:
    nulls = {other: dict(NULL) for other in TIMINGS if other != field}
    if field is None:
        return {"properties": nulls}
    return given(field, **nulls)


class CollectionEntry(BaseModel):
    """How one kind is collected. At most one of ``frequency``, ``every_days`` and ``cron``:
    none keeps the collection's timing (daily for a new one)."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={"oneOf": [_only(f) for f in (*TIMINGS, None)]},
    )

    enabled: bool | None = Field(
        default=None,
        description="Collect it or not; left out: on, except for the kinds seed 001 runs only "
        "when started (site_audit, web_vitals: `opt_in`), which need `true`.",
    )
    frequency: Literal["daily", "weekly"] | None = Field(
        default=None, description="Every day or every seven days (of SEOJOBS_DAY_SECONDS)."
    )
    every_days: float | None = Field(
        default=None, description="Every N days (of SEOJOBS_DAY_SECONDS)."
    )
    cron: str | None = Field(default=None, max_length=200, description="UTC cron expression.")
    params: dict[str, Any] | None = Field(
        default=None,
        description="The jobs' params; what they leave out comes from the project (its "
        "domain, competitors, tracked keywords and prompts) when each job starts. Left out: "
        "the collection's params stay ({} for a new one).",
    )


@dataclass(frozen=True)
class Collected:
    """One kind's collection as read: its schedule (None when never set)."""

    kind: Kind[Any]
    schedule: ScheduleRecord | None


@dataclass(frozen=True)
class _Planned:
    spec: Kind[Any]
    params: dict[str, Any]
    enabled: bool
    interval: float | None
    cron: str | None
    timing_given: bool


class CollectionConfig(Part):
    def __init__(self, base: ServiceBase, schedules: Schedules) -> None:
        super().__init__(base)
        self.schedules = schedules

    def get(self, user: UserRecord, project_id: int) -> list[Collected]:
        """Every schedulable kind with the project's collection of it, by kind name."""
        found = {s.kind: s for s in self.schedules.in_project(user, project_id) if s.collection}
        kinds = [k for k in self.registry.kinds() if k.schedulable]
        return [Collected(k, found.get(k.name)) for k in kinds]

    def put(
        self, user: UserRecord, project_id: int, entries: Mapping[str, CollectionEntry]
    ) -> list[Collected]:
        """Set the kinds ``entries`` name (the others stay as they are). Every entry is
        checked first (``Invalid`` naming ``<kind>.<field>``, inside params too), then all
        are written in one transaction. A changed timing starts its next run from now."""
        self.base.project(user, project_id)
        existing = {s.kind: s for s in self.schedules.in_project(user, project_id) if s.collection}
        plans = [
            self._plan(project_id, name, entry, existing.get(name))
            for name, entry in entries.items()
        ]
        now = self.clock()
        with self.db.write() as conn:
            usage_sql.lock_user(self.db, conn, user.id)
            for plan in plans:
                self._write(conn, user, project_id, plan, existing.get(plan.spec.name), now)
        return self.get(user, project_id)

    def change_params(
        self,
        user: UserRecord,
        project_id: int,
        name: str,
        change: Callable[[dict[str, Any]], dict[str, Any]],
    ) -> Collected:
        """Change the params of the project's collection of ``name`` in one transaction
        under the project's lock (two requests never lose each other's change): ``change``
        gets the params as stored (``{}`` when there is no collection) and answers the new
        ones, or raises to refuse. The params are checked as the kind's (``Invalid`` naming
        ``params.<field>``); the timing and state stay, and a project without a collection
        of the kind gets one, daily, on unless the kind is opt-in."""
        self.base.project(user, project_id)
        spec = self.base.kind(name, field=name)
        with self.db.write() as conn:
            usage_sql.lock_user(self.db, conn, user.id)
            found = next(
                (
                    s
                    for s in schedule_sql.list_for_project(conn, project_id)
                    if s.collection and s.kind == name
                ),
                None,
            )
            params = change(dict(found.params) if found is not None else {})
            try:
                self.base.validated(spec, params)
            except Invalid as exc:
                raise exc.within("params") from None
            plan = _Planned(
                spec,
                params,
                found.enabled if found is not None else not spec.collection_opt_in,
                found.interval_seconds if found is not None else self.settings.day_seconds,
                found.cron if found is not None else None,
                timing_given=False,
            )
            self._write(conn, user, project_id, plan, found, self.clock())
        return next(c for c in self.get(user, project_id) if c.kind.name == name)

    def _plan(
        self, project_id: int, name: str, entry: CollectionEntry, found: ScheduleRecord | None
    ) -> _Planned:
        try:
            spec = self.base.kind(name, field=name)
            if not spec.schedulable:
                collected = ", ".join(k.name for k in self.registry.kinds() if k.schedulable)
                raise Invalid(name, f"{name} cannot be collected on a schedule ({collected} can)")
            interval, cron = self._timing(entry)
        except Invalid as exc:
            raise exc if exc.errors[0].path[:1] == (name,) else exc.within(name) from None
        enabled = entry.enabled if entry.enabled is not None else not spec.collection_opt_in
        own = entry.params if entry.params is not None else (found.params if found else {})
        if enabled:  # checked with what the project tracks now, as a tick will be
            params = self.schedules.jobs.with_project(spec, project_id, own)
            try:
                model = self.base.validated(spec, params)
                self.base.runnable(spec, model)
            except Invalid as exc:
                raise exc.within(f"{name}.params" if exc.in_params else name) from None
        timing_given = any(getattr(entry, f) is not None for f in TIMINGS)
        return _Planned(spec, own, enabled, interval, cron, timing_given)

    def _timing(self, entry: CollectionEntry) -> tuple[float | None, str | None]:
        day = self.settings.day_seconds
        if entry.frequency is not None:
            return (day if entry.frequency == "daily" else WEEK_DAYS * day), None
        if entry.cron is not None:
            cron = texts.cron(entry.cron)
            return self.schedules.interval(None, None, cron), cron
        if entry.every_days is not None:
            return self.schedules.interval(entry.every_days, None, None), None
        return day, None

    def _write(
        self,
        conn: Any,
        user: UserRecord,
        project_id: int,
        plan: _Planned,
        found: ScheduleRecord | None,
        now: Any,
    ) -> None:
        if found is not None:
            moved = plan.timing_given and (
                (plan.interval, plan.cron) != (found.interval_seconds, found.cron)
            )
            schedule_sql.reconfigure(
                conn,
                found.id,
                params=plan.params,
                enabled=plan.enabled,
                interval_seconds=plan.interval if plan.timing_given else found.interval_seconds,
                cron=plan.cron if plan.timing_given else found.cron,
                start_at=now if moved else None,
                next_tick=_first(plan, now) if moved else None,
            )
            return
        if accounts.schedule_count(conn, user.id) >= self.settings.max_schedules_per_user:
            raise Conflict(
                f"you have {self.settings.max_schedules_per_user} schedules, the most this "
                "server allows (SEOJOBS_MAX_SCHEDULES_PER_USER); delete one first",
                "schedule_limit",
            )
        try:
            self._create(conn, project_id, plan, now)
        except Duplicate:
            name = f"collection {plan.spec.name}"
            raise Conflict(f"this project has a schedule named {name!r}", "name_taken") from None

    @staticmethod
    def _create(conn: Any, project_id: int, plan: _Planned, now: Any) -> None:
        schedule_sql.create(
            conn,
            project_id=project_id,
            name=f"collection {plan.spec.name}",
            kind=plan.spec.name,
            params=plan.params,
            interval_seconds=plan.interval,
            cron=plan.cron,
            start_at=now,
            first_tick=_first(plan, now),
            now=now,
            collection=True,
            enabled=plan.enabled,
        )


def _first(plan: _Planned, now: Any) -> Any:
    try:
        return first_tick(interval_seconds=plan.interval, cron=plan.cron, start_at=now)
    except (ValueError, OverflowError) as exc:  # e.g. "0 0 30 2 *": valid, never due
        raise Invalid([FieldError((plan.spec.name, "cron"), f"no next run ({exc})")]) from None
