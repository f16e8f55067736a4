"""Typed views of the server's answers. Unknown fields are kept, unknown statuses accepted."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class _Model(BaseModel):
    model_config = ConfigDict(extra="allow")


class JobErrorInfo(_Model):
    code: str
    message: str | None = None


class Job(_Model):
    job_id: int
    status: str
    title: str | None = None
    total_urls: int = 0
    failed_count: int = 0
    progress_percent: int = 0
    created_at: datetime | None = None
    completed_at: datetime | None = None
    error: JobErrorInfo | None = None
    duplicates_removed: int | None = None

    kind: str = ""  # "index_submit" | "index_check" (set by the client, not the server)

    @property
    def is_terminal(self) -> bool:
        return self.status in ("completed", "failed")


class SubmitJob(Job):
    kind: str = "index_submit"
    submitted_urls: int = 0
    successful_count: int = 0
    success_percent: int = 0
    scheduled_check_days: int | None = None
    scheduled_check_status: str | None = None
    scheduled_check_at: datetime | None = None
    scheduled_check_run_id: int | None = None


class CheckJob(Job):
    kind: str = "index_check"
    checked_urls: int = 0
    indexed_count: int = 0
    not_indexed_count: int = 0


class ReportRow(_Model):
    url: str
    status: str
    provider: str | None = None
    error_code: str | None = None
    error_message: str | None = None
    finished_at: datetime | None = None
    detail: dict[str, Any] | None = None
    diagnostics: dict[str, Any] | None = None


class Quota(_Model):
    limit: int
    used: int
    remaining: int
    resets_at: datetime


class Usage(_Model):
    submit: Quota
    check: Quota


class V2Task(_Model):
    """SpeedyIndex v2 task item (status and list answers)."""

    id: str
    size: int = 0
    processed_count: int = 0
    indexed_count: int = 0
    title: str | None = None
    type: str | None = None
    is_completed: bool = False
    created_at: datetime | None = None


# -- the projects API (seed 001): ``{"data": ...}`` bodies -------------------------------------


class Project(_Model):
    id: int
    name: str
    is_default: bool = False  # the project of the indexing API's jobs; cannot be deleted
    created_at: datetime | None = None


class ProjectJob(_Model):
    """A job of any type, as ``/v1/jobs/{id}`` and a project's job list show it.

    ``status`` is pending, processing, completed or failed (an unknown one counts as not
    finished); a failed job carries ``error`` {code, message}. The server never echoes a job's
    ``params`` (an index job's URL list can be 10,000 long): ``params`` is what this client sent
    when it started the job, None on a job read back. ``retry_after`` is the server's
    Retry-After on the answer that started the job; a wait's first poll comes no sooner.

    ``job_id`` and ``kind`` name it the way the index jobs' model does, so the CLI and the
    Scheduler show and track both alike.
    """

    id: int
    type: str
    status: str
    project_id: int | None = None
    title: str | None = None
    params: dict[str, Any] | None = None
    created_at: datetime | None = None
    run_at: datetime | None = None
    started_at: datetime | None = None
    updated_at: datetime | None = None
    completed_at: datetime | None = None
    progress_percent: int = 0
    items_total: int = 0
    items_done: int = 0
    items_failed: int = 0
    counters: dict[str, int] = Field(default_factory=dict)
    error: JobErrorInfo | None = None
    result: Any = None
    schedule_id: int | None = None
    retry_after: float | None = Field(default=None, exclude=True)

    @property
    def job_id(self) -> int:
        return self.id

    @property
    def kind(self) -> str:
        return self.type

    @property
    def is_terminal(self) -> bool:
        return self.status in ("completed", "failed")


class PollHint(_Model):
    """How often to read a job of a type, and for how long (seconds): the type's own, as
    ``GET /v1/job-types`` serves it."""

    first_seconds: float = Field(gt=0)
    ceiling_seconds: float = Field(gt=0)
    deadline_seconds: float = Field(gt=0)


class JobType(_Model):
    """A job type the server runs (``GET /v1/job-types``): what ``type`` to start it with,
    and how often to read its jobs (``poll_hint``; None from a server older than hints)."""

    name: str
    description: str = ""
    params_schema: dict[str, Any] = Field(default_factory=dict)  # JSON Schema of ``params``
    poll_hint: PollHint | None = None


class JobItem(_Model):
    """One item of a job (``GET /v1/jobs/{id}/items``), in the job's order.

    ``status`` is the item's outcome (``indexed``, ``crawled``, ...), ``failed``, ``pending``,
    or ``not_run`` for an item of a job that ended before running it; ``input`` is a string
    (a URL) or a structured item.
    """

    seq: int
    input: Any = None
    status: str | None = None
    result: dict[str, Any] | None = None
    error: JobErrorInfo | None = None
    finished_at: datetime | None = None


AnyJob = Job | ProjectJob
