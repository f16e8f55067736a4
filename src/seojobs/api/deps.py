"""Request dependencies: the services, the authenticated user, the rate limits."""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Awaitable, Callable
from typing import Annotated

from fastapi import Depends, Request
from fastapi.concurrency import run_in_threadpool

from seojobs import telemetry
from seojobs.api.clientaddr import client_key
from seojobs.api.problems import Problem
from seojobs.api.ratelimit import AUTH_FAILURES, USER, RateLimiter, Verdict
from seojobs.records import UserRecord
from seojobs.services import Services
from seojobs.services.accounts import hash_api_key

AUTH_CACHE_SECONDS = 5.0  # a deleted user's key keeps working at most this long


async def services(request: Request) -> Services:
    found: Services = request.app.state.services
    return found


class AuthCache:
    """Key hash -> user for a few seconds: status polls are most of the traffic, and looking
    the user up on every one cost more than the poll itself (bench/api.py).

    An entry lives ``ttl`` seconds from its lookup, so a deleted user's key (or a changed
    limit) takes effect within ``ttl``. One lookup per key at a time: requests that miss
    while a lookup is running wait for it (before, every request of a busy key missed at once
    when its entry expired, each with its own database read in the thread pool).
    """

    def __init__(self, ttl: float = AUTH_CACHE_SECONDS, size: int = 10_000) -> None:
        self.ttl = ttl
        self.size = size
        self.lookups = 0  # database lookups made (for tests and metrics)
        self._entries: dict[str, tuple[float, UserRecord]] = {}
        self._running: dict[str, asyncio.Task[UserRecord | None]] = {}

    async def user(
        self, digest: str, lookup: Callable[[], Awaitable[UserRecord | None]]
    ) -> UserRecord | None:
        """The user of the key hashed to ``digest``, from the cache or ``lookup()``."""
        found = self.cached(digest)
        if found is not None:
            return found
        return await self.look_up(digest, lookup)

    def cached(self, digest: str) -> UserRecord | None:
        """The cached user of ``digest``, or None."""
        found = self._entries.get(digest)
        if found is None or time.monotonic() >= found[0]:
            return None
        return found[1]

    async def look_up(
        self, digest: str, lookup: Callable[[], Awaitable[UserRecord | None]]
    ) -> UserRecord | None:
        """Look the key up (joining a lookup of the same key already running)."""
        # The lookup is a task of its own: a request that goes away (its client hung up)
        # does not cancel it for the others waiting.
        task = self._running.get(digest)
        if task is None:
            task = asyncio.create_task(self._lookup(digest, lookup), name="seojobs-auth-lookup")
            self._running[digest] = task
            task.add_done_callback(functools.partial(self._done, digest))
        return await asyncio.shield(task)

    def _done(self, digest: str, task: asyncio.Task[UserRecord | None]) -> None:
        if self._running.get(digest) is task:
            del self._running[digest]
        if not task.cancelled():
            task.exception()  # retrieved here; a waiting request raises it too

    async def _lookup(
        self, digest: str, lookup: Callable[[], Awaitable[UserRecord | None]]
    ) -> UserRecord | None:
        self.lookups += 1
        user = await lookup()
        if user is not None:  # an unknown key is looked up again next time
            self._put(digest, user)
        return user

    def _put(self, digest: str, user: UserRecord) -> None:
        if len(self._entries) >= self.size:
            self._entries.clear()  # crude but bounded; refills within one TTL
        self._entries[digest] = (time.monotonic() + self.ttl, user)


def _unauthorized(*, missing: bool) -> Problem:
    """401. A missing key and a refused one read differently (the client knows which it
    sent); every refused key, unknown, rotated or of a disabled user, reads the same."""
    if missing:
        detail = "no API key was sent: send it in Authorization (raw or Bearer) or X-API-Key"
        challenge = 'Bearer realm="seojobs"'
    else:
        detail = "the API key is not valid (unknown, rotated or revoked)"
        challenge = 'Bearer realm="seojobs", error="invalid_token"'  # RFC 6750 3.1
    return Problem(
        401, "Unauthorized", detail, code="unauthorized", headers={"WWW-Authenticate": challenge}
    )


def header(request: Request, name: bytes) -> str | None:
    """The first value of the header ``name`` (lower case), as ``request.headers.get`` gives
    it, read from the scope: building Starlette's ``Headers`` and its ``KeyError`` for a
    header that is absent cost a status GET more than the lookup itself (bench/api.py)."""
    for key, value in request.scope["headers"]:
        if key == name:
            return str(value.decode("latin-1"))
    return None


def _presented_key(request: Request) -> str | None:
    key = header(request, b"x-api-key")
    if key:
        return key.strip()
    auth = header(request, b"authorization")
    if not auth:
        return None
    auth = auth.strip()
    scheme, _, rest = auth.partition(" ")
    if scheme.lower() == "bearer":
        return rest.strip() or None  # the scheme alone carries no key
    # Seed 000 sends the raw key as the whole header value, as SpeedyIndex does.
    return auth


async def current_user(request: Request) -> UserRecord:
    """Authenticate, then charge the request to the user's budget.

    Its only parameter is the request, so routes on the hot path can call it directly rather
    than through ``Depends`` (FastAPI's dependency solving costs more per request than the
    whole status read, bench/api.py).
    """
    key = _presented_key(request)
    user = await authenticate(request, key)
    if user is None:
        raise _unauthorized(missing=key is None)
    limiter: RateLimiter = request.app.state.rate_limiter
    verdict = await limiter.hit(USER, str(user.id), user.rate_limit)
    if verdict is None:
        _storage_failed(limiter)
    else:
        request.state.rate_limit_headers = verdict.headers()
        if not verdict.allowed:
            raise _too_many(verdict, f"the limit is {verdict.limit} requests")
    request.state.user = user
    return user


async def authenticate(request: Request, key: str | None) -> UserRecord | None:
    """The key's user, or None; a client address over its budget of failed attempts gets 429.

    A key found in the cache is served at once. Anything else would cost a database lookup
    (a missing key is answered without one, but counts as a failure all the same), so the
    address's budget of failures is checked first and charged when the attempt fails.
    Successful attempts are never charged.
    """
    svc: Services = request.app.state.services
    cache: AuthCache = request.app.state.auth_cache
    digest = hash_api_key(key) if key else ""  # the cache holds hashes, never raw keys

    async def lookup() -> UserRecord | None:
        return await run_in_threadpool(svc.accounts.authenticate, key or "")

    if key and (user := cache.cached(digest)) is not None:
        return user
    limiter: RateLimiter = request.app.state.rate_limiter
    spec: str = request.app.state.settings.auth_failure_limit
    who = client_key(request.scope)
    left = await limiter.peek(AUTH_FAILURES, who, spec)
    if left is None:
        _storage_failed(limiter)
    elif not left.allowed:
        raise _too_many(left, f"{left.limit} failed authentications are allowed per address")
    user = await cache.look_up(digest, lookup) if key else None
    if user is None:
        # Should the storage fail here, the 401 stands and the attempt goes uncounted.
        await limiter.hit(AUTH_FAILURES, who, spec)
    return user


def _too_many(verdict: Verdict, what: str) -> Problem:
    telemetry.RATE_LIMITED.labels(verdict.policy).inc()
    return Problem(
        429,
        "Too many requests",
        f"{what} per {verdict.window} s; retry in {max(1, verdict.reset_in)} s",
        code="rate_limited",
        headers=verdict.headers(),
        violated_policies=[verdict.policy],
    )


def _storage_failed(limiter: RateLimiter) -> None:
    """The limiter's storage failed: serve unlimited (``open``), or refuse with 503."""
    telemetry.RATE_LIMIT_STORAGE_ERRORS.labels(limiter.breaker.policy).inc()
    if limiter.fail_closed:
        raise Problem(
            503,
            "Rate limiting unavailable",
            "the rate limiter's storage is not answering; the request was not served",
            code="rate_limit_unavailable",
            headers={"Retry-After": str(limiter.retry_in())},
        )


User = Annotated[UserRecord, Depends(current_user)]
Svc = Annotated[Services, Depends(services)]
