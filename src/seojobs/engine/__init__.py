"""The job engine: claim, lease, heartbeat, rescue, schedule, prune, wake-up."""

from seojobs.engine.context import Finding, Interrupted, ItemResult, JobContext, JobFailed
from seojobs.engine.hints import PollHint
from seojobs.engine.registry import (
    FollowUp,
    InvalidParams,
    Kind,
    Quota,
    Registry,
    ReportColumn,
    UnknownKind,
)
from seojobs.engine.views import DashboardView

__all__ = [
    "DashboardView",
    "Finding",
    "FollowUp",
    "Interrupted",
    "InvalidParams",
    "ItemResult",
    "JobContext",
    "JobFailed",
    "Kind",
    "PollHint",
    "Quota",
    "Registry",
    "ReportColumn",
    "UnknownKind",
]
