"""The request and response models of the projects API (``seojobs.api.projects``)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from seojobs.api.inputs import FORBID
from seojobs.api.text import Cron, Name, Title
from seojobs.kinds.urls import Url
from seojobs.schemarules import NULL, given
from seojobs.services.tracking import Competitor, Tracking
from seojobs.timefmt import DateTime

KindName = Annotated[str, StringConstraints(min_length=1, max_length=100)]


class ProjectIn(Tracking):
    """A new project: its name and what it tracks (``seojobs.services.tracking``)."""

    model_config = FORBID

    name: Name


class ProjectPatch(Tracking):
    model_config = FORBID

    name: Name | None = Field(default=None, description="A new name (unique per user).")


class ScheduleEnabledIn(BaseModel):
    model_config = FORBID

    enabled: bool = Field(description="false pauses the schedule; true resumes it.")


class Project(BaseModel):
    id: int
    name: str
    is_default: bool = Field(description="Holds the jobs of the indexing API; not deletable.")
    created_at: datetime
    domain: str | None = Field(description="The project's site; null when not set.")
    brand_names: list[str]
    competitors: list[Competitor]


class JobError(BaseModel):
    code: str
    message: str | None


class Job(BaseModel):
    id: int
    project_id: int
    type: str = Field(description="The job type (see GET /v1/job-types).")
    status: str = Field(description="pending | processing | completed | failed")
    title: str | None
    created_at: datetime
    run_at: datetime = Field(description="When the job is (or was) due to start.")
    started_at: datetime | None
    updated_at: datetime
    completed_at: datetime | None
    progress_percent: int
    items_total: int
    items_done: int
    items_failed: int
    counters: dict[str, int] = Field(description="Items per outcome, e.g. indexed.")
    error: JobError | None = Field(description="Why a failed job failed; null otherwise.")
    result: dict[str, Any] | None
    schedule_id: int | None = Field(description="The schedule that started the job, if any.")


class JobIn(BaseModel):
    model_config = FORBID

    type: KindName = Field(description="A job type from GET /v1/job-types.")
    params: dict[str, Any] = Field(default_factory=dict, description="As the type's schema.")
    title: Title | None = None
    webhook_url: Url | None = Field(
        default=None,
        description="Called (signed with your callback secret) when this job completes or fails.",
    )


class PollHint(BaseModel):
    first_seconds: float = Field(description="Read a new job first after this many seconds.")
    ceiling_seconds: float = Field(
        description="Each unfinished read grows the interval (x1.5) up to this many seconds."
    )
    deadline_seconds: float = Field(description="Give up waiting after this many seconds.")


class JobType(BaseModel):
    name: str = Field(description="The value of `type` when starting a job.")
    description: str
    params_schema: dict[str, Any] = Field(description="JSON Schema of the job's `params`.")
    poll_hint: PollHint = Field(
        description="How often to read one of its jobs and for how long (the SDK and CLI wait "
        "by it)."
    )


INTERVALS = ("every_days", "every_seconds", "cron")


def _only(field: str) -> dict[str, Any]:
    return given(field, **{other: NULL for other in INTERVALS if other != field})


class ScheduleIn(BaseModel):
    # Exactly one of the three, as projects._interval_fields checks; null counts as absent.
    model_config = ConfigDict(
        extra="forbid", json_schema_extra={"oneOf": [_only(f) for f in INTERVALS]}
    )

    name: Name
    type: KindName
    params: dict[str, Any] = Field(default_factory=dict)
    # Their bounds follow the deployment's settings: the services check them, and the served
    # document states them (seojobs.api.openapi).
    every_days: float | None = Field(
        default=None, description="Run every N days (of SEOJOBS_DAY_SECONDS)."
    )
    every_seconds: float | None = Field(default=None, description="Run every N seconds.")
    cron: Cron | None = Field(default=None, description="UTC cron expression.")
    start_at: DateTime | None = Field(
        default=None,
        description="First run (intervals) or not before (cron); default now. RFC 3339, from "
        "a day ago to ten years ahead.",
    )


class Schedule(BaseModel):
    id: int
    project_id: int
    name: str
    type: str
    params: dict[str, Any]
    every_seconds: float | None = Field(description="The interval, in seconds; or null.")
    cron: str | None
    start_at: datetime
    next_run_at: datetime
    enabled: bool
    created_at: datetime
    collection: bool = Field(
        description="The project's collection of its type (set with /collection)."
    )


class ProjectData(BaseModel):
    data: Project


class ProjectPage(BaseModel):
    data: list[Project]
    next_cursor: str | None


class JobData(BaseModel):
    data: Job


class JobPage(BaseModel):
    data: list[Job]
    next_cursor: str | None


class JobTypeList(BaseModel):
    data: list[JobType]
    next_cursor: str | None = Field(description="Always null: the list is complete.")


class ScheduleData(BaseModel):
    data: Schedule


class SchedulePage(BaseModel):
    data: list[Schedule]
    next_cursor: str | None
