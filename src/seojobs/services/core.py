"""The service facade every surface (HTTP, CLI, dashboard) calls."""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.exc import IntegrityError

from seojobs.engine.maintenance import first_tick
from seojobs.engine.registry import Registry
from seojobs.settings import Settings
from seojobs.store import accounts
from seojobs.store import jobs as job_sql
from seojobs.store import schedules as schedule_sql
from seojobs.store.coltypes import utcnow
from seojobs.store.db import Database
from seojobs.store.fastread import FastReads
from seojobs.store.records import (
    ItemRecord,
    JobRecord,
    NewJob,
    ProjectRecord,
    ScheduleRecord,
    UserRecord,
)

API_KEY_PREFIX = "sj_"


class NotFound(LookupError):
    """The thing does not exist, or belongs to someone else (callers must not tell which)."""


class Conflict(Exception):
    """The change clashes with what exists: a name already taken, the default project."""

    def __init__(self, message: str, code: str = "conflict") -> None:
        super().__init__(message)
        self.code = code


# Kinds whose URLs count against the user's daily quota. The quota is charged when such a job
# is created through seojobs.services.indexing; a schedule fires its jobs in the engine, which
# cannot charge it, so these kinds are not schedulable (one schedule every second would have
# been a way around the quota).
QUOTA_KINDS = frozenset({"index_submit", "index_check"})


def hash_api_key(key: str) -> str:
    # Keys are 256-bit random tokens, so a fast hash is enough: there is nothing to brute-force.
    return hashlib.sha256(key.encode()).hexdigest()


@dataclass(frozen=True)
class CreatedUser:
    user: UserRecord
    api_key: str


class Services:
    def __init__(
        self,
        db: Database,
        settings: Settings,
        registry: Registry,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self.db = db
        self.settings = settings
        self.registry = registry
        self.clock = clock
        # Status reads on the event loop (the API's hot path); opened on first use.
        self.reads = FastReads(db, registry.summary_keys())

    # -- users and projects ---------------------------------------------------------------

    def create_user(self, name: str, *, rate_limit: str | None = None) -> CreatedUser:
        if not name.strip():
            raise ValueError("name: must not be empty")
        key = API_KEY_PREFIX + secrets.token_urlsafe(32)
        with self.db.write() as conn:
            user = accounts.create_user(
                conn,
                name=name,
                api_key_hash=hash_api_key(key),
                rate_limit=rate_limit,
                now=self.clock(),
            )
        return CreatedUser(user=user, api_key=key)

    def authenticate(self, api_key: str) -> UserRecord | None:
        with self.db.read() as conn:
            return accounts.user_by_key_hash(conn, hash_api_key(api_key))

    def user(self, user_id: int) -> UserRecord:
        with self.db.read() as conn:
            found = accounts.user_by_id(conn, user_id)
        if found is None:
            raise NotFound(f"user {user_id}")
        return found

    def set_quotas(self, user: UserRecord, quotas: dict[str, int]) -> UserRecord:
        """Per-user daily URL quotas: ``{"submit_daily": n, "check_daily": n}``."""
        allowed = {"submit_daily", "check_daily"}
        for name, value in quotas.items():
            if name not in allowed:
                raise ValueError(f"quotas.{name}: unknown quota; known: {sorted(allowed)}")
            if not isinstance(value, int) or value < 0:
                raise ValueError(f"quotas.{name}: must be a whole number >= 0")
        with self.db.write() as conn:
            accounts.set_quotas(conn, user.id, {**(user.quotas or {}), **quotas})
        return self.user(user.id)

    def create_project(self, user: UserRecord, name: str) -> ProjectRecord:
        try:
            with self.db.write() as conn:
                return accounts.create_project(conn, user_id=user.id, name=name, now=self.clock())
        except IntegrityError:  # UNIQUE (user_id, name), also when two requests race
            raise Conflict(f"you already have a project named {name!r}", "name_taken") from None

    def project(self, user: UserRecord, project_id: int) -> ProjectRecord:
        with self.db.read() as conn:
            found = accounts.project(conn, project_id)
        if found is None or found.user_id != user.id:
            raise NotFound(f"project {project_id}")
        return found

    def projects(self, user: UserRecord) -> list[ProjectRecord]:
        with self.db.read() as conn:
            return accounts.projects_of(conn, user.id)

    def delete_project(self, user: UserRecord, project_id: int) -> None:
        """Delete a project with its jobs and schedules. The default project, which holds
        the jobs started without one (the v1 indexing API's), cannot be deleted."""
        if self.project(user, project_id).is_default:
            raise Conflict(
                f"project {project_id} is your default project: it holds the jobs of the "
                "indexing API (/api/v1) and cannot be deleted",
                "default_project",
            )
        with self.db.write() as conn:
            accounts.delete_project(conn, project_id)

    # -- jobs -----------------------------------------------------------------------------

    def create_job(
        self,
        user: UserRecord,
        kind: str,
        params: dict[str, Any],
        *,
        project_id: int | None = None,
        title: str | None = None,
        delay_seconds: float = 0.0,
        run_at: datetime | None = None,
        priority: int = 0,
        parent_id: int | None = None,
        idempotency_key: str | None = None,
    ) -> tuple[JobRecord, bool]:
        """Validate and store a job. Returns ``(job, created)``; ``created`` is False when
        the idempotency key named an existing job, which is returned unchanged.

        Raises ``UnknownKind`` or ``InvalidParams`` before anything is stored.
        """
        model, items = self.registry.validate(kind, params)
        project = project_id if project_id is not None else user.default_project_id
        if project_id is not None:
            self.project(user, project_id)
        now = self.clock()
        new = NewJob(
            project_id=project,
            kind=kind,
            params=model.model_dump(mode="json"),
            run_at=run_at or now + timedelta(seconds=delay_seconds),
            items=items,
            priority=priority,
            title=title,
            parent_id=parent_id,
            idempotency_key=idempotency_key,
        )
        with self.db.write() as conn:
            job_id, created = job_sql.insert_job(self.db, conn, new, now)
            job = job_sql.get(conn, job_id)
        assert job is not None
        return job, created

    def job(self, user: UserRecord, job_id: int, *, summary: bool = False) -> JobRecord:
        """A job of the user's. ``summary`` leaves out large params (URL lists), keeping
        only the keys kinds declare in ``summary_params``: what status answers need."""
        keys = self.registry.summary_keys() if summary else None
        with self.db.read() as conn:
            job = job_sql.get(conn, job_id, param_keys=keys, user_id=user.id)
        if job is None:
            raise NotFound(f"job {job_id}")
        return job

    async def job_summary(self, user: UserRecord, job_id: int) -> JobRecord:
        """``job(user, job_id, summary=True)`` for async callers, read on the event loop."""
        job = await self.reads.job(job_id, user.id)
        if job is None:
            raise NotFound(f"job {job_id}")
        return job

    def jobs(
        self,
        user: UserRecord,
        *,
        project_id: int | None = None,
        kind: str | None = None,
        states: Sequence[str] | None = None,
        before_id: int | None = None,
        limit: int = 50,
        ids: Sequence[int] | None = None,
        updated_since: datetime | None = None,
        summary: bool = False,
    ) -> list[JobRecord]:
        if project_id is not None:
            project_ids = [self.project(user, project_id).id]
        else:
            project_ids = [p.id for p in self.projects(user)]
        with self.db.read() as conn:
            return job_sql.list_for_projects(
                conn,
                project_ids,
                kind=kind,
                states=states,
                before_id=before_id,
                limit=limit,
                ids=ids,
                updated_since=updated_since,
                param_keys=self.registry.summary_keys() if summary else None,
            )

    def items(
        self, user: UserRecord, job_id: int, *, after_seq: int = -1, limit: int = 500
    ) -> list[ItemRecord]:
        self.job(user, job_id, summary=True)
        with self.db.read() as conn:
            return job_sql.items_page(conn, job_id, after_seq=after_seq, limit=limit)

    def cancel_job(self, user: UserRecord, job_id: int) -> JobRecord:
        """End an open job as ``failed`` with code ``cancelled``; a final job is returned as is."""
        self.job(user, job_id)
        now = self.clock()
        with self.db.write() as conn:
            if job_sql.cancel(conn, job_id, now, "cancelled by the user"):
                job_sql.cancel_children(conn, job_id, now, f"parent job {job_id} was cancelled")
            job = job_sql.get(conn, job_id)
        assert job is not None
        return job

    def state_counts(self) -> dict[str, int]:
        with self.db.read() as conn:
            return job_sql.count_by_state(conn)

    # -- schedules ------------------------------------------------------------------------

    def create_schedule(
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
        if kind in QUOTA_KINDS:
            raise ValueError(
                f"type: {kind} jobs count against a daily URL quota, which a schedule cannot "
                "charge; start them one at a time instead (POST /v1/projects/{id}/jobs or the "
                "v1 API)"
            )
        model, _items = self.registry.validate(kind, params)
        interval = _interval(every_days, every_seconds, cron, self.settings.day_seconds)
        if cron is not None:
            _check_cron(cron)
        project = self.project(user, project_id) if project_id else None
        now = self.clock()
        start = start_at or now
        try:
            tick = first_tick(interval_seconds=interval, cron=cron, start_at=start)
        except (ValueError, OverflowError) as exc:  # e.g. "0 0 30 2 *": valid, never due
            raise ValueError(f"{'cron' if cron else 'start_at'}: no next run ({exc})") from None
        try:
            with self.db.write() as conn:
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
        except IntegrityError:  # UNIQUE (project_id, name)
            message = f"this project already has a schedule named {name!r}"
            raise Conflict(message, "name_taken") from None

    def schedules(self, user: UserRecord, project_id: int) -> list[ScheduleRecord]:
        """The schedules of one of the user's projects, oldest first."""
        self.project(user, project_id)
        with self.db.read() as conn:
            return schedule_sql.list_for_project(conn, project_id)

    def schedule(self, user: UserRecord, project_id: int, schedule_id: int) -> ScheduleRecord:
        self.project(user, project_id)
        with self.db.read() as conn:
            found = schedule_sql.get(conn, schedule_id)
        if found is None or found.project_id != project_id:
            raise NotFound(f"schedule {schedule_id}")
        return found

    def delete_schedule(self, user: UserRecord, project_id: int, schedule_id: int) -> None:
        """Stop a schedule; the jobs it already started stay (their schedule_id becomes null)."""
        self.schedule(user, project_id, schedule_id)
        with self.db.write() as conn:
            schedule_sql.delete_one(conn, schedule_id)


def _interval(
    every_days: float | None, every_seconds: float | None, cron: str | None, day_seconds: float
) -> float | None:
    given = [v is not None for v in (every_days, every_seconds, cron)]
    if sum(given) != 1:
        raise ValueError("schedule: give exactly one of every_days, every_seconds or cron")
    if every_days is not None:
        if every_days <= 0:
            raise ValueError("every_days: must be greater than 0")
        return every_days * day_seconds
    if every_seconds is not None:
        if every_seconds <= 0:
            raise ValueError("every_seconds: must be greater than 0")
        return every_seconds
    return None


def _check_cron(expression: str) -> None:
    from croniter import croniter

    if not croniter.is_valid(expression):
        raise ValueError(f"cron: {expression!r} is not a valid cron expression")
