"""What-if variants of our app for ``bench/api.py``: suggested changes to ``src/``, measured.

Nothing here ships. Each factory builds the real app with ``create_app`` and puts one extra
route in front of v1's ``GET /api/v1/index-check/jobs/{job_id}``: the same handler, built from
the same functions (``deps._presented_key``, ``deps.current_user``, ``v1._job``, ``v1._body``,
``v1._headers``, the app's ``RateLimiter``, ``Services``), with the changes up to one step.
Middleware, error handlers and the rest of the app are untouched. (FastAPI's
``dependency_overrides`` would be simpler, but it rebuilds each overridden dependency's
signature on every request, which costs more than some of the steps measure.)

The steps are cumulative:

1. ``async_services``: the ``services`` dependency is ``async def`` (it only reads app state),
   so FastAPI no longer sends it to the thread pool. ``current_user`` is the shipped function.
2. ``auth_cache``: ``current_user`` is ``async def``; a key's user is cached in the process for
   ``AUTH_TTL`` seconds (a miss still runs ``Services.authenticate`` in the thread pool); the
   in-memory rate limiter is hit on the event loop.
3. ``one_hop``: the handler looks the job up and builds the body in one thread-pool call
   instead of two.
4. ``one_query``: the job and its owner are read with one prebuilt statement
   (``jobs JOIN projects``, bound parameters) instead of two statements built per call.
5. ``no_pre_ping`` (PostgreSQL only): the engine is rebuilt as ``Database`` builds it, but
   without ``pool_pre_ping``, which costs a ``SELECT 1`` round trip per pool checkout.
6. ``autocommit`` (PostgreSQL only): that one-statement read runs in autocommit, without the
   ``BEGIN`` and ``COMMIT`` round trips of ``Database.read()``.
7. ``on_loop``: the lookup runs on the event loop, no thread pool at all. Not a design to
   adopt (a slow query would stall every request in the process); it shows what the last
   thread-pool hop costs.

``Prefer: wait`` is not handled by the variants (the load never sends it).
"""

# No ``from __future__ import annotations``: the route below is built in a closure, and FastAPI
# must see its dependency annotations evaluated (it cannot resolve closure names from strings).

import time
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, Response
from sqlalchemy import bindparam, create_engine, select

from bench.api_apps import ours
from seojobs.api import deps, v1
from seojobs.api.problems import Problem
from seojobs.api.ratelimit import RateLimiter
from seojobs.services import NotFound, Services
from seojobs.services.indexing import CHECK
from seojobs.store import jobs as job_sql
from seojobs.store.db import Database
from seojobs.store.records import JobRecord, UserRecord
from seojobs.store.tables import jobs, projects

AUTH_TTL = 30.0
POOL_SIZE = 10  # Database's default: pool_size=10, max_overflow=10
STEPS = (
    "async_services",
    "auth_cache",
    "one_hop",
    "one_query",
    "no_pre_ping",
    "autocommit",
    "on_loop",
)
POSTGRES_ONLY = frozenset({"no_pre_ping", "autocommit"})
LABELS = {
    "async_services": "+ `services` dependency async",
    "auth_cache": "+ async `current_user`, user cached 30 s",
    "one_hop": "+ job lookup and body in one pool hop",
    "one_query": "+ job and owner in one prebuilt query",
    "no_pre_ping": "+ no pool_pre_ping (PostgreSQL)",
    "autocommit": "+ that read in autocommit, no BEGIN/COMMIT",
    "on_loop": "+ lookup on the event loop (no pool hop)",
}

_JOB_OF_USER = (
    select(jobs)
    .select_from(jobs.join(projects, projects.c.id == jobs.c.project_id))
    .where(jobs.c.id == bindparam("job_id"), projects.c.user_id == bindparam("user_id"))
)


async def _services(request: Request) -> Services:
    found: Services = request.app.state.services
    return found


Svc = Annotated[Services, Depends(_services)]


def _shipped_current_user(request: Request, svc: Svc) -> UserRecord:
    return deps.current_user(request, svc)


def _unauthorized() -> Problem:
    return Problem(
        401,
        "Unauthorized",
        "send your API key in Authorization (raw or Bearer) or X-API-Key",
        code="unauthorized",
        headers={"WWW-Authenticate": 'Bearer realm="seojobs"'},
    )


def _cached_current_user() -> Callable[..., Awaitable[UserRecord]]:
    cache: dict[str, tuple[float, UserRecord]] = {}

    async def current_user(request: Request, svc: Svc) -> UserRecord:
        key = deps._presented_key(request)
        if not key:
            raise _unauthorized()
        hit = cache.get(key)
        if hit is not None and hit[0] > time.monotonic():
            user: UserRecord | None = hit[1]
        else:
            user = await run_in_threadpool(svc.authenticate, key)
            if user is not None:
                cache[key] = (time.monotonic() + AUTH_TTL, user)
        if user is None:
            raise _unauthorized()
        limiter: RateLimiter = request.app.state.rate_limiter
        verdict = limiter.hit(user.id, user.rate_limit)
        if verdict is not None:
            request.state.rate_limit_headers = verdict.headers()
            if not verdict.allowed:
                raise Problem(
                    429,
                    "Too many requests",
                    f"the limit is {verdict.limit} requests per {verdict.window} s",
                    code="rate_limited",
                    headers=verdict.headers(),
                    violated_policies=["user"],
                )
        request.state.user = user
        return user

    return current_user


def _row(svc: Services, user: UserRecord, job_id: int, autocommit: bool) -> Any:
    params = {"job_id": job_id, "user_id": user.id}
    if autocommit:
        with svc.db.engine.connect() as conn:
            conn = conn.execution_options(isolation_level="AUTOCOMMIT")
            return conn.execute(_JOB_OF_USER, params).first()
    with svc.db.read() as conn:
        return conn.execute(_JOB_OF_USER, params).first()


def _job_one_query(
    svc: Services, user: UserRecord, job_id: int, autocommit: bool = False
) -> JobRecord:
    row = _row(svc, user, job_id, autocommit)
    if row is None:
        raise NotFound(f"job {job_id}")
    job = job_sql._job(row)
    if job.kind != CHECK:
        raise NotFound(f"job {job_id}")
    return job


def _lookup(upto: tuple[str, ...]) -> Callable[[Services, UserRecord, int], JobRecord]:
    if "autocommit" in upto:
        return lambda svc, user, job_id: _job_one_query(svc, user, job_id, autocommit=True)
    if "one_query" in upto:
        return _job_one_query
    return lambda svc, user, job_id: v1._job(svc, user, CHECK, job_id)


def _router(upto: tuple[str, ...]) -> APIRouter:
    user_dep: Callable[..., Any] = (
        _cached_current_user() if "auth_cache" in upto else _shipped_current_user
    )
    lookup = _lookup(upto)
    router = APIRouter(prefix="/api/v1")

    @router.get("/index-check/jobs/{job_id}")
    async def get_check(
        job_id: int, user: Annotated[UserRecord, Depends(user_dep)], svc: Svc
    ) -> Response:
        if "one_hop" not in upto:
            job = await run_in_threadpool(lookup, svc, user, job_id)
            body = await run_in_threadpool(v1._body, svc, job)
            return JSONResponse(body, headers=v1._headers(job))

        def work() -> tuple[JobRecord, dict[str, Any]]:
            job = lookup(svc, user, job_id)
            return job, v1._body(svc, job)

        job, body = work() if "on_loop" in upto else await run_in_threadpool(work)
        return JSONResponse(body, headers=v1._headers(job))

    return router


def build(step: str) -> FastAPI:
    """Our app with the status GET changed by every step up to and including ``step``."""
    app = ours()
    db: Database = app.state.db
    upto = tuple(
        s
        for s in STEPS[: STEPS.index(step) + 1]
        if db.dialect == "postgresql" or s not in POSTGRES_ONLY
    )
    if "no_pre_ping" in upto:
        db.engine.dispose()
        db.engine = create_engine(
            db.engine.url,
            pool_size=POOL_SIZE,
            max_overflow=POOL_SIZE,
            connect_args={"prepare_threshold": None},
        )
    app.include_router(_router(upto))
    app.router.routes.insert(0, app.router.routes.pop())  # in front of v1's route
    return app


def async_services() -> FastAPI:
    return build("async_services")


def auth_cache() -> FastAPI:
    return build("auth_cache")


def one_hop() -> FastAPI:
    return build("one_hop")


def one_query() -> FastAPI:
    return build("one_query")


def no_pre_ping() -> FastAPI:
    return build("no_pre_ping")


def autocommit() -> FastAPI:
    return build("autocommit")


def on_loop() -> FastAPI:
    return build("on_loop")
