"""The Scheduler against the real server: many open jobs within the default 120/minute budget,
and a submission followed to its scheduled check.

On SQLite: the Scheduler's pacing is the subject. Scheduled checks on both stores are
test_index_submit_jobs' and test_api_v1's."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Iterator
from typing import Any

import pytest

from seojobs.client import Client
from seojobs.client.models import CheckJob, Job, SubmitJob
from seojobs.client.scheduler import Scheduler
from tests.fakes.indexnow import FakeIndexNow
from tests.fakes.serp import FakeSerper
from tests.fakes.server import serve
from tests.fakes.site import running_site
from tests.integration.test_client_jobs import Stack, running_stack, stack_settings

pytestmark = pytest.mark.stores("sqlite")


class Slow:
    """ASGI wrapper: every request takes ``low``..``high`` seconds before the app sees it."""

    def __init__(self, app: Any, low: float, high: float, seed: int = 7) -> None:
        self.app = app
        self.low = low
        self.high = high
        self.rng = random.Random(seed)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            await asyncio.sleep(self.rng.uniform(self.low, self.high))
        await self.app(scope, receive, send)


@pytest.fixture
def slow_stack(store_url: str) -> Iterator[Stack]:
    """IndexNow answers in 0.1-0.4 s and the worker runs 3 jobs at a time, so 100 one-URL
    submissions finish one after another over several seconds, not all at once."""
    fake = FakeIndexNow()
    with serve(Slow(fake.app(), 0.1, 0.4)) as indexnow_base:
        # The production budget (make_settings lifts it): the Scheduler paces its reads by it.
        settings = stack_settings(
            store_url, indexnow_base + "/indexnow", worker_concurrency=3, rate_limit="120/minute"
        )
        with running_stack(settings, fake) as made:
            yield made


def test_100_open_jobs_polled_to_completion_at_120_a_minute_without_a_429(
    slow_stack: Stack,
) -> None:
    stack = slow_stack
    key = stack.key()  # the default budget: 120/minute
    done: list[Job] = []
    read_of: list[int] = []  # which read saw each job finished

    def finished(job: Job) -> None:
        done.append(job)
        read_of.append(scheduler.stats.requests)

    with Client(stack.base, key) as client:
        # 100 submissions spend 100 of the 120 requests of this minute...
        created = [client.submit([f"https://h{i}.example/page"], engine="bing") for i in range(100)]
        # ...and a timer that would like to read every 0.2 s must live on what is left.
        scheduler = Scheduler(client, min_period=0.2, on_done=finished)
        for job in created:
            scheduler.add("index_submit", job.job_id)
        result = scheduler.run(timeout=100)
    assert len(result) == 100 and len(done) == 100
    assert {j.job_id for j in done} == {j.job_id for j in created}
    assert all(j.status == "completed" for j in done)
    assert scheduler.stats.rate_limited == 0
    assert stack.recorder.answers(429) == []
    reads = stack.recorder.requests("GET", "/index-submit/jobs")
    assert len(reads) == scheduler.stats.requests
    assert all("ids=" in r.query for r in reads)  # batched reads only, no per-job polls
    assert scheduler.stats.requests < 40  # a handful of reads for 100 jobs, not hundreds
    # The jobs really finished over time: different reads found different jobs finished.
    assert len(set(read_of)) >= 2
    assert len(stack.indexnow.submissions) == 100


@pytest.fixture
def checking_stack(store_url: str) -> Iterator[tuple[Stack, str]]:
    """Submissions through IndexNow, checks through Serper, a page on a loopback site; a
    "day" of 0.5 s so a follow-up check with ``checker=1`` comes half a second later."""
    indexnow = FakeIndexNow()
    serper = FakeSerper(key="serper-key")
    with (
        serve(indexnow.app()) as indexnow_base,
        serve(serper.app) as serper_base,
        running_site() as (_site, site_base),
    ):
        page = f"{site_base}/"
        serper.index("google", page)
        settings = stack_settings(
            store_url,
            indexnow_base + "/indexnow",
            submit_providers={"google": ["indexnow"]},
            check_providers={"google": ["serper"]},
            serper_key="serper-key",
            serper_base_url=serper_base,
            allow_private_networks=True,
            day_seconds=0.5,
        )
        with running_stack(settings, indexnow) as made:
            yield made, page


def test_scheduler_follows_a_submission_to_its_scheduled_check(
    checking_stack: tuple[Stack, str],
) -> None:
    stack, page = checking_stack
    key = stack.key()
    done: list[Job] = []
    with Client(stack.base, key) as client:
        submission = client.submit([page], engine="google", checker=1)
        assert submission.scheduled_check_days == 1
        scheduler = Scheduler(client, min_period=0.2, on_done=done.append)
        scheduler.add("index_submit", submission.job_id)
        scheduler.run(timeout=60)
        assert [j.kind for j in done] == ["index_submit", "index_check"]
        first, check = done
        assert isinstance(first, SubmitJob) and first.job_id == submission.job_id
        assert first.status == "completed" and first.scheduled_check_status == "completed"
        assert isinstance(check, CheckJob) and check.job_id == first.scheduled_check_run_id
        assert check.status == "completed" and check.indexed_count == 1
        rows = list(client.report("index_check", check.job_id))
    assert [(r.url, r.status) for r in rows] == [(page, "indexed")]
    assert scheduler.stats.rate_limited == 0
