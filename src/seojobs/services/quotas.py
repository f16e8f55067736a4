"""Quota periods and use: how much of each quota a user has, has used, and when it resets."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
from typing import Any

from seojobs.engine.quotas import Period, Quota
from seojobs.records import UserRecord
from seojobs.timefmt import rfc3339


@dataclass(frozen=True)
class QuotaUse:
    name: str
    period: Period
    limit: int
    used: int
    resets_at: datetime

    @property
    def remaining(self) -> int:
        return max(0, self.limit - self.used)

    def as_dict(self) -> dict[str, Any]:
        return {
            "limit": self.limit,
            "used": self.used,
            "remaining": self.remaining,
            "resets_at": rfc3339(self.resets_at),
        }


def day_start(now: datetime) -> datetime:
    return datetime.combine(now.astimezone(UTC).date(), time(0), tzinfo=UTC)


def period_bounds(period: Period, now: datetime) -> tuple[datetime, datetime]:
    """The UTC day or calendar month ``now`` falls in: ``(start, reset)``."""
    start = day_start(now)
    if period == "day":
        return start, start + timedelta(days=1)
    month = start.replace(day=1)
    following = (month + timedelta(days=32)).replace(day=1)
    return month, following


def limit_of(quota: Quota, user: UserRecord, settings: Any) -> int:
    """The user's own limit if one was set, else the deployment's."""
    value = (user.quotas or {}).get(quota.override_key)
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return quota.limit(settings)
