"""Quotas (``services.quotas``): how much of each quota a user has, has used, and when it
resets; whether a job's cost fits; a user's own limits."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
from typing import Any

from seojobs.engine.quotas import Period, Quota
from seojobs.records import UserRecord
from seojobs.services.base import Part
from seojobs.services.errors import FieldError, Invalid, QuotaExceeded
from seojobs.store import accounts
from seojobs.store import usage as usage_sql
from seojobs.store.db import Connection
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


class Quotas(Part):
    def usage(self, user: UserRecord) -> dict[str, QuotaUse]:
        """Every quota some kind charges, as this user stands now."""
        now = self.clock()
        found = {}
        with self.db.read() as conn:
            for name, quota in self.registry.quotas().items():
                start, reset = period_bounds(quota.period, now)
                found[name] = QuotaUse(
                    name=name,
                    period=quota.period,
                    limit=limit_of(quota, user, self.settings),
                    used=usage_sql.used(conn, user.id, name, start),
                    resets_at=reset,
                )
        return found

    def over(
        self, conn: Connection, user: UserRecord, cost: Mapping[str, int], now: datetime
    ) -> tuple[str, str] | None:
        """Why a job of this cost is over one of the user's quotas (code, message), or None.
        In the creating transaction, which it locks per user: one decision at a time."""
        quotas = self.registry.quotas()
        usage_sql.lock_user(self.db, conn, user.id)
        for name, amount in sorted(cost.items()):
            quota = quotas.get(name)
            if quota is None:
                raise LookupError(f"a kind charges quota {name!r}, which no kind declares")
            start, reset = period_bounds(quota.period, now)
            used = usage_sql.used(conn, user.id, name, start)
            limit = limit_of(quota, user, self.settings)
            if used + amount > limit:
                return (
                    "quota_exceeded",
                    f"this job needs {amount} of your {quota.label} ({used} of {limit} used); "
                    f"the quota resets at {rfc3339(reset)}",
                )
        return None

    def fits(self, user: UserRecord, cost: Mapping[str, int]) -> None:
        """A schedule whose every job costs more than a whole quota (its follow-ups'
        cost included) would only ever store refused jobs: ``QuotaExceeded`` refuses the
        schedule instead."""
        quotas = self.registry.quotas()
        for name, amount in cost.items():
            limit = limit_of(quotas[name], user, self.settings)
            if amount > limit:
                raise QuotaExceeded(
                    name,
                    f"each job of this schedule needs {amount} of your {quotas[name].label}, "
                    f"which is {limit}",
                )

    def set_limits(self, user: UserRecord, quotas: dict[str, int]) -> UserRecord:
        """Per-user quota limits by override key: ``{"submit_daily": n, "check_daily": n}``."""
        allowed = sorted(q.override_key for q in self.registry.quotas().values())
        for name, value in quotas.items():
            if name not in allowed:
                raise Invalid([FieldError(("quotas", name), f"unknown quota; known: {allowed}")])
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise Invalid([FieldError(("quotas", name), "must be a whole number >= 0")])
        with self.db.write() as conn:
            accounts.set_quotas(conn, user.id, {**(user.quotas or {}), **quotas})
        return self.base.user(user.id)
