"""Seed 001's job body (``GET /v1/jobs/{id}``'s ``data``), which is also the ``data`` of a
job's webhook events (issue 27): one rendering for the API and the webhook dispatcher."""

from __future__ import annotations

from typing import Any

from seojobs.records import JobRecord
from seojobs.timefmt import rfc3339_or_none


def job_body(job: JobRecord) -> dict[str, Any]:
    """Seed 001's job: type, status, timestamps and any error. Never the params (a job's URL
    list can be 10,000 long); its title and counters say what it is."""
    return {
        "id": job.id,
        "project_id": job.project_id,
        "type": job.kind,
        "status": job.state,
        "title": job.title,
        "created_at": rfc3339_or_none(job.created_at),
        "run_at": rfc3339_or_none(job.run_at),
        "started_at": rfc3339_or_none(job.started_at),
        "updated_at": rfc3339_or_none(job.updated_at),
        "completed_at": rfc3339_or_none(job.completed_at),
        "progress_percent": job.progress_percent,
        "items_total": job.items_total,
        "items_done": job.items_done,
        "items_failed": job.items_failed,
        "counters": job.counters,
        "error": job.error,  # as v1 renders it
        "result": job.result,
        "schedule_id": job.schedule_id,
    }
