"""Moving-window budgets: one per user over every endpoint (status polls included), and one per
client address for failed authentications.

In one process (``memory://``, the default) a deque of request times per key; when several API
processes must share the budgets (``SEOJOBS_RATE_LIMIT_STORAGE=redis://…``) ``limits``' moving
window on Redis, keyed ``<SEOJOBS_RATE_LIMIT_KEY_PREFIX>:LIMITER/<policy>/<who>/…`` so that two
deployments sharing a Redis database keep their budgets apart. (``limits``' own memory storage
inserts every hit at the front of a list, O(requests in the window) per request: most of the
limiter's cost in ``bench/api.py``.) Every answer carries the IETF draft's ``RateLimit-Policy``
and ``RateLimit`` fields; a refused request gets 429 problem+json with ``Retry-After``.

Redis is called with redis-py's asyncio client on the event loop, every call bounded by
``SEOJOBS_RATE_LIMIT_STORAGE_TIMEOUT`` (connect and answer): a hung Redis holds no thread (before,
calls ran in the thread pool with no timeout, and a hung Redis used up the pool that health
checks and database reads need). When the storage fails or times out the limiter answers None
and the caller applies ``SEOJOBS_RATE_LIMIT_ON_STORAGE_ERROR``; a circuit breaker
(``breaker.py``) then skips the storage for a cool-down and logs the outage once.
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from limits import RateLimitItem, parse

from seojobs.api.breaker import Breaker

if TYPE_CHECKING:
    from limits.aio.strategies import MovingWindowRateLimiter
    from redis.asyncio import ConnectionPool

T = TypeVar("T")
USER = "user"  # the policies, as named in RateLimit-Policy and in storage keys
AUTH_FAILURES = "auth-failures"


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    limit: int
    remaining: int
    reset_in: int  # seconds until the window frees a request
    window: int
    policy: str = USER

    def headers(self) -> dict[str, str]:
        headers = {
            "RateLimit-Policy": f'"{self.policy}";q={self.limit};w={self.window}',
            "RateLimit": f'"{self.policy}";r={self.remaining};t={self.reset_in}',
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
        return self.stats(key, amount, window)[0]

    def stats(self, key: str, amount: int, window: int) -> tuple[int, float]:
        """Without counting: (remaining, when the oldest counted request leaves)."""
        now = self.clock()
        edge = now - window
        with self._lock:
            counted = [t for t in self._hits.get(key, ()) if t > edge]
        return amount - len(counted), (counted[0] if counted else now) + window

    def _sweep(self, edge: float) -> None:
        # Keys whose newest request is older than the window (any window up to the one in
        # hand); a longer window's key swept early only forgets requests it would still count
        # if the user came back within that window, so sweep by the widest plausible: 1 day.
        self._until_sweep = self.sweep_every
        stale = edge - 86_400
        for key in [k for k, t in self._hits.items() if not t or t[-1] <= stale]:
            del self._hits[key]


class RateLimiter:
    """The budgets of one deployment, in memory or on Redis.

    ``hit`` counts a request and ``peek`` only looks; both answer None when the storage failed,
    timed out or is being skipped after a failure (``breaker``), and the caller applies the
    storage-error policy (``retry_in`` is then how long until the storage is tried again).
    """

    def __init__(
        self,
        storage_uri: str,
        default: str,
        *,
        key_prefix: str = "seojobs",
        timeout: float = 0.5,
        cooldown: float = 5.0,
        on_storage_error: str = "open",
    ) -> None:
        self.memory = MemoryWindows() if storage_uri.startswith("memory://") else None
        self.timeout = timeout
        self.breaker = Breaker(cooldown, on_storage_error)
        self.fail_closed = on_storage_error == "closed"
        self._pool: ConnectionPool | None = None
        self._remote: MovingWindowRateLimiter | None = None
        if self.memory is None:
            # Loaded here: a process on memory:// budgets never imports redis-py (or what
            # it imports: cryptography).
            from limits.aio.storage import RedisStorage
            from limits.aio.strategies import MovingWindowRateLimiter
            from redis.asyncio import ConnectionPool

            # Our own pool, so that its timeouts are set and it is closed with the app.
            self._pool = ConnectionPool.from_url(
                _redis_py_url(storage_uri), socket_connect_timeout=timeout, socket_timeout=timeout
            )
            options: dict[str, Any] = {"connection_pool": self._pool}  # typed narrowly by limits
            store = RedisStorage(
                "async+" + storage_uri, implementation="redispy", key_prefix=key_prefix, **options
            )
            self._remote = MovingWindowRateLimiter(store)
        self.default = parse(default)
        self._parsed: dict[str, RateLimitItem] = {}

    def item(self, spec: str | None) -> RateLimitItem:
        if not spec:
            return self.default
        if spec not in self._parsed:
            self._parsed[spec] = parse(spec)
        return self._parsed[spec]

    async def hit(self, policy: str, who: str, spec: str | None) -> Verdict | None:
        """Count one request of ``who`` under ``policy``; None when the storage failed."""
        item = self.item(spec)
        if self.memory is not None:
            allowed, remaining, reset_at = self.memory.hit(f"{policy}/{who}", *_size(item))
            return _verdict(policy, item, allowed, remaining, reset_at)
        remote = self._remote
        assert remote is not None

        async def count() -> tuple[bool, int, float]:
            allowed = await remote.hit(item, policy, who)
            stats = await remote.get_window_stats(item, policy, who)
            return allowed, stats.remaining, stats.reset_time

        found = await self._bounded(count)
        return None if found is None else _verdict(policy, item, *found)

    async def peek(self, policy: str, who: str, spec: str | None) -> Verdict | None:
        """Whether ``who`` has budget left under ``policy``, without counting; None as above."""
        item = self.item(spec)
        if self.memory is not None:
            remaining, reset_at = self.memory.stats(f"{policy}/{who}", *_size(item))
        else:
            remote = self._remote
            assert remote is not None

            async def look() -> tuple[int, float]:
                stats = await remote.get_window_stats(item, policy, who)
                return stats.remaining, stats.reset_time

            found = await self._bounded(look)
            if found is None:
                return None
            remaining, reset_at = found
        return _verdict(policy, item, remaining > 0, remaining, reset_at)

    def remaining(self, user_id: int, spec: str | None) -> int:
        """Requests left in a user's window now (memory storage: tests and metrics)."""
        if self.memory is None:
            raise RuntimeError("remaining() reads the memory storage only; use peek()")
        return self.memory.remaining(f"{USER}/{user_id}", *_size(self.item(spec)))

    def retry_in(self) -> int:
        """Whole seconds until a failed storage is tried again (at least 1)."""
        return max(1, math.ceil(self.breaker.retry_in()))

    async def aclose(self) -> None:
        if self._pool is not None:
            await self._pool.aclose()

    async def _bounded(self, call: Callable[[], Awaitable[T]]) -> T | None:
        if not self.breaker.allow():
            return None
        try:
            async with asyncio.timeout(self.timeout):
                found = await call()
        except Exception as exc:  # any failure of the storage: the policy decides, not a 500
            self.breaker.failed(exc)
            return None
        except BaseException:  # cancelled: this request's client went away
            self.breaker.abandoned()
            raise
        self.breaker.succeeded()
        return found


def _redis_py_url(uri: str) -> str:
    # limits spells a Unix socket redis+unix://; redis-py, unix://.
    return "unix://" + uri.removeprefix("redis+unix://") if uri.startswith("redis+unix://") else uri


def _size(item: RateLimitItem) -> tuple[int, int]:
    return item.amount, item.get_expiry()


def _verdict(
    policy: str, item: RateLimitItem, allowed: bool, remaining: int, reset_at: float
) -> Verdict:
    return Verdict(
        allowed=allowed,
        limit=item.amount,
        remaining=max(0, remaining),
        reset_in=max(0, math.ceil(reset_at - time.time())),
        window=item.get_expiry(),
        policy=policy,
    )
