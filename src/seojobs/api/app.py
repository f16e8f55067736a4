"""The FastAPI application: ``create_app(settings)`` builds it; nothing happens at import."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import JSONResponse
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from seojobs import __version__
from seojobs.api import dashboard, docs, metrics, openapi, problems, reads
from seojobs.api.audits import router as audits_router
from seojobs.api.dbgate import DatabaseDeadline, DatabaseGate
from seojobs.api.deps import AuthCache
from seojobs.api.inputs import CheckedRoute, require_checked
from seojobs.api.middleware import BodyLimit
from seojobs.api.observe import Observe
from seojobs.api.projects import router as projects_router
from seojobs.api.ratelimit import RateLimiter
from seojobs.api.results import router as results_router
from seojobs.api.shared import add_routes
from seojobs.api.tracking import router as tracking_router
from seojobs.api.v1 import install_status_routes
from seojobs.api.v1 import router as v1_router
from seojobs.api.v2 import router as v2_router
from seojobs.api.webhooks import router as webhooks_router
from seojobs.engine.worker import Worker
from seojobs.kinds import load_registry
from seojobs.services import Services
from seojobs.settings import Settings

log = logging.getLogger("seojobs.api")


# Liveness and readiness, served by every app (``seojobs.api.shared``).
health_router = APIRouter(route_class=CheckedRoute)


# async: answered on the event loop, never queued behind the thread pool (database reads, and
# before, calls to a hung Redis, which once held every thread and hung this check).
@health_router.get("/healthz", operation_id="healthz", tags=["health"])
async def healthz() -> dict[str, str]:
    """Liveness: the process answers. Depends on nothing else (no database, no Redis)."""
    return {"status": "ok"}


@health_router.get("/readyz", operation_id="readyz", tags=["health"], response_model=None)
def readyz(request: Request) -> Any:
    """Readiness: the database answers and its schema is current."""
    services: Services = request.app.state.services
    wrong = services.readiness()
    if wrong == "database_unavailable":
        return problems.problem(
            503, "Database unavailable", "the database does not answer", code=wrong
        )
    if wrong is not None:
        return problems.problem(503, "Schema out of date", "run `seojobs migrate`", code=wrong)
    return JSONResponse({"status": "ready", "database": services.db.dialect})


def create_app(
    settings: Settings, *, run_worker: bool = True, auto_migrate: bool = True
) -> FastAPI:
    registry = load_registry(settings)
    services = Services.open(settings, registry)
    limiter = RateLimiter(
        settings.rate_limit_storage,
        settings.rate_limit,
        key_prefix=settings.rate_limit_key_prefix,
        timeout=settings.rate_limit_storage_timeout,
        cooldown=settings.rate_limit_storage_cooldown,
        on_storage_error=settings.rate_limit_on_storage_error,
    )

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if auto_migrate:
            await asyncio.to_thread(services.migrate)
        # Everything built at startup (routes, models, SQLAlchemy metadata) lives as long as
        # the process: move it out of the collector's view, so that full collections only
        # walk what requests allocate (they paused the whole server for tens of ms).
        if settings.gc_freeze:
            gc.collect()
            gc.freeze()
        worker_task: asyncio.Task[None] | None = None
        worker: Worker | None = None
        if run_worker:
            worker = Worker(
                services.db,
                settings,
                registry,
                fire_schedule=services.schedules.fire,
                background=[services.webhook_dispatcher().run],
            )
            worker_task = asyncio.create_task(worker.run(), name="seojobs-worker")
        app.state.worker = worker
        try:
            yield
        finally:
            if worker is not None and worker_task is not None:
                worker.stop()
                await worker_task
            await limiter.aclose()
            await services.close()

    app = FastAPI(
        title="seojobs",
        version=__version__,
        description=(
            "SEO work as background jobs: submit, then poll until the job is `completed` or "
            "`failed`. Authenticate with your API key in `Authorization` (raw or `Bearer`) or "
            "`X-API-Key`. One rate limit per user covers every endpoint."
        ),
        lifespan=lifespan,
        docs_url=None,  # served by seojobs.api.docs, without a CDN
        redoc_url=None,
        # FastAPI's own OpenTelemetry hooks: seojobs does not use them (its metrics are
        # /metrics), and asking whether a provider is configured read the environment on
        # every request (about 10 us of each status GET, bench/api.py).
        telemetry={"tracing": False, "metrics": False, "logs": False},
    )
    app.router.route_class = CheckedRoute  # the app's own routes pass the input gate too
    app.state.settings = settings
    app.state.db = services.db
    app.state.services = services
    app.state.rate_limiter = limiter
    app.state.auth_cache = AuthCache()
    problems.install(app)
    install_status_routes(app)  # first: most requests are status polls
    add_routes(app, v1_router)
    add_routes(app, v2_router)
    add_routes(app, projects_router)
    add_routes(app, results_router)
    add_routes(app, audits_router)
    add_routes(app, tracking_router)
    add_routes(app, reads.router(registry))  # every read the kinds declare
    add_routes(app, webhooks_router)
    docs.install(app)
    metrics.install(app, services)
    dashboard.install(app)
    app.add_middleware(BodyLimit, limit=settings.max_body_bytes)
    deadline = None
    if not services.db.is_sqlite:  # a local file cannot hang the way a server can
        gate = DatabaseGate(
            services.database_answers, probe_timeout=settings.database_probe_timeout
        )
        app.state.database_gate = gate
        deadline = DatabaseDeadline(gate)
    # The request id, its count, its rate-limit fields and the database deadline, one layer:
    # the gate's 503s are counted and carry the id.
    app.add_middleware(Observe, deadline=deadline)
    if settings.trusted_proxies:  # outermost: every layer sees the forwarded client
        app.add_middleware(ProxyHeadersMiddleware, trusted_hosts=list(settings.trusted_proxies))

    add_routes(app, health_router)
    require_checked(app.routes)
    openapi.install(app, registry, settings)
    return app
