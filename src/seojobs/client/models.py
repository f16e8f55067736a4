"""Typed views of the server's answers. Unknown fields are kept, unknown statuses accepted."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict


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
