"""One request budget per user over every endpoint (status polls included).

Built on ``limits`` with a moving window: memory storage in one process, Redis when several
API processes must share one budget (``SEOJOBS_RATE_LIMIT_STORAGE=redis://…``). Every answer
carries the IETF draft's ``RateLimit-Policy`` and ``RateLimit`` fields; a refused request gets
429 problem+json with ``Retry-After``. If the limiter's storage fails, requests are served
(fail open) and the error is logged: an outage of Redis must not become an outage of the API.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass

from limits import RateLimitItem, parse, storage
from limits.strategies import MovingWindowRateLimiter

log = logging.getLogger("seojobs.ratelimit")
POLICY = "user"


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    limit: int
    remaining: int
    reset_in: int  # seconds until the window frees a request
    window: int

    def headers(self) -> dict[str, str]:
        headers = {
            "RateLimit-Policy": f'"{POLICY}";q={self.limit};w={self.window}',
            "RateLimit": f'"{POLICY}";r={self.remaining};t={self.reset_in}',
        }
        if not self.allowed:
            headers["Retry-After"] = str(max(1, self.reset_in))
        return headers


class RateLimiter:
    def __init__(self, storage_uri: str, default: str) -> None:
        self.storage = storage.storage_from_string(storage_uri)
        self.in_memory = storage_uri.startswith("memory://")
        self.limiter = MovingWindowRateLimiter(self.storage)
        self.default = parse(default)
        self._parsed: dict[str, RateLimitItem] = {}

    def item(self, spec: str | None) -> RateLimitItem:
        if not spec:
            return self.default
        if spec not in self._parsed:
            self._parsed[spec] = parse(spec)
        return self._parsed[spec]

    def hit(self, user_id: int, spec: str | None) -> Verdict | None:
        """Count one request; None when the storage failed (the request is let through)."""
        item = self.item(spec)
        key = str(user_id)
        try:
            allowed = self.limiter.hit(item, key)
            stats = self.limiter.get_window_stats(item, key)
        except Exception:
            log.exception("rate-limit storage failed; serving the request unlimited")
            return None
        reset_in = max(0, math.ceil(stats.reset_time - time.time()))
        return Verdict(
            allowed=allowed,
            limit=item.amount,
            remaining=max(0, stats.remaining),
            reset_in=reset_in,
            window=item.get_expiry(),
        )
