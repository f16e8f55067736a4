"""The seojobs client: talks HTTP only, installable without the server extras.

from seojobs.client import Client
with Client("http://127.0.0.1:8000", api_key) as client:
    job = client.submit(["https://example.com/"], engine="bing")
    done = client.wait("index_submit", job.job_id)

    project = client.projects.create("example.com")      # jobs of any type, in a project
    started = client.jobs.start(project.id, "index_check", {"urls": ["https://example.com/"]})
    finished = client.jobs.wait(started, timeout=3600)

The names below are imported on first use: a process that needs only the synchronous client
(each ``seojobs`` command) does not import asyncio and the async client.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from seojobs.client.aio import AsyncClient
    from seojobs.client.errors import (
        APIError,
        AuthenticationError,
        ConflictError,
        InvalidRequestError,
        NotFoundError,
        RateLimitedError,
        SeojobsError,
        ServerError,
        TransportError,
        WaitTimeout,
    )
    from seojobs.client.models import (
        CheckJob,
        Job,
        JobItem,
        JobType,
        Project,
        ProjectJob,
        ReportRow,
        SubmitJob,
        Usage,
        V2Task,
    )
    from seojobs.client.policy import PollPolicy, RetryPolicy
    from seojobs.client.scheduler import Scheduler
    from seojobs.client.sync import Client

_WHERE = {
    "AsyncClient": "aio",
    **dict.fromkeys(
        (
            "APIError",
            "AuthenticationError",
            "ConflictError",
            "InvalidRequestError",
            "NotFoundError",
            "RateLimitedError",
            "SeojobsError",
            "ServerError",
            "TransportError",
            "WaitTimeout",
        ),
        "errors",
    ),
    **dict.fromkeys(
        (
            "CheckJob",
            "Job",
            "JobItem",
            "JobType",
            "Project",
            "ProjectJob",
            "ReportRow",
            "SubmitJob",
            "Usage",
            "V2Task",
        ),
        "models",
    ),
    "PollPolicy": "policy",
    "RetryPolicy": "policy",
    "Scheduler": "scheduler",
    "Client": "sync",
}

__all__ = [
    "APIError",
    "AsyncClient",
    "AuthenticationError",
    "CheckJob",
    "Client",
    "ConflictError",
    "InvalidRequestError",
    "Job",
    "JobItem",
    "JobType",
    "NotFoundError",
    "PollPolicy",
    "Project",
    "ProjectJob",
    "RateLimitedError",
    "ReportRow",
    "RetryPolicy",
    "Scheduler",
    "SeojobsError",
    "ServerError",
    "SubmitJob",
    "TransportError",
    "Usage",
    "V2Task",
    "WaitTimeout",
]
assert sorted(__all__) == sorted(_WHERE)


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # once: later look-ups find it without this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_WHERE})
