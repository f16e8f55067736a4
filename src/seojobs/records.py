"""Plain records the store hands to the layers above (no SQLAlchemy types leak out)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

# A job's states, the public ones: the API, the dashboard and /metrics name the same four.
JOB_STATES = ("pending", "processing", "completed", "failed")


@dataclass(frozen=True, slots=True)
class JobRecord:
    id: int
    project_id: int
    kind: str
    params: dict[str, Any]
    state: str
    priority: int
    title: str | None
    run_at: datetime
    created_at: datetime
    started_at: datetime | None
    updated_at: datetime
    completed_at: datetime | None
    attempt: int
    worker_id: str | None
    lease_expires_at: datetime | None
    rescue_count: int
    error_code: str | None
    error_message: str | None
    items_total: int
    items_done: int
    items_failed: int
    counters: dict[str, int]
    result: dict[str, Any] | None
    parent_id: int | None
    idempotency_key: str | None
    schedule_id: int | None
    schedule_tick: datetime | None
    request_id: str | None = None

    @property
    def is_final(self) -> bool:
        return self.state in ("completed", "failed")

    @property
    def progress_percent(self) -> int:
        if self.state == "completed":
            return 100
        if not self.items_total:
            return 0
        return min(100, (self.items_done * 100) // self.items_total)

    @property
    def error(self) -> dict[str, str | None] | None:
        """``{"code", "message"}`` as every API renders it; None unless the job has a code."""
        if not self.error_code:
            return None
        return {"code": self.error_code, "message": self.error_message}


@dataclass(frozen=True, slots=True)
class ItemRecord:
    id: int
    job_id: int
    seq: int
    input: str
    key: str | None
    data: Any
    state: str
    outcome: str | None
    result: dict[str, Any] | None
    error_code: str | None
    error_message: str | None
    finished_at: datetime | None


@dataclass(frozen=True, slots=True)
class NewItem:
    """An item to store: ``input`` as text, ``key`` the sha256 of its dedupe key, ``data`` a
    structured item's value."""

    input: str
    key: str
    data: Any = None

    @classmethod
    def of(cls, text: str, data: Any = None, key: str | None = None) -> NewItem:
        return cls(text, hashlib.sha256((text if key is None else key).encode()).hexdigest(), data)


@dataclass(frozen=True, slots=True)
class NewFinding:
    code: str
    severity: str
    data: dict[str, Any] | None = None
    item_id: int | None = None


@dataclass(frozen=True, slots=True)
class FindingRecord:
    id: int
    job_id: int
    item_id: int | None
    code: str
    severity: str
    data: dict[str, Any] | None
    created_at: datetime


@dataclass(frozen=True, slots=True)
class CollectionRecord:
    id: int
    project_id: int
    kind: str
    subject: str
    job_id: int | None
    data: Any
    committed: bool
    collected_at: datetime


@dataclass(frozen=True, slots=True)
class ItemOutcome:
    """What a worker writes for one finished item, with what the item revealed."""

    item_id: int
    failed: bool
    outcome: str | None = None
    result: dict[str, Any] | None = None
    error_code: str | None = None
    error_message: str | None = None
    findings: tuple[NewFinding, ...] = ()


@dataclass(frozen=True, slots=True)
class NewJob:
    project_id: int
    kind: str
    params: dict[str, Any]
    run_at: datetime
    items: Sequence[str | NewItem] = field(default_factory=list)
    priority: int = 0
    title: str | None = None
    parent_id: int | None = None
    idempotency_key: str | None = None
    schedule_id: int | None = None
    schedule_tick: datetime | None = None
    # (code, message): store the job already failed, e.g. refused for quota, so the user sees
    # the refusal where they look for results.
    failure: tuple[str, str] | None = None
    # The X-Request-ID the job was made under (the worker's log lines for it carry it).
    request_id: str | None = None


@dataclass(frozen=True, slots=True)
class UserRecord:
    id: int
    name: str
    rate_limit: str | None
    quotas: dict[str, Any] | None
    created_at: datetime
    default_project_id: int
    disabled_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class ProjectRecord:
    id: int
    user_id: int
    name: str
    is_default: bool
    created_at: datetime
    domain: str | None = None
    brand_names: tuple[str, ...] = ()
    competitors: tuple[Mapping[str, Any], ...] = ()  # {"domain": str, "names": [str]}


@dataclass(frozen=True, slots=True)
class ProjectDefaults:
    """What a job takes from the project it is made for (``Kind.project_params``): the
    project as named in the request, with what it tracks (None: the user's default project,
    not named) and the
    settings the kind keeps for that project (``Kind.project_settings``; ``{}`` when it keeps
    none, or the project stored none)."""

    record: TrackedProject | None = None  # with what it tracks (issue 29.1)
    settings: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ScheduleRecord:
    id: int
    project_id: int
    name: str
    kind: str
    params: dict[str, Any]
    interval_seconds: float | None
    cron: str | None
    start_at: datetime
    next_tick_at: datetime
    enabled: bool
    created_at: datetime
    collection: bool = False  # a project's collection of its kind (issue 29.1)


@dataclass(frozen=True, slots=True)
class TrackedKeyword:
    """A keyword a project tracks, in its market (issue 29.1)."""

    id: int
    keyword: str
    location: int | str  # a location code, or a name
    language: str
    device: str
    created_at: datetime

    def market(self) -> dict[str, Any]:
        return {
            "keyword": self.keyword,
            "location": self.location,
            "language": self.language,
            "device": self.device,
        }


@dataclass(frozen=True, slots=True)
class TrackedPrompt:
    id: int
    prompt: str
    created_at: datetime


@dataclass(frozen=True, slots=True)
class TrackedProject:
    """A project with everything it tracks: what ``Kind.project_params`` and a running job
    (``JobContext.project``) read a project's defaults from."""

    id: int
    domain: str | None
    brand_names: tuple[str, ...]
    competitors: tuple[Mapping[str, Any], ...]
    keywords: tuple[TrackedKeyword, ...] = ()
    prompts: tuple[TrackedPrompt, ...] = ()

    @classmethod
    def of(
        cls,
        project: ProjectRecord,
        keywords: Sequence[TrackedKeyword] = (),
        prompts: Sequence[TrackedPrompt] = (),
    ) -> TrackedProject:
        return cls(
            project.id,
            project.domain,
            project.brand_names,
            project.competitors,
            tuple(keywords),
            tuple(prompts),
        )


@dataclass(frozen=True, slots=True)
class ChangeCount:
    """How one check's findings changed between two audits, counted by (code, url)."""

    code: str
    severity: str
    new: int
    fixed: int
    unchanged: int


@dataclass(frozen=True, slots=True)
class ChangedFinding:
    id: int  # the first finding of the pair (the cursor)
    code: str
    severity: str
    url: str | None


@dataclass(frozen=True, slots=True)
class QueueSnapshot:
    at: datetime  # when it was read: the ages below are to this time
    jobs: list[tuple[str, str, int]]  # (kind, state, jobs)
    oldest_due: datetime | None  # run_at of the oldest pending job that is due
    expired_leases: int  # processing jobs whose lease ran out (their worker is gone or hung)
    workers: int  # distinct workers holding a processing job
    schedules_enabled: int
