"""How long to wait between polls: pure arithmetic, no I/O, no clock.

The default is seed 000's schedule: first poll after 15 s, x1.5 after each unfinished poll,
x2 after a 429 and never sooner than its Retry-After, capped at 300 s, 24 h overall.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace

TERMINAL = frozenset({"completed", "failed"})
KNOWN = frozenset({"pending", "processing", *TERMINAL})

# Seed 001's table: intervals matched to the work (seconds).
KIND_START: dict[str, float] = {
    "index_submit": 15.0,
    "index_check": 15.0,
    "rank_check": 30.0,
    "backlink_analysis": 30.0,
    "web_vitals": 15.0,
    "site_audit": 30.0,
    "ai_search": 10.0,
}


@dataclass(frozen=True)
class PollPolicy:
    start: float = 15.0
    factor: float = 1.5
    rate_limit_factor: float = 2.0
    ceiling: float = 300.0
    deadline: float = 86_400.0
    jitter: float = 0.0  # 0.1 = ±10 %, spreads many clients apart
    long_poll: float = 0.0  # ask the server to hold the GET up to this long (Prefer: wait)

    @classmethod
    def for_kind(cls, kind: str, **overrides: float) -> PollPolicy:
        policy = cls(start=KIND_START.get(kind, cls.start))
        return replace(policy, **overrides) if overrides else policy

    def after_unfinished(self, delay: float) -> float:
        return min(delay * self.factor, self.ceiling)

    def after_rate_limit(self, delay: float, retry_after: float | None) -> float:
        grown = min(delay * self.rate_limit_factor, self.ceiling)
        # Never sooner than the server said, even past the ceiling.
        return max(grown, retry_after or 0.0)

    def jittered(self, delay: float, rng: random.Random | None = None) -> float:
        if not self.jitter:
            return delay
        spread = delay * self.jitter
        return max(0.0, delay + (rng or random).uniform(-spread, spread))


def is_terminal(status: object) -> bool:
    return status in TERMINAL
