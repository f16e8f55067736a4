"""The FastAPI application: ``create_app(settings)`` builds it; nothing happens at import."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
from collections.abc import AsyncIterator
from typing import Any, Final

from fastapi import FastAPI
from fastapi.responses import JSONResponse
from sqlalchemy import text

from seojobs import __version__
from seojobs.api import problems
from seojobs.api.deps import AuthCache
from seojobs.api.inputs import CheckedRoute, require_checked
from seojobs.api.middleware import BodyLimit, RateLimitHeaders
from seojobs.api.projects import router as projects_router
from seojobs.api.ratelimit import RateLimiter
from seojobs.api.v1 import install_status_routes
from seojobs.api.v1 import router as v1_router
from seojobs.api.v2 import router as v2_router
from seojobs.engine.worker import Worker
from seojobs.kinds import load_registry
from seojobs.services import Services
from seojobs.settings import Settings
from seojobs.store import migrate
from seojobs.store.db import Database

log = logging.getLogger("seojobs.api")

# How uvicorn runs the app (``seojobs serve``, the tests, bench/api.py). httptools, uvicorn's C
# HTTP parser, answered 40 % more status GETs per process than h11 (bench/api.py). The loop is
# asyncio's even where uvloop is installed: under 64 busy keep-alive connections uvloop served
# some of them hundreds of ms late (p99 364-479 ms against 34 ms; measured 2026-11-29).
UVICORN_HTTP: Final = "httptools"
UVICORN_LOOP: Final = "asyncio"


def create_app(
    settings: Settings, *, run_worker: bool = True, auto_migrate: bool = True
) -> FastAPI:
    db = Database(settings.database_url)
    registry = load_registry(settings)
    services = Services(db, settings, registry)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if auto_migrate:
            await asyncio.to_thread(migrate.upgrade, db)
        # Everything built at startup (routes, models, SQLAlchemy metadata) lives as long as
        # the process: move it out of the collector's view, so that full collections only
        # walk what requests allocate (they paused the whole server for tens of ms).
        gc.collect()
        gc.freeze()
        worker_task: asyncio.Task[None] | None = None
        worker: Worker | None = None
        if run_worker:
            worker = Worker(db, settings, registry)
            worker_task = asyncio.create_task(worker.run(), name="seojobs-worker")
        app.state.worker = worker
        try:
            yield
        finally:
            if worker is not None and worker_task is not None:
                worker.stop()
                await worker_task
            await services.reads.close()
            db.dispose()

    app = FastAPI(
        title="seojobs",
        version=__version__,
        description=(
            "SEO work as background jobs: submit, then poll until the job is `completed` or "
            "`failed`. Authenticate with your API key in `Authorization` (raw or `Bearer`) or "
            "`X-API-Key`. One rate limit per user covers every endpoint."
        ),
        lifespan=lifespan,
    )
    app.router.route_class = CheckedRoute  # the app's own routes pass the input gate too
    app.state.settings = settings
    app.state.db = db
    app.state.services = services
    app.state.rate_limiter = RateLimiter(settings.rate_limit_storage, settings.rate_limit)
    app.state.auth_cache = AuthCache()
    problems.install(app)
    install_status_routes(app)  # first: most requests are status polls
    app.include_router(v1_router)
    app.include_router(v2_router)
    app.include_router(projects_router)
    app.add_middleware(RateLimitHeaders)
    app.add_middleware(BodyLimit, limit=settings.max_body_bytes)

    @app.get("/healthz", operation_id="healthz", tags=["health"])
    def healthz() -> dict[str, str]:
        """Liveness: the process answers."""
        return {"status": "ok"}

    @app.get("/readyz", operation_id="readyz", tags=["health"], response_model=None)
    def readyz() -> Any:
        """Readiness: the database answers and its schema is current."""
        try:
            with db.read() as conn:
                conn.execute(text("SELECT 1"))
            current = migrate.is_current(db)
        except Exception as exc:
            return problems.problem(
                503, "Database unavailable", str(exc), code="database_unavailable"
            )
        if not current:
            return problems.problem(
                503, "Schema out of date", "run `seojobs migrate`", code="schema_out_of_date"
            )
        return JSONResponse({"status": "ready", "database": db.dialect})

    require_checked(app.routes)
    return app
