"""The API's auth cache: one lookup per key at a time, looked up again after its TTL.

The lookup is the cache's own parameter (in the app: the database read in the thread pool);
here it is a coroutine the test gates, so that requests really overlap it.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from seojobs.api.deps import AuthCache
from seojobs.records import UserRecord

ALICE = UserRecord(1, "alice", None, None, datetime(2026, 1, 1, tzinfo=UTC), 1)


class Gate:
    """A lookup that answers ``user`` when released, counting its calls."""

    def __init__(self, user: UserRecord | None = ALICE) -> None:
        self.user = user
        self.calls = 0
        self.release = asyncio.Event()
        self.error: Exception | None = None

    async def __call__(self) -> UserRecord | None:
        self.calls += 1
        await self.release.wait()
        if self.error is not None:
            raise self.error
        return self.user


async def test_requests_that_miss_together_share_one_lookup() -> None:
    cache, gate = AuthCache(ttl=60), Gate()
    waiting = [asyncio.create_task(cache.user("k", gate)) for _ in range(50)]
    await asyncio.sleep(0)
    gate.release.set()
    assert await asyncio.gather(*waiting) == [ALICE] * 50
    assert gate.calls == 1 and cache.lookups == 1
    assert await cache.user("k", gate) == ALICE  # from the cache now
    assert gate.calls == 1


async def test_after_its_ttl_an_entry_is_looked_up_again_and_waited_for() -> None:
    cache, gate = AuthCache(ttl=0.05), Gate()
    gate.release.set()
    await cache.user("k", gate)
    await asyncio.sleep(0.1)
    gone = Gate(None)  # the user was deleted meanwhile
    gone.release.set()
    assert await cache.user("k", gone) is None
    assert gone.calls == 1


async def test_unknown_keys_are_not_cached() -> None:
    cache, gate = AuthCache(ttl=60), Gate(None)
    gate.release.set()
    assert await cache.user("k", gate) is None
    assert await cache.user("k", gate) is None
    assert gate.calls == 2


async def test_a_failed_lookup_fails_every_waiter_and_is_not_cached() -> None:
    cache, gate = AuthCache(ttl=60), Gate()
    gate.error = RuntimeError("database unavailable")
    waiting = [asyncio.create_task(cache.user("k", gate)) for _ in range(3)]
    await asyncio.sleep(0)
    gate.release.set()
    results = await asyncio.gather(*waiting, return_exceptions=True)
    assert all(isinstance(r, RuntimeError) for r in results), results
    gate.error = None
    assert await cache.user("k", gate) == ALICE
    assert gate.calls == 2


async def test_a_request_that_goes_away_does_not_cancel_the_lookup_of_the_others() -> None:
    cache, gate = AuthCache(ttl=60), Gate()
    first = asyncio.create_task(cache.user("k", gate))
    second = asyncio.create_task(cache.user("k", gate))
    await asyncio.sleep(0)
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    gate.release.set()
    assert await second == ALICE
    assert gate.calls == 1
