"""The two ASGI apps ``bench/api.py`` serves, each in its own uvicorn process.

``uvicorn --factory bench.api_apps:ours`` builds seojobs exactly as ``seojobs serve --no-worker``
does (``create_app(Settings(), run_worker=False)``, settings from ``SEOJOBS_*``), but lets the
benchmark pass the same uvicorn options to both processes (access log off, asyncio, and
httptools with seojobs' request limits).

``uvicorn --factory bench.api_apps:bare`` is the ceiling: FastAPI with one ``async`` route that
returns a constant dict, with no dependencies, no database and no middleware. The constant has
the keys of an index-check status body, so both sides serialise a body of about the same size.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI

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
