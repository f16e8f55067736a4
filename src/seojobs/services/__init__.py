"""Use cases: create, read and cancel jobs; users, projects and schedules. No HTTP, no SQL."""

from seojobs.services.core import Services
from seojobs.services.errors import (
    Conflict,
    FieldError,
    Invalid,
    JobFinished,
    NotFound,
    QuotaExceeded,
    ServiceError,
    Unavailable,
)

__all__ = [
    "Conflict",
    "FieldError",
    "Invalid",
    "JobFinished",
    "NotFound",
    "QuotaExceeded",
    "ServiceError",
    "Services",
    "Unavailable",
]
