"""How long to wait: pure arithmetic, no I/O, no clock.

Two separate policies, configured separately:

- ``PollPolicy``: how often to re-read a job that is not finished yet. A wait uses its job
  type's poll hint, as the server serves it in ``GET /v1/job-types`` (``from_hint``): the
  client keeps no table of its own, so a new job type (a plug-in's too) is polled as its
  kind declares. The fallback, where no hint is known (a server older than hints, a type it
  does not list, or ``/v1/job-types`` not answering), is the default ``PollPolicy()``: seed
  000's schedule, first poll after 15 s, x1.5 after each unfinished poll, x2 after a 429 and
  never sooner than its Retry-After, capped at 300 s, 24 h overall. Every wait on one job
  first asks the server to hold its reads until the job changes (``Prefer: wait=20``, up to
  10 times, one a second at most); the schedule takes over when the server does not honour
  them (no ``Preference-Applied``), after a 429 or a failed read, or after the tenth.
- ``RetryPolicy``: how to retry a call that failed (connection errors, 502-504, a lost answer
  to a POST): a few attempts with full-jitter back-off.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from seojobs.client.models import PollHint

TERMINAL = frozenset({"completed", "failed"})
KNOWN = frozenset({"pending", "processing", *TERMINAL})


@dataclass(frozen=True)
class PollPolicy:
    start: float = 15.0
    factor: float = 1.5
    rate_limit_factor: float = 2.0
    ceiling: float = 300.0
    deadline: float = 86_400.0
    jitter: float = 0.0  # 0.1 = ±10 %, spreads many clients apart (never below a Retry-After)
    long_poll: float = 0.0  # ask the server to hold each GET up to this long (Prefer: wait)
    # Before the schedule: up to ``first_long_polls`` reads held up to ``first_long_poll``
    # seconds each (Prefer: wait), one a second at most, while the server honours them: a job
    # that ends at once is so reported at once. 0 turns them off (then the schedule alone).
    first_long_poll: float = 20.0
    first_long_polls: int = 10

    def __post_init__(self) -> None:
        if self.start < 0 or self.ceiling < 0 or self.deadline < 0:
            raise ValueError("start, ceiling and deadline must not be negative")
        if self.factor < 1 or self.rate_limit_factor < 1:
            raise ValueError("factor and rate_limit_factor must be at least 1")
        if not 0 <= self.jitter < 1:
            raise ValueError("jitter: a fraction in [0, 1)")
        if self.first_long_poll < 0 or self.first_long_polls < 0:
            raise ValueError("first_long_poll and first_long_polls must not be negative")

    @classmethod
    def from_hint(cls, hint: PollHint | None, **overrides: Any) -> PollPolicy:
        """The policy of a job type's poll hint (``GET /v1/job-types``); seed 000's default
        without one. A hint of one fixed interval (first == ceiling) polls at that interval."""
        policy = cls()
        if hint is not None:
            policy = cls(
                start=hint.first_seconds,
                ceiling=hint.ceiling_seconds,
                deadline=hint.deadline_seconds,
                factor=1.0 if hint.ceiling_seconds == hint.first_seconds else cls.factor,
            )
        return replace(policy, **overrides) if overrides else policy

    def after_unfinished(self, delay: float) -> float:
        return min(delay * self.factor, self.ceiling)

    def after_rate_limit(self, delay: float, retry_after: float | None) -> float:
        grown = min(delay * self.rate_limit_factor, self.ceiling)
        # Never sooner than the server said, even past the ceiling.
        return max(grown, retry_after or 0.0)

    def jittered(
        self, delay: float, rng: random.Random | None = None, *, floor: float = 0.0
    ) -> float:
        """``delay`` ± ``jitter``, never below ``floor`` (a Retry-After) nor below zero."""
        if self.jitter:
            spread = delay * self.jitter
            delay = delay + (rng or random).uniform(-spread, spread)
        return max(0.0, floor, delay)


@dataclass(frozen=True)
class RetryPolicy:
    """Retries of a failed call: ``attempts`` more tries, full-jitter back-off
    ``uniform(0, min(cap, base * 2**attempt))`` (reference/api_conventions.md §5.4)."""

    attempts: int = 3
    base: float = 0.5
    cap: float = 10.0

    def __post_init__(self) -> None:
        if self.attempts < 0 or self.base < 0 or self.cap < 0:
            raise ValueError("attempts, base and cap must not be negative")

    def delay(self, attempt: int, rng: random.Random | None = None) -> float:
        return (rng or random).uniform(0.0, min(self.cap, self.base * 2**attempt))


def is_terminal(status: object) -> bool:
    return status in TERMINAL
