"""Quotas: per-user usage limits a kind declares, with their default limits.

A kind declares each quota it charges (``Kind.quotas``) and what a job costs against them
(``Kind.cost``). The default limit lives in that declaration; a deployment overrides it with
``SEOJOBS_QUOTA_<KEY>`` (``SEOJOBS_QUOTA_SUBMIT_DAILY``, ``SEOJOBS_QUOTA_RANK_KEYWORDS_MONTHLY``:
the settings' ``quota_limits``, which takes any quota a kind declares, a plug-in's too), and an
operator overrides it per user (``services.quotas.set_limits``, by ``override_key``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

Period = Literal["day", "month"]
ENV_PREFIX = "SEOJOBS_QUOTA_"


@dataclass(frozen=True)
class Quota:
    """A per-user usage limit that kinds charge when a job is created; resets each period
    (UTC day or calendar month). ``default``: the limit unless the deployment sets
    ``SEOJOBS_QUOTA_<limit_key>`` (a number, or ``default(settings)`` for a limit derived from
    other settings); a user's override is stored under ``override_key`` (``submit_daily``)."""

    name: str
    default: int | Callable[[Any], int]
    period: Period = "day"
    description: str = ""
    # The deployment's setting: ``SEOJOBS_QUOTA_`` + this, upper-cased; by default
    # ``<name>_daily`` or ``<name>_monthly``.
    key: str | None = None

    @property
    def adverb(self) -> str:
        return "daily" if self.period == "day" else "monthly"

    @property
    def override_key(self) -> str:
        return f"{self.name}_{self.adverb}"

    @property
    def limit_key(self) -> str:
        return self.key or self.override_key

    @property
    def env(self) -> str:
        """The environment variable that sets the deployment's limit."""
        return ENV_PREFIX + self.limit_key.upper()

    @property
    def label(self) -> str:
        return f"{self.adverb} {self.name} quota"

    def limit(self, settings: Any) -> int:
        """The deployment's limit: its setting if it has one, else the declared default."""
        configured: Mapping[str, int] = getattr(settings, "quota_limits", None) or {}
        if self.limit_key in configured:
            return int(configured[self.limit_key])
        return int(self.default(settings) if callable(self.default) else self.default)

    @classmethod
    def day_and_month(
        cls, name: str, what: str, *, daily: int, monthly: int
    ) -> tuple[Quota, Quota]:
        """A daily quota ``name`` and a monthly one ``name_month`` (a quota is known by its
        name, so the month's needs one of its own), limited to ``daily`` and ``monthly`` unless
        ``SEOJOBS_QUOTA_<NAME>_DAILY`` / ``_MONTHLY`` say otherwise; ``what`` is what one unit
        is."""
        day = cls(name, daily, description=f"{what} per UTC day.")
        month = cls(
            f"{name}_month",
            monthly,
            period="month",
            description=f"{what} per calendar month.",
            key=f"{name}_monthly",
        )
        return day, month
