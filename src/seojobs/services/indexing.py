"""Index submission and index checks (seed 000): v1 status bodies and follow-up checks."""

from __future__ import annotations

from typing import Any

from seojobs.records import JobRecord
from seojobs.services.core import Services
from seojobs.services.errors import NotFound
from seojobs.timefmt import rfc3339, rfc3339_or_none

SUBMIT = "index_submit"
CHECK = "index_check"


def follow_ups(services: Services, jobs: list[JobRecord]) -> dict[int, JobRecord]:
    """The follow-up check of each submission that asked for one, in one query."""
    wanted = [j for j in jobs if j.kind == SUBMIT and j.params.get("checker")]
    found = services.jobs.children(wanted, kind=CHECK)
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
        "created_at": rfc3339(job.created_at),
        "completed_at": rfc3339_or_none(job.completed_at),
        "error": job.error,
        "duplicates_removed": job.params.get("duplicates_removed", 0),
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
        "scheduled_check_at": rfc3339(child.run_at) if child else None,
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
