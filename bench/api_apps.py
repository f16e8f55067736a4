"""The two ASGI apps ``bench/api.py`` serves, each in its own uvicorn process.

``uvicorn --factory bench.api_apps:ours`` builds seojobs exactly as ``seojobs serve --no-worker``
does (``create_app(Settings(), run_worker=False)``, settings from ``SEOJOBS_*``), but lets the
benchmark pass the same uvicorn options to both processes (access log off, asyncio loop, h11).

``uvicorn --factory bench.api_apps:bare`` is the ceiling: FastAPI with one ``async`` route that
returns a constant dict, with no dependencies, no database and no middleware. The constant has
the keys of an index-check status body, so both sides serialise a body of about the same size.

``bare_hop1`` and ``bare_hop4`` are the same route awaiting one or four no-op
``run_in_threadpool`` calls first: what the thread-pool hand-off alone costs (the shipped status
GET makes four: the sync ``services`` and ``current_user`` dependencies, then ``_job`` and
``_body``).
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.concurrency import run_in_threadpool

BARE_PATH = "/const"

CONSTANT: dict[str, Any] = {
    "job_id": 1,
    "status": "pending",
    "title": None,
    "total_urls": 1,
    "failed_count": 0,
    "progress_percent": 0,
    "created_at": "2025-01-01T00:00:00+00:00",
    "completed_at": None,
    "error": None,
    "checked_urls": 0,
    "indexed_count": 0,
    "not_indexed_count": 0,
}


def ours() -> FastAPI:
    from seojobs.api import create_app
    from seojobs.settings import Settings

    return create_app(Settings(), run_worker=False)


def bare() -> FastAPI:
    app = FastAPI()

    @app.get(BARE_PATH)
    async def const() -> dict[str, Any]:
        return CONSTANT

    return app


def _noop() -> None:
    return None


def _bare_with_hops(hops: int) -> FastAPI:
    app = FastAPI()

    @app.get(BARE_PATH)
    async def const() -> dict[str, Any]:
        for _ in range(hops):
            await run_in_threadpool(_noop)
        return CONSTANT

    return app


def bare_hop1() -> FastAPI:
    return _bare_with_hops(1)


def bare_hop4() -> FastAPI:
    return _bare_with_hops(4)
