"""Per-host politeness: at most N requests in flight to a host, and a pause between starts.

The pause is the larger of the configured delay and the host's robots.txt ``Crawl-delay``
(capped, so one robots.txt cannot stall a worker for hours).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

MAX_CRAWL_DELAY = 30.0


@dataclass
class _HostState:
    semaphore: asyncio.Semaphore
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    next_start: float = 0.0
    crawl_delay: float = 0.0
    waiting: int = 0
    active: int = 0


class HostGate:
    def __init__(
        self,
        concurrency: int,
        delay: float,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._concurrency = concurrency
        self._delay = delay
        self._clock = clock
        self._sleep = sleep
        self._hosts: dict[str, _HostState] = {}

    def _state(self, host: str) -> _HostState:
        key = host.lower()
        state = self._hosts.get(key)
        if state is None:
            state = self._hosts[key] = _HostState(asyncio.Semaphore(self._concurrency))
        return state

    def set_crawl_delay(self, host: str, seconds: float | None) -> None:
        """Apply a robots.txt ``Crawl-delay`` to ``host`` (``None`` clears it)."""
        self._state(host).crawl_delay = min(max(seconds or 0.0, 0.0), MAX_CRAWL_DELAY)

    def delay_for(self, host: str) -> float:
        return max(self._delay, self._state(host).crawl_delay)

    def waiting(self, host: str) -> int:
        """Requests queued for a slot on ``host`` (introspection for tests and metrics)."""
        return self._state(host).waiting

    def active(self, host: str) -> int:
        return self._state(host).active

    @contextlib.asynccontextmanager
    async def slot(self, host: str) -> AsyncIterator[None]:
        state = self._state(host)
        state.waiting += 1
        try:
            await state.semaphore.acquire()
        finally:
            state.waiting -= 1
        try:
            async with state.lock:  # one start at a time, so the delay spaces starts out
                pause = state.next_start - self._clock()
                if pause > 0:
                    await self._sleep(pause)
                state.next_start = self._clock() + self.delay_for(host)
            state.active += 1
            try:
                yield
            finally:
                state.active -= 1
        finally:
            state.semaphore.release()
