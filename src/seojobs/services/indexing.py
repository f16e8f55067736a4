"""Index submission and index checks (seed 000): quotas, follow-up checks, v1 status bodies."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
from typing import Any

from seojobs.services.core import QUOTA_KINDS, NotFound, Services
from seojobs.store import jobs as job_sql
from seojobs.store import usage as usage_sql
from seojobs.store.records import JobRecord, NewJob, UserRecord

SUBMIT = "index_submit"
CHECK = "index_check"
QUOTA_NAMES = {SUBMIT: "submit", CHECK: "check"}
assert set(QUOTA_NAMES) == QUOTA_KINDS  # not schedulable (Services.create_schedule)


@dataclass(frozen=True)
class Quota:
    kind: str
    limit: int
    used: int
    resets_at: datetime

    @property
    def remaining(self) -> int:
        return max(0, self.limit - self.used)

    def as_dict(self) -> dict[str, Any]:
        return {
            "limit": self.limit,
            "used": self.used,
            "remaining": self.remaining,
            "resets_at": self.resets_at.isoformat(),
        }


def day_start(now: datetime) -> datetime:
    return datetime.combine(now.astimezone(UTC).date(), time(0), tzinfo=UTC)


def quota_limit(services: Services, user: UserRecord, kind: str) -> int:
    name = QUOTA_NAMES[kind]
    overrides = user.quotas or {}
    value = overrides.get(f"{name}_daily")
    if isinstance(value, int) and value >= 0:
        return value
    default: int = getattr(services.settings, f"quota_{name}_daily")
    return default


def usage(services: Services, user: UserRecord) -> dict[str, Quota]:
    now = services.clock()
    start = day_start(now)
    with services.db.read() as conn:
        return {
            QUOTA_NAMES[kind]: Quota(
                kind=kind,
                limit=quota_limit(services, user, kind),
                used=usage_sql.urls_used(conn, user.id, kind, start),
                resets_at=start + timedelta(days=1),
            )
            for kind in (SUBMIT, CHECK)
        }


def create(
    services: Services,
    user: UserRecord,
    kind: str,
    params: dict[str, Any],
    *,
    title: str | None = None,
    idempotency_key: str | None = None,
    project_id: int | None = None,
) -> tuple[JobRecord, bool]:
    """Create an index_submit or index_check job.

    Over the user's daily quota the job is stored already ``failed`` with code
    ``quota_exceeded`` and a message giving the reset time. An index_submit with ``checker``
    = N also stores its follow-up index_check, due N days (SEOJOBS_DAY_SECONDS) after the
    submission, in the same transaction: exactly one per submission, whatever runs later.
    """
    if kind not in QUOTA_NAMES:
        raise ValueError(f"kind: {kind!r} is not an indexing kind")
    model, items = services.registry.validate(kind, params)
    project = services.project(user, project_id).id if project_id else user.default_project_id
    stored = model.model_dump(mode="json")
    now = services.clock()
    limit = quota_limit(services, user, kind)
    with services.db.write() as conn:
        usage_sql.lock_user(services.db, conn, user.id)
        start = day_start(now)
        used = usage_sql.urls_used(conn, user.id, kind, start)
        failure = None
        if used + len(items) > limit:
            reset = (start + timedelta(days=1)).isoformat()
            failure = (
                "quota_exceeded",
                f"this job needs {len(items)} URLs of your daily {QUOTA_NAMES[kind]} quota "
                f"({used} of {limit} used today); the quota resets at {reset}",
            )
        new = NewJob(
            project_id=project,
            kind=kind,
            params=stored,
            run_at=now,
            items=items,
            title=title,
            idempotency_key=idempotency_key,
            failure=failure,
        )
        job_id, created = job_sql.insert_job(services.db, conn, new, now)
        checker = stored.get("checker")
        if created and failure is None and kind == SUBMIT and checker:
            follow_up = NewJob(
                project_id=project,
                kind=CHECK,
                params={"urls": items, "engine": stored["engine"]},
                run_at=now + timedelta(seconds=checker * services.settings.day_seconds),
                items=items,
                title=f"follow-up check of submission {job_id}",
                parent_id=job_id,
            )
            job_sql.insert_job(services.db, conn, follow_up, now)
        job = job_sql.get(conn, job_id)
    assert job is not None
    return job, created


def follow_ups(services: Services, jobs: list[JobRecord]) -> dict[int, JobRecord]:
    """The follow-up check of each submission that asked for one, in one query."""
    wanted = [j.id for j in jobs if j.kind == SUBMIT and j.params.get("checker")]
    if not wanted:
        return {}
    with services.db.read() as conn:
        found = job_sql.children(conn, wanted, kind=CHECK)
    return {child.parent_id: child for child in found if child.parent_id is not None}


def follow_up(services: Services, job: JobRecord) -> JobRecord | None:
    return follow_ups(services, [job]).get(job.id)


async def status_body(services: Services, job: JobRecord) -> dict[str, Any]:
    """A job's v1 status body, its follow-up check read on the event loop if it has one."""
    if job.kind != SUBMIT:
        return check_status(job)
    child = None
    if job.params.get("checker"):
        found = await services.reads.children(job.id, CHECK)
        child = found[-1] if found else None  # as follow_ups: the last one
    return submission_status(services, job, child)


def _percent(part: int, whole: int) -> int:
    return (part * 100) // whole if whole else 0


def _common(job: JobRecord) -> dict[str, Any]:
    return {
        "job_id": job.id,
        "status": job.state,
        "title": job.title,
        "total_urls": job.items_total,
        "failed_count": job.items_failed,
        "progress_percent": job.progress_percent,
        "created_at": job.created_at.isoformat(),
        "completed_at": job.completed_at.isoformat() if job.completed_at else None,
        "error": job.error,
    }


def submission_status(
    services: Services, job: JobRecord, child: JobRecord | bool | None = True
) -> dict[str, Any]:
    """The v1 index-submit status body (seed 000's field names).

    ``child`` is the follow-up check if the caller already has it (lists fetch them in one
    query); True means look it up.
    """
    if job.kind != SUBMIT:
        raise NotFound(f"job {job.id} is not an index submission")
    successful = job.counters.get("submitted", 0)
    body = _common(job) | {
        "submitted_urls": job.items_done,
        "successful_count": successful,
        "success_percent": _percent(successful, job.items_done),
    }
    checker = job.params.get("checker")
    if child is True:
        child = follow_up(services, job) if checker else None
    assert child is None or isinstance(child, JobRecord)
    body |= {
        "scheduled_check_days": checker,
        "scheduled_check_status": child.state if child else None,
        "scheduled_check_at": (child.run_at.isoformat() if child else None),
        # The run id appears once the check has started, as seed 000 describes.
        "scheduled_check_run_id": child.id if child and child.state != "pending" else None,
    }
    return body


def check_status(job: JobRecord) -> dict[str, Any]:
    """The v1 index-check status body."""
    if job.kind != CHECK:
        raise NotFound(f"job {job.id} is not an index check")
    return _common(job) | {
        "checked_urls": job.items_done,
        "indexed_count": job.counters.get("indexed", 0),
        "not_indexed_count": job.counters.get("not_indexed", 0),
    }
