"""How long to wait: pure arithmetic, no I/O, no clock.

Two separate policies, configured separately:

- ``PollPolicy``: how often to re-read a job that is not finished yet. The default is seed
  000's schedule: first poll after 15 s, x1.5 after each unfinished poll, x2 after a 429 and
  never sooner than its Retry-After, capped at 300 s, 24 h overall.
- ``RetryPolicy``: how to retry a call that failed (connection errors, 502-504, a lost answer
  to a POST): a few attempts with full-jitter back-off.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace

TERMINAL = frozenset({"completed", "failed"})
KNOWN = frozenset({"pending", "processing", *TERMINAL})


@dataclass(frozen=True)
class KindTiming:
    """The suggested first interval, its ceiling and the overall deadline of a kind of work."""

    start: float
    ceiling: float
    deadline: float


# Seed 000 for the indexing jobs; seed 001's table ("match the interval to the work") for the
# rest. Seed 001 suggests one interval per kind (a range for site audits), so the ceiling is
# that interval, and its example gives up after an hour; a site audit "can take an hour", so
# it gets two.
HOUR = 3600.0
KIND_TIMING: dict[str, KindTiming] = {
    "index_submit": KindTiming(15.0, 300.0, 24 * HOUR),
    "index_check": KindTiming(15.0, 300.0, 24 * HOUR),
    "rank_check": KindTiming(30.0, 30.0, HOUR),
    "backlink_analysis": KindTiming(30.0, 30.0, HOUR),
    "backlink_refresh": KindTiming(30.0, 30.0, HOUR),
    "web_vitals": KindTiming(15.0, 15.0, HOUR),
    "site_audit": KindTiming(30.0, 60.0, 2 * HOUR),
    "ai_search": KindTiming(10.0, 10.0, HOUR),
}
# Kept for callers of the first release: the first interval per kind.
KIND_START: dict[str, float] = {kind: timing.start for kind, timing in KIND_TIMING.items()}


@dataclass(frozen=True)
class PollPolicy:
    start: float = 15.0
    factor: float = 1.5
    rate_limit_factor: float = 2.0
    ceiling: float = 300.0
    deadline: float = 86_400.0
    jitter: float = 0.0  # 0.1 = ±10 %, spreads many clients apart (never below a Retry-After)
    long_poll: float = 0.0  # ask the server to hold each GET up to this long (Prefer: wait)

    def __post_init__(self) -> None:
        if self.start < 0 or self.ceiling < 0 or self.deadline < 0:
            raise ValueError("start, ceiling and deadline must not be negative")
        if self.factor < 1 or self.rate_limit_factor < 1:
            raise ValueError("factor and rate_limit_factor must be at least 1")
        if not 0 <= self.jitter < 1:
            raise ValueError("jitter: a fraction in [0, 1)")

    @classmethod
    def for_kind(cls, kind: str, **overrides: float) -> PollPolicy:
        """Seed 000's policy for the indexing kinds, seed 001's interval for the others."""
        timing = KIND_TIMING.get(kind.replace("-", "_"))
        policy = cls()
        if timing is not None:
            policy = cls(start=timing.start, ceiling=timing.ceiling, deadline=timing.deadline)
            if timing.ceiling == timing.start:
                policy = replace(policy, factor=1.0)
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
