"""A worker process killed during a 500-URL Google submission (batches of 100)."""

from __future__ import annotations

import asyncio
import os
import signal
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from seojobs.kinds import load_registry
from seojobs.services import Services
from seojobs.store.db import Database
from seojobs.store.tables import job_items
from tests.conftest import make_settings
from tests.fakes.google import (
    INDEXING_SCOPE,
    TOKEN_PATH,
    FakeIndexingApi,
    FakeTokenEndpoint,
    ServiceAccountKey,
)
from tests.fakes.server import serve
from tests.integration.test_processes import Procs
from tests.waiting import wait_until


class SlowBatches:
    """Test-side ASGI wrapper: each batch call takes a while, so a kill lands mid-job."""

    def __init__(self, app: Any, delay: float) -> None:
        self.app = app
        self.delay = delay

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] == "/batch":
            await asyncio.sleep(self.delay)
        await self.app(scope, receive, send)


@pytest.fixture
def google(tmp_path: Path) -> Iterator[tuple[FakeIndexingApi, str, Path]]:
    key = ServiceAccountKey()
    tokens = FakeTokenEndpoint(INDEXING_SCOPE)
    tokens.trust(key)
    api = FakeIndexingApi(tokens)
    with serve(SlowBatches(api.app(), 0.3)) as base:
        yield api, base, key.write(tmp_path / "sa.json", base + TOKEN_PATH)


@pytest.mark.slow
def test_killed_submission_resumes_without_resending_recorded_urls(
    store_url: str, tmp_path: Path, google: tuple[FakeIndexingApi, str, Path]
) -> None:
    api, base, credentials = google
    env = {
        "SEOJOBS_GOOGLE_CREDENTIALS_FILE": str(credentials),
        "SEOJOBS_GOOGLE_INDEXING_BASE_URL": base,
        # Short, so the job of the killed worker is soon free (its leadership lasts 5 s
        # anyway); not shorter: at load 15 heartbeats came over 1.5 s late, three times in
        # one run (a fourth fails the job as worker_lost).
        "SEOJOBS_LEASE_SECONDS": "3",
    }
    settings = make_settings(store_url, google_credentials_file=str(credentials))
    db = Database(store_url)
    services = Services(db, settings, load_registry(settings))
    user = services.accounts.create_user("alice").user
    urls = [f"https://jobs.example/posting/{i}" for i in range(500)]
    job, _ = services.jobs.create(user, "index_submit", {"urls": urls, "engine": "google"})
    procs = Procs(store_url, tmp_path)
    try:
        victim = procs.worker(**env)
        wait_until(lambda: services.jobs.get(user, job.id).items_done >= 200, timeout=60)
        os.kill(victim.pid, signal.SIGKILL)
        victim.wait()
        sent_by_victim = Counter(api.published())
        # Under load the victim's heartbeats may come late: its claim is then rescued (it
        # claims the job again), and the batch then in flight goes twice.
        lost_before_kill = services.jobs.get(user, job.id).rescue_count
        with db.read() as conn:
            recorded = set(
                conn.execute(
                    select(job_items.c.input).where(
                        job_items.c.job_id == job.id, job_items.c.state != "pending"
                    )
                ).scalars()
            )
        procs.worker(**env)
        wait_until(lambda: services.jobs.get(user, job.id).completed_at is not None, timeout=60)
        done = services.jobs.get(user, job.id)
    finally:
        procs.stop_all()
        db.dispose()
    # On failure: what each worker logged (claims lost, rescues, attempts), and which URLs.
    logs = procs.exits()
    assert done.state == "completed", f"{done.error_code}: {done.error_message}\n{logs}"
    assert done.items_done == 500 and done.counters == {"submitted": 500}, logs
    sent = Counter(api.published())
    assert set(sent) == set(urls), logs  # every URL reached the provider
    # Recorded ones were never sent again: not by the resumed run...
    resent = sorted(u for u in recorded if sent[u] > sent_by_victim[u])
    assert not resent, f"{len(resent)} recorded URL(s) sent again, e.g. {resent[:3]}\n{logs}"
    # ... nor by the victim: at most the batch in flight at each claim it lost (none in a
    # quiet run: every recorded URL went once), and overall one batch per claim lost.
    twice = [u for u, n in sent_by_victim.items() if n > 1]
    assert len(twice) <= 100 * lost_before_kill, logs
    repeated = {u for u, n in sent.items() if n > 1}
    assert len(repeated) <= 100 * done.rescue_count, logs  # the kill's in-flight batch: 1
