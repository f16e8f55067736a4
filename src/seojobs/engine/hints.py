"""A kind's poll hint: how often a client should read one of its jobs, and for how long.

Served in ``GET /v1/job-types`` (``poll_hint``), where the SDK and the CLI read it; a kind that
declares none gets seed 000's schedule (first read after 15 s, x1.5 per unfinished read up to
300 s, 24 h overall). Seed 001's table ("match the interval to the work") gives one interval per
kind: such a kind declares that interval as both ``first`` and ``ceiling``.
"""

from __future__ import annotations

from dataclasses import dataclass

HOUR = 3600.0


@dataclass(frozen=True)
class PollHint:
    """``first``: seconds before the first read; each unfinished read grows the interval up
    to ``ceiling``; ``deadline``: seconds after which a waiting client gives up."""

    first: float = 15.0
    ceiling: float = 300.0
    deadline: float = 24 * HOUR

    def __post_init__(self) -> None:
        if not 0 < self.first <= self.ceiling:
            raise ValueError("poll hint: need 0 < first <= ceiling")
        if self.deadline <= 0:
            raise ValueError("poll hint: deadline must be positive")

    @classmethod
    def every(cls, seconds: float, deadline: float = HOUR) -> PollHint:
        """One fixed interval (seed 001's table), an hour overall unless said otherwise."""
        return cls(seconds, seconds, deadline)

    def as_dict(self) -> dict[str, float]:
        """As ``/v1/job-types`` serves it."""
        return {
            "first_seconds": self.first,
            "ceiling_seconds": self.ceiling,
            "deadline_seconds": self.deadline,
        }


# Seed 000's schedule: what a kind without a hint of its own gets.
DEFAULT_POLL_HINT = PollHint()
