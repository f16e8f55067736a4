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
from seojobs.engine.views import DashboardView, JobView
from seojobs.reads import FieldMatch, Filter, Key, Read, RowMatch, SubjectMatch

__all__ = [
    "DashboardView",
    "FieldMatch",
    "Filter",
    "Finding",
    "FollowUp",
    "Interrupted",
    "InvalidParams",
    "ItemResult",
    "JobContext",
    "JobFailed",
    "JobView",
    "Key",
    "Kind",
    "PollHint",
    "Quota",
    "Read",
    "Registry",
    "ReportColumn",
    "RowMatch",
    "SubjectMatch",
    "UnknownKind",
]
