"""The suite's collector (tests/conftest.py): what collection made is frozen out of its view
before the run, and ``forget_apps`` (after each test) lets an app that was served and stopped
be collected, though FastAPI's caches of callables held it."""

from __future__ import annotations

import gc
import weakref

import httpx
from fastapi import Depends, FastAPI

from tests.conftest import forget_apps
from tests.fakes.server import serve


def _served_once() -> weakref.ref[FastAPI]:
    app = FastAPI()

    def answer() -> int:
        return 42

    @app.get("/")
    async def root(value: int = Depends(answer)) -> dict[str, int]:
        return {"value": value, "routes": len(app.routes)}  # a closure over its app, as ours

    with serve(app) as base:
        assert httpx.get(f"{base}/", timeout=60).json()["value"] == 42
    return weakref.ref(app)


def test_a_stopped_app_is_collected_once_the_suite_forgets_it() -> None:
    gone = _served_once()
    gc.collect()
    assert gone() is not None  # FastAPI's caches keep it (if no longer: forget_apps can go)
    forget_apps()
    gc.collect()
    assert gone() is None


def test_what_collection_made_is_frozen_before_the_run() -> None:
    # The imported modules and the collected items: tens of thousands of objects even when
    # this module is collected alone (no test process freezes anything else: gc_freeze).
    assert gc.get_freeze_count() > 10_000
