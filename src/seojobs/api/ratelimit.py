"""One request budget per user over every endpoint (status polls included).

A moving window: in one process (``memory://``, the default) a deque of request times per
user; when several API processes must share one budget (``SEOJOBS_RATE_LIMIT_STORAGE=redis://…``)
``limits``' moving window on Redis, keyed ``<SEOJOBS_RATE_LIMIT_KEY_PREFIX>:LIMITER/<user id>/…``
so that two deployments sharing a Redis database keep their budgets apart. (``limits``' own
memory storage inserts every hit at the front of a list, O(requests in the window) per request:
most of the limiter's cost in ``bench/api.py``.) Every answer
carries the IETF draft's ``RateLimit-Policy`` and ``RateLimit`` fields; a refused request gets
429 problem+json with ``Retry-After``. If the limiter's storage fails, requests are served
(fail open) and the error is logged: an outage of Redis must not become an outage of the API.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import deque
from collections.abc import Callable
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


class MemoryWindows:
    """Moving windows in process memory: per key, the times of the requests counted in the
    last ``window`` seconds (at most ``amount`` of them: a refused request is not counted)."""

    def __init__(self, clock: Callable[[], float] = time.time, sweep_every: int = 10_000) -> None:
        self.clock = clock
        self.sweep_every = sweep_every  # hits between sweeps of keys that have gone quiet
        self._hits: dict[str, deque[float]] = {}
        self._lock = threading.Lock()
        self._until_sweep = sweep_every

    def hit(self, key: str, amount: int, window: int) -> tuple[bool, int, float]:
        """Count one request: (allowed, remaining, when the oldest counted one leaves)."""
        now = self.clock()
        with self._lock:
            times = self._hits.get(key)
            if times is None:
                times = self._hits[key] = deque()
            edge = now - window
            while times and times[0] <= edge:
                times.popleft()
            allowed = len(times) < amount
            if allowed:
                times.append(now)
            self._until_sweep -= 1
            if self._until_sweep <= 0:
                self._sweep(edge)
            return allowed, amount - len(times), (times[0] if times else now) + window

    def remaining(self, key: str, amount: int, window: int) -> int:
        edge = self.clock() - window
        with self._lock:
            return amount - sum(1 for t in self._hits.get(key, ()) if t > edge)

    def _sweep(self, edge: float) -> None:
        # Keys whose newest request is older than the window (any window up to the one in
        # hand); a longer window's key swept early only forgets requests it would still count
        # if the user came back within that window, so sweep by the widest plausible: 1 day.
        self._until_sweep = self.sweep_every
        stale = edge - 86_400
        for key in [k for k, t in self._hits.items() if not t or t[-1] <= stale]:
            del self._hits[key]


class RateLimiter:
    def __init__(self, storage_uri: str, default: str, key_prefix: str = "seojobs") -> None:
        in_memory = storage_uri.startswith("memory://")
        self.memory = MemoryWindows() if in_memory else None
        self.storage = (
            None if in_memory else storage.storage_from_string(storage_uri, key_prefix=key_prefix)
        )
        self.limiter = None if self.storage is None else MovingWindowRateLimiter(self.storage)
        self.default = parse(default)
        self._parsed: dict[str, RateLimitItem] = {}

    @property
    def in_memory(self) -> bool:
        """Counted in this process (no network I/O: safe to call on the event loop)."""
        return self.memory is not None

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
        window = item.get_expiry()
        if self.memory is not None:
            allowed, remaining, reset_at = self.memory.hit(key, item.amount, window)
        else:
            assert self.limiter is not None
            try:
                allowed = self.limiter.hit(item, key)
                stats = self.limiter.get_window_stats(item, key)
            except Exception:
                log.exception("rate-limit storage failed; serving the request unlimited")
                return None
            remaining, reset_at = stats.remaining, stats.reset_time
        return Verdict(
            allowed=allowed,
            limit=item.amount,
            remaining=max(0, remaining),
            reset_in=max(0, math.ceil(reset_at - time.time())),
            window=window,
        )

    def remaining(self, user_id: int, spec: str | None) -> int:
        """Requests left in the user's window now, without counting one."""
        item = self.item(spec)
        if self.memory is not None:
            return self.memory.remaining(str(user_id), item.amount, item.get_expiry())
        assert self.limiter is not None
        return int(self.limiter.get_window_stats(item, str(user_id)).remaining)
