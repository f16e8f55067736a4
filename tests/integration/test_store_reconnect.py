"""PostgreSQL connections that die under a running server (a restart, a failover,
``pg_terminate_backend``): the pools notice before using them, so the API answers without an
error and the worker, LISTEN connection included, runs the next job."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import psycopg

from seojobs.engine.registry import Registry
from seojobs.engine.worker import Worker
from seojobs.store.db import Database
from tests.api_helpers import api
from tests.conftest import PG_ADMIN_URL, make_settings
from tests.waiting import await_until, wait_until


def _backends(admin: psycopg.Connection[Any], database: str) -> set[int]:
    rows = admin.execute(
        "SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
        (database,),
    ).fetchall()
    return {int(pid) for (pid,) in rows}


def _terminate_all(database: str) -> set[int]:
    """Terminate every backend of ``database``; return once none of them is left."""
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
        pids = _backends(admin, database)
        for pid in pids:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        wait_until(lambda: not pids & _backends(admin, database))
    return pids


def _start(c: httpx.Client, project: int) -> int:
    started = c.post(f"/v1/projects/{project}/jobs", json={"type": "test_noop", "params": {}})
    assert started.status_code == 202, started.text
    return int(started.json()["data"]["id"])


async def _finished(c: httpx.Client, job_id: int) -> dict[str, Any]:
    async def status() -> dict[str, Any] | None:
        read = await asyncio.to_thread(c.get, f"/v1/jobs/{job_id}")
        job: dict[str, Any] = read.raise_for_status().json()["data"]
        return job if job["status"] in ("completed", "failed") else None

    return await await_until(status)


async def test_api_and_worker_survive_terminated_backends(pg_url: str, registry: Registry) -> None:
    # The API and the worker each with a pool of their own, and nothing in the background
    # (no maintenance; a 60 s poll): each pool's first use after the kill is the request, or
    # the claim woken by the LISTEN connection coming back and by the job's NOTIFY. Without
    # the check on checkout that use fails (a 503; a claim retried only after the poll).
    settings = make_settings(pg_url, poll_interval=60)
    database = pg_url.rpartition("/")[2]
    db = Database(pg_url)
    worker = Worker(db, settings, registry, maintenance=False)
    task = asyncio.create_task(worker.run())
    try:
        with api(settings) as app:
            alice = app.account()
            c = app.client(alice, "x-api-key")
            project = alice.user.default_project_id
            assert (await _finished(c, _start(c, project)))["status"] == "completed"

            killed = await asyncio.to_thread(_terminate_all, database)
            assert len(killed) >= 3  # the API's pool, the worker's, its LISTEN connection

            job = await _finished(c, await asyncio.to_thread(_start, c, project))
            assert job["status"] == "completed", job["error"]
    finally:
        worker.stop()
        await asyncio.wait_for(task, 30)
        db.dispose()
