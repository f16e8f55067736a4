"""The seojobs client: talks HTTP only, installable without the server extras.

from seojobs.client import Client
with Client("http://127.0.0.1:8000", api_key) as client:
    job = client.submit(["https://example.com/"], engine="bing")
    done = client.wait("index_submit", job.job_id)

    project = client.projects.create("example.com")      # jobs of any type, in a project
    started = client.jobs.start(project.id, "index_check", {"urls": ["https://example.com/"]})
    finished = client.jobs.wait(started, timeout=3600)
"""

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
