"""Use cases: create, read and cancel jobs; users, projects and schedules. No HTTP, no SQL."""

from typing import TYPE_CHECKING, Any

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

if TYPE_CHECKING:
    from seojobs.services.core import Services


def __getattr__(name: str) -> Any:
    """``Services`` (every part, and through them the store's modules) is loaded when first
    named: ``seojobs users`` needs the accounts part alone (``seojobs.services.accounts``),
    and importing it imports this package first."""
    if name == "Services":
        from seojobs.services.core import Services

        return Services
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
