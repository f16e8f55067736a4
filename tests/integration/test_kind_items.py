"""Items found while running (``ctx.add_items``), findings and collected data, through a
small crawler kind (``test_crawl`` in tests/kinds.py) over a local site; and a crawl that
survives a SIGKILL of its worker."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import func, select
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse
from starlette.routing import Route

from seojobs.engine.context import ROWS_CHUNK
from seojobs.engine.registry import Registry
from seojobs.engine.worker import Worker
from seojobs.services import NotFound, Services
from seojobs.settings import Settings
from seojobs.store.db import Database
from seojobs.store.tables import findings, job_items
from tests.conftest import make_settings
from tests.fakes.server import serve
from tests.kinds import test_log
from tests.procs import Procs
from tests.waiting import await_until, wait_until

PAGES = 31  # a binary tree of links: page n links to 2n+1 and 2n+2, and back to page 0
UNTITLED = [n for n in range(PAGES) if n % 5 == 0]


def _page(request: Request) -> HTMLResponse:
    n = int(request.path_params["n"])
    links = [f'<a href="/p/{c}">{c}</a>' for c in (2 * n + 1, 2 * n + 2) if c < PAGES]
    links += ['<a href="/p/0">home</a>', '<a href="https://elsewhere.invalid/x">out</a>']
    title = "" if n in UNTITLED else f"<title>page {n}</title>"
    return HTMLResponse(f"<html><head>{title}</head><body>{''.join(links)}</body></html>")


@contextlib.contextmanager
def crawl_site() -> Iterator[str]:
    routes = [
        Route("/p/{n:int}", _page),
        Route("/robots.txt", lambda r: PlainTextResponse("User-agent: *\nAllow: /\n")),
    ]
    with serve(Starlette(routes=routes)) as base:
        yield base


def _settings(store_url: str) -> Settings:
    return make_settings(store_url, allow_private_networks=True, fetch_host_concurrency=4)


def _starts(services: Services, job_id: int) -> dict[str, int]:
    with services.db.read() as conn:
        rows = conn.execute(
            select(test_log.c.item, func.count())
            .where(test_log.c.job_id == job_id, test_log.c.event == "start")
            .group_by(test_log.c.item)
        )
        return {str(item): int(n) for item, n in rows}


async def test_items_added_while_running_are_run_once_with_findings_and_data(
    store_url: str, registry: Registry
) -> None:
    settings = _settings(store_url)
    services = Services(Database(store_url), settings, registry)
    user = services.accounts.create_user("alice").user
    project = services.accounts.create_project(user, "site")
    with crawl_site() as base:
        job, _ = services.jobs.create(
            user, "test_crawl", {"start": f"{base}/p/0"}, project_id=project.id
        )
        site = base.removeprefix("http://")
        with pytest.raises(NotFound):  # nothing collected before the job completes
            services.collections.latest(user, project.id, "test_crawl", site)
        worker = Worker(services.db, settings, registry)
        running = asyncio.create_task(worker.run())
        try:

            async def final() -> bool:
                return (await asyncio.to_thread(services.jobs.get, user, job.id)).is_final

            await await_until(final, timeout=60)
        finally:
            worker.stop()
            await running
    done = services.jobs.get(user, job.id)
    assert done.state == "completed", done.error
    # Every page once, though most are linked from several pages; off-site links not added.
    items = services.jobs.items(user, job.id, limit=1000)
    assert sorted(i.input for i in items) == sorted(f"{base}/p/{n}" for n in range(PAGES))
    assert done.items_total == done.items_done == PAGES
    assert set(_starts(services, job.id).values()) == {1}
    counts = services.jobs.finding_counts(user, job.id)
    assert counts == [("missing_title", "warning", len(UNTITLED))]
    untitled = services.jobs.findings(user, job.id, code="missing_title")
    assert sorted(f.data["url"] for f in untitled if f.data) == sorted(
        f"{base}/p/{n}" for n in UNTITLED
    )
    latest = services.collections.latest(user, project.id, "test_crawl", site)
    assert (latest.job_id, latest.data) == (job.id, {"pages": PAGES})
    services.db.dispose()


@pytest.mark.slow
@pytest.mark.parametrize(("concurrency", "backlog"), [(2, 0), (4, 0), (2, 2)])
def test_a_crawl_survives_a_sigkilled_worker(
    services: Services, store_url: str, tmp_path: Path, concurrency: int, backlog: int
) -> None:
    """Items added before the kill are kept and run by the rescuing worker; only the items in
    flight when the worker died (at most its concurrency, plus its backlog of results waiting
    for their write) run twice. At 4, results wait to be written in groups of two: a finished
    item waiting for its group is still in flight."""
    procs = Procs(store_url, tmp_path)
    user = services.accounts.create_user("alice").user
    env = {"SEOJOBS_LEASE_SECONDS": "1.5", "SEOJOBS_ALLOW_PRIVATE_NETWORKS": "true"}
    try:
        with crawl_site() as base:
            job, _ = services.jobs.create(
                user,
                "test_crawl",
                {
                    "start": f"{base}/p/0",
                    "item_delay": 0.2,
                    "concurrency": concurrency,
                    "backlog": backlog,
                },
            )
            victim = procs.worker(**env)
            wait_until(lambda: services.jobs.get(user, job.id).items_done >= 6, timeout=60)
            victim.send_signal(signal.SIGKILL)
            victim.wait(timeout=30)
            with services.db.read() as conn:
                known = conn.execute(
                    select(func.count()).where(job_items.c.job_id == job.id)
                ).scalar_one()
            assert known > 6  # items found before the kill were stored
            procs.worker(**env)
            wait_until(lambda: services.jobs.get(user, job.id).is_final, timeout=90)
    finally:
        procs.stop_all()
    done = services.jobs.get(user, job.id)
    assert done.state == "completed", (done.error, procs.exits())
    assert done.items_total == done.items_done == PAGES
    starts = _starts(services, job.id)
    assert set(starts) == {f"{base}/p/{n}" for n in range(PAGES)}
    # Each claim lost (the kill's, and under load one whose heartbeats came too late for the
    # 1.5 s lease: its worker claims the job again) starts its items in flight once more.
    lost = done.rescue_count
    again = sum(n - 1 for n in starts.values())
    assert lost >= 1 and again <= (concurrency + backlog) * lost, (lost, starts)
    assert all(n <= 1 + lost for n in starts.values()), (lost, starts)


def _events(services: Services, job_id: int, event: str) -> int:
    with services.db.read() as conn:
        return int(
            conn.execute(
                select(func.count()).where(test_log.c.job_id == job_id, test_log.c.event == event)
            ).scalar_one()
        )


@pytest.mark.slow
def test_job_level_findings_rewritten_by_a_rescue_replace_the_dead_workers(
    services: Services, store_url: str, tmp_path: Path
) -> None:
    """A worker killed after writing a job's findings about the whole job, before the job
    completes: the worker that resumes it writes them again, and they are there once (more
    than two chunks of them: each write replaces with its first chunk, adds the others)."""
    procs = Procs(store_url, tmp_path)
    user = services.accounts.create_user("alice").user
    env = {"SEOJOBS_LEASE_SECONDS": "1.5"}
    many = 2 * ROWS_CHUNK + 1
    try:
        job, _ = services.jobs.create(user, "test_summary", {"findings": many, "hold": 600})
        victim = procs.worker(**env)
        wait_until(lambda: _events(services, job.id, "findings_written") == 1, timeout=60)
        procs.replace(victim, **env)
        wait_until(lambda: services.jobs.get(user, job.id).is_final, timeout=60)
    finally:
        procs.stop_all()
    done = services.jobs.get(user, job.id)
    assert done.state == "completed", (done.error, procs.exits())
    # Written by both workers (and again by each claim lost to late heartbeats under load).
    assert done.rescue_count >= 1
    assert _events(services, job.id, "findings_written") == 1 + done.rescue_count
    with services.db.read() as conn:
        rows = conn.execute(select(findings.c.data).where(findings.c.job_id == job.id)).all()
    assert sorted(data["n"] for (data,) in rows) == list(range(many))
