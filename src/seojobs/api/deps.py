"""Request dependencies: the services, the authenticated user, the rate limit."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from seojobs.api.problems import Problem
from seojobs.api.ratelimit import RateLimiter
from seojobs.services import Services
from seojobs.store.records import UserRecord


def services(request: Request) -> Services:
    found: Services = request.app.state.services
    return found


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


def current_user(request: Request, svc: Annotated[Services, Depends(services)]) -> UserRecord:
    """Authenticate, then charge the request to the user's budget."""
    key = _presented_key(request)
    user = svc.authenticate(key) if key else None
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
    verdict = limiter.hit(user.id, user.rate_limit)
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


User = Annotated[UserRecord, Depends(current_user)]
Svc = Annotated[Services, Depends(services)]
