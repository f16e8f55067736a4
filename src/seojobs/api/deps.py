"""Request dependencies: the services, the authenticated user, the rate limit."""

from __future__ import annotations

import time
from typing import Annotated

from fastapi import Depends, Request
from fastapi.concurrency import run_in_threadpool

from seojobs.api.problems import Problem
from seojobs.api.ratelimit import RateLimiter
from seojobs.services import Services
from seojobs.services.core import hash_api_key
from seojobs.store.records import UserRecord

AUTH_CACHE_SECONDS = 5.0  # a deleted user's key keeps working at most this long


async def services(request: Request) -> Services:
    found: Services = request.app.state.services
    return found


class AuthCache:
    """Key hash -> user for a few seconds: status polls are most of the traffic, and looking
    the user up on every one cost more than the poll itself (bench/api.py)."""

    def __init__(self, ttl: float = AUTH_CACHE_SECONDS, size: int = 10_000) -> None:
        self.ttl = ttl
        self.size = size
        self._entries: dict[str, tuple[float, UserRecord]] = {}

    def get(self, key: str) -> UserRecord | None:
        found = self._entries.get(key)
        if found is None or found[0] < time.monotonic():
            return None
        return found[1]

    def put(self, key: str, user: UserRecord) -> None:
        if len(self._entries) >= self.size:
            self._entries.clear()  # crude but bounded; refills within one TTL
        self._entries[key] = (time.monotonic() + self.ttl, user)


def _presented_key(request: Request) -> str | None:
    key = request.headers.get("x-api-key")
    if key:
        return key.strip()
    auth = request.headers.get("authorization")
    if not auth:
        return None
    auth = auth.strip()
    scheme, _, rest = auth.partition(" ")
    if scheme.lower() == "bearer" and rest:
        return rest.strip()
    # Seed 000 sends the raw key as the whole header value, as SpeedyIndex does.
    return auth


async def current_user(request: Request) -> UserRecord:
    """Authenticate, then charge the request to the user's budget.

    Its only parameter is the request, so routes on the hot path can call it directly rather
    than through ``Depends`` (FastAPI's dependency solving costs more per request than the
    whole status read, bench/api.py).
    """
    key = _presented_key(request)
    user = await _authenticate(request, request.app.state.services, key) if key else None
    if user is None:
        # Same answer for a missing key, a wrong key and a deleted user: nothing to learn.
        raise Problem(
            401,
            "Unauthorized",
            "send your API key in Authorization (raw or Bearer) or X-API-Key",
            code="unauthorized",
            headers={"WWW-Authenticate": 'Bearer realm="seojobs"'},
        )
    limiter: RateLimiter = request.app.state.rate_limiter
    if limiter.in_memory:
        verdict = limiter.hit(user.id, user.rate_limit)
    else:  # Redis is network I/O: keep it off the event loop
        verdict = await run_in_threadpool(limiter.hit, user.id, user.rate_limit)
    if verdict is not None:
        request.state.rate_limit_headers = verdict.headers()
        if not verdict.allowed:
            raise Problem(
                429,
                "Too many requests",
                f"the limit is {verdict.limit} requests per {verdict.window} s; "
                f"retry in {max(1, verdict.reset_in)} s",
                code="rate_limited",
                headers=verdict.headers(),
                violated_policies=["user"],
            )
    request.state.user = user
    return user


async def _authenticate(request: Request, svc: Services, key: str) -> UserRecord | None:
    cache: AuthCache = request.app.state.auth_cache
    digest = hash_api_key(key)  # the cache holds hashes, never raw keys
    user = cache.get(digest)
    if user is None:
        user = await run_in_threadpool(svc.authenticate, key)
        if user is not None:
            cache.put(digest, user)
    return user


User = Annotated[UserRecord, Depends(current_user)]
Svc = Annotated[Services, Depends(services)]
