"""Plain records of webhooks (issue 27): what the store returns and every layer reads."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from seojobs.timefmt import rfc3339

# The events jobs make. The change events (rank.changed, backlink.lost, ...) are declared by
# the kinds beside their reads (seojobs.reads.ChangeEvent; Registry.change_events()).
PROGRESS = "job.progress"
JOB_EVENTS = ("job.completed", "job.failed", "scheduled_check.completed", PROGRESS)
EVENT_TYPES = JOB_EVENTS
ALL_EVENTS = "*"


class ProgressFilters(BaseModel):
    """An endpoint's conditions on ``job.progress``: how often it is told (per job)."""

    model_config = ConfigDict(extra="forbid")

    every_seconds: Annotated[int, Field(ge=5, le=86400, strict=True)] = Field(
        default=60, description="At most one job.progress per job this often (5 s at least)."
    )


# The job events that take conditions (the change events' are declared with them).
JOB_FILTERS: dict[str, type[BaseModel]] = {PROGRESS: ProgressFilters}


def message(event_type: str, at: datetime, data: Any) -> tuple[str, str]:
    """A new message: its ``webhook-id`` and its body (``type``, ``timestamp``, ``data``), fixed
    before its first attempt (every retry sends the same id and bytes)."""
    event = {"type": event_type, "timestamp": rfc3339(at), "data": data}
    # 128 random bits, as uuid4's 122, in a fifth of its CPU (a claim makes a batch of them).
    msg_id = "msg_" + os.urandom(16).hex()
    return msg_id, json.dumps(event, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True)
class EndpointRecord:
    id: int
    user_id: int
    project_id: int | None
    job_id: int | None
    url: str
    events: str  # "*" or ",a,b," (see seojobs.store.tables.webhook_endpoints)
    filters: dict[str, Any] | None
    description: str | None
    enabled: bool
    disabled_reason: str | None
    secret: str
    previous_secret: str | None
    previous_secret_until: datetime | None
    failing_since: datetime | None
    created_at: datetime
    updated_at: datetime

    @property
    def event_list(self) -> list[str] | str:
        if self.events == ALL_EVENTS:
            return ALL_EVENTS
        return [e for e in self.events.split(",") if e]

    def hears(self, event_type: str) -> bool:
        return self.events == ALL_EVENTS or f",{event_type}," in self.events

    def signing_secrets(self, now: datetime) -> list[str]:
        """The secrets that sign now: the current one, and the previous one while it overlaps."""
        until = self.previous_secret_until
        if self.previous_secret and until is not None and until > now:
            return [self.secret, self.previous_secret]
        return [self.secret]


def stored_events(events: list[str] | str) -> str:
    if events == ALL_EVENTS:
        return ALL_EVENTS
    return "," + ",".join(sorted(set(events))) + ","


@dataclass(frozen=True)
class AttemptRecord:
    id: int
    delivery_id: int
    attempted_at: datetime
    status_code: int | None
    latency_ms: float
    response_head: str | None
    error: str | None


@dataclass(frozen=True)
class DeliveryRecord:
    id: int
    endpoint_id: int
    event_type: str
    job_id: int | None
    msg_id: str | None
    payload: str | None
    state: str  # pending | delivered | failed
    attempts: int
    next_attempt_at: datetime
    locked_until: datetime | None
    last_error: str | None
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True)
class DueDelivery:
    """A delivery a dispatcher claimed, with the endpoint it goes to."""

    delivery: DeliveryRecord
    endpoint: EndpointRecord


@dataclass(frozen=True)
class AttemptOutcome:
    """What one attempt got: an HTTP status (and the answer's first bytes) or an error."""

    status_code: int | None
    latency_ms: float
    response_head: str | None
    error: str | None

    @property
    def succeeded(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300
