"""The job engine: claim, lease, heartbeat, rescue, schedule, prune, wake-up."""

from seojobs.engine.context import Interrupted, ItemResult, JobContext, JobFailed
from seojobs.engine.registry import InvalidParams, Kind, Registry, UnknownKind

__all__ = [
    "Interrupted",
    "InvalidParams",
    "ItemResult",
    "JobContext",
    "JobFailed",
    "Kind",
    "Registry",
    "UnknownKind",
]
