"""Client and AsyncClient against the real server (create_app on a loopback socket, a worker in
a thread, IndexNow faked on loopback): submit, wait, reports, usage, 429s, lost answers,
long polls, v2 status.

On SQLite: the client is the subject. What the server stores and answers, on both stores, is
test_api_v1's, test_api_v2's and test_api_projects' (long polls, idempotency, rate limits)."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from seojobs.api import create_app
from seojobs.client import (
    AsyncClient,
    Client,
    PollPolicy,
    RateLimitedError,
)
from seojobs.client.models import ReportRow, SubmitJob, Usage, V2Task
from seojobs.engine.worker import Worker
from seojobs.records import JobRecord, UserRecord
from seojobs.services import Services
from seojobs.settings import Settings
from tests.conftest import database_of, make_settings
from tests.fakes.indexnow import FakeIndexNow
from tests.fakes.server import serve
from tests.integration.client_helpers import MODES, Driver, NoWait, aw, edge
from tests.waiting import wait_until

pytestmark = pytest.mark.stores("sqlite")

INDEXNOW_KEY = "0123456789abcdef"
# Seed 000's schedule alone, fast (the first long polls have tests of their own).
FAST = PollPolicy(start=0.1, factor=1.5, ceiling=0.5, deadline=60, first_long_polls=0)


# -- the stack ------------------------------------------------------------------------------------


@dataclass
class Seen:
    method: str
    path: str
    query: str
    headers: dict[str, str]
    status: int = 0
    response_headers: dict[str, str] = field(default_factory=dict)


class Recorder:
    """ASGI wrapper: what the server received and what it answered, request by request."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.seen: list[Seen] = []
        self._lock = threading.Lock()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        entry = Seen(
            scope["method"],
            scope["path"],
            scope.get("query_string", b"").decode(),
            {k.decode().lower(): v.decode() for k, v in scope["headers"]},
        )

        async def recording(message: Any) -> None:
            if message["type"] == "http.response.start":
                entry.status = message["status"]
                entry.response_headers = {
                    k.decode().lower(): v.decode() for k, v in message.get("headers", [])
                }
            await send(message)

        # Recorded on arrival: appending after the app returned would race a client that has
        # already read the answer.
        with self._lock:
            self.seen.append(entry)
        await self.app(scope, receive, recording)

    def forget(self) -> None:
        """Nothing seen: for the next test of a module that shares the stack."""
        with self._lock:
            self.seen.clear()

    def answers(self, status: int) -> list[Seen]:
        with self._lock:
            return [s for s in self.seen if s.status == status]

    def requests(self, method: str | None = None, path_part: str = "") -> list[Seen]:
        with self._lock:
            return [
                s
                for s in self.seen
                if (method is None or s.method == method) and path_part in s.path
            ]


@dataclass
class Stack:
    base: str
    app: FastAPI
    recorder: Recorder
    indexnow: FakeIndexNow
    keys: list[str] = field(default_factory=list)  # of the users ``key`` made

    @property
    def services(self) -> Services:
        found: Services = self.app.state.services
        return found

    def key(self, name: str = "alice", rate_limit: str | None = None) -> str:
        """A new user's key (``name`` with a suffix of its own: a shared stack has others)."""
        unique = f"{name}-{uuid.uuid4().hex[:8]}"
        key = self.services.accounts.create_user(unique, rate_limit=rate_limit).api_key
        self.keys.append(key)
        return key

    def user(self, key: str) -> UserRecord:
        user = self.services.accounts.authenticate(key)
        assert user is not None
        return user

    def jobs_of(self, key: str) -> list[JobRecord]:
        return self.services.jobs.page(self.user(key), limit=1000)

    def record(self, key: str, job_id: int) -> JobRecord:
        return self.services.jobs.get(self.user(key), job_id)


@contextlib.contextmanager
def worker_for(app: FastAPI) -> Iterator[Worker]:
    """The server's worker, run in its own thread and loop (``serve`` runs no lifespan)."""
    services: Services = app.state.services
    worker = Worker(app.state.db, services.settings, services.registry)
    thread = threading.Thread(target=lambda: asyncio.run(worker.run()), daemon=True)
    thread.start()
    wait_until(lambda: worker._loop is not None, timeout=10)
    try:
        yield worker
    finally:
        worker.stop()
        thread.join(timeout=30)
        assert not thread.is_alive(), "the worker did not stop"


@contextlib.contextmanager
def running_stack(
    settings: Settings, indexnow: FakeIndexNow, *, wrap: Callable[[Any], Any] | None = None
) -> Iterator[Stack]:
    app = create_app(settings, run_worker=False)
    recorder = Recorder(app)
    served = wrap(recorder) if wrap else recorder
    try:
        with serve(served) as base, worker_for(app):
            yield Stack(base, app, recorder, indexnow)
    finally:
        app.state.db.dispose()


def stack_settings(store_url: str, endpoint: str, **extra: Any) -> Settings:
    values: dict[str, Any] = {
        "indexnow_key": INDEXNOW_KEY,
        "indexnow_endpoint": endpoint,
        "provider_backoff": 0.01,
        "provider_retries": 1,
    }
    values.update(extra)
    return make_settings(store_url, **values)


@pytest.fixture(scope="module")
def shared_stack(module_store: str, request: pytest.FixtureRequest) -> Iterator[Stack]:
    """One stack per store for the module: its tests each work as their own new users."""
    fake = FakeIndexNow()
    with (
        database_of(module_store, request) as url,
        serve(fake.app()) as indexnow_base,
        running_stack(stack_settings(url, indexnow_base + "/indexnow"), fake) as made,
    ):
        yield made


@pytest.fixture
def stack(shared_stack: Stack) -> Iterator[Stack]:
    """The module's stack with nothing seen or received yet; after the test, its users' jobs
    are left finished (none runs into the next test)."""
    shared_stack.recorder.forget()
    shared_stack.indexnow.forget()
    mine = dataclasses.replace(shared_stack, keys=[])
    yield mine
    wait_until(lambda: all(job.is_final for key in mine.keys for job in mine.jobs_of(key)))


# -- submit, wait, report, usage ------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_submit_wait_completed_report_and_usage(stack: Stack, mode: str) -> None:
    key = stack.key()
    urls = [f"https://a.example/p{i}" for i in range(3)]
    driver = Driver(mode, stack.base, key)

    async def scenario(c: Any) -> tuple[Any, Any, Any, Any]:
        created = await aw(c.submit(urls, engine="bing", title="launch"))
        done = await aw(c.wait("index_submit", created.job_id, policy=FAST, poll_first=False))
        rows = await aw(c.report("index_submit", created.job_id))
        return created, done, rows, await aw(c.usage())

    created, done, rows, usage = driver.run(scenario)
    assert isinstance(created, SubmitJob) and created.status == "pending"
    assert created.total_urls == 3 and created.title == "launch"
    assert isinstance(done, SubmitJob) and done.job_id == created.job_id
    assert done.status == "completed" and done.successful_count == 3
    assert all(isinstance(r, ReportRow) for r in rows)
    assert sorted(r.url for r in rows) == urls
    assert {r.provider for r in rows} == {"indexnow"}
    assert isinstance(usage, Usage) and usage.submit.used == 3 and usage.check.used == 0
    assert stack.indexnow.urls_for("a.example") == urls
    # The first read came FAST.start after the submission, not at once.
    assert driver.recording.delays[0] == pytest.approx(0.1)


@pytest.fixture(scope="module")
def failing_stack(
    module_store: str, request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Stack]:
    """A stack whose google submissions go through the Indexing API with a service-account
    file that is not JSON: a job is accepted (a provider is configured) and fails when it
    runs. One per store for the module (both modes' tests, each as its own user)."""
    bad = tmp_path_factory.mktemp("sa") / "sa.json"
    bad.write_text("{not json")
    fake = FakeIndexNow()
    with (
        database_of(module_store, request) as url,
        serve(fake.app()) as indexnow_base,
        running_stack(
            stack_settings(
                url,
                indexnow_base + "/indexnow",
                google_credentials_file=str(bad),
                submit_providers={"google": ["google_indexing"]},
            ),
            fake,
        ) as made,
    ):
        yield made


@pytest.mark.parametrize("mode", MODES)
def test_wait_on_a_failed_job_returns_it_failed(failing_stack: Stack, mode: str) -> None:
    stack = dataclasses.replace(failing_stack, keys=[])
    key = stack.key()

    async def scenario(c: Any) -> tuple[Any, Any]:
        created = await aw(c.submit(["https://a.example/"], engine="google"))
        return created, await aw(c.wait("index_submit", created.job_id, policy=FAST))

    created, done = Driver(mode, stack.base, key).run(scenario)
    assert done.job_id == created.job_id and done.status == "failed"
    assert done.error is not None and done.error.code == "provider_auth_failed"


# -- 429 ------------------------------------------------------------------------------------------


def burn(base: str, key: str, n: int) -> None:
    with httpx.Client(base_url=base, headers={"Authorization": key}) as other:
        for _ in range(n):
            other.get("/api/v1/usage")


@pytest.mark.parametrize("mode", MODES)
def test_429_is_retried_no_sooner_than_retry_after(stack: Stack, mode: str) -> None:
    key = stack.key("bob", rate_limit="3/minute")
    burn(stack.base, key, 3)  # another process used the budget

    no_wait = NoWait()  # moves the client's clock instead of waiting a real minute
    driver = Driver(mode, stack.base, key, retries=2, clock=no_wait.clock)
    driver.recording = no_wait
    with pytest.raises(RateLimitedError) as caught:
        driver.run(lambda c: c.usage())
    refused = stack.recorder.answers(429)
    assert len(refused) == 3  # the first try and two retries
    told = [float(s.response_headers["retry-after"]) for s in refused]
    assert all(t >= 1 for t in told)
    assert caught.value.retry_after == told[-1]
    assert caught.value.code == "rate_limited" and caught.value.status == 429
    # Each retry waited at least what the server said before it.
    assert len(no_wait.delays) == 2
    assert no_wait.delays[0] >= told[0] and no_wait.delays[1] >= told[1]


@pytest.mark.parametrize("mode", MODES)
def test_wait_rides_out_a_429_and_finishes(stack: Stack, mode: str) -> None:
    key = stack.key("carol", rate_limit="3/3 seconds")
    driver = Driver(mode, stack.base, key)
    job_id = driver.run(lambda c: c.submit(["https://a.example/x"], engine="bing")).job_id
    wait_until(lambda: stack.record(key, job_id).is_final)
    burn(stack.base, key, 3)  # the wait's first read meets a 429
    done = driver.run(lambda c: c.wait("index_submit", job_id, policy=FAST))
    assert done.status == "completed"
    refused = [s for s in stack.recorder.answers(429) if "index-submit" in s.path]
    assert refused, "the wait never met a 429"
    told = max(float(s.response_headers["retry-after"]) for s in refused)
    assert max(driver.recording.delays) >= told


# -- a lost answer to a POST ----------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_lost_post_answer_is_retried_with_the_same_key_and_makes_one_job(
    stack: Stack, mode: str
) -> None:
    key = stack.key()
    transport = edge(mode, drop_first="POST")
    driver = Driver(mode, stack.base, key, transport=transport)
    job = driver.run(lambda c: c.submit(["https://a.example/1", "https://a.example/2"]))
    posts = transport.requests("POST")
    assert len(posts) == 2
    keys = {p.headers["idempotency-key"] for p in posts}
    assert len(keys) == 1
    posts = stack.recorder.requests("POST", "/index-submit/jobs")
    assert [p.status for p in posts] == [202, 202]
    assert posts[1].response_headers.get("idempotent-replayed") == "true"
    assert [j.id for j in stack.jobs_of(key)] == [job.job_id]  # one job, the one we got


# -- long polls -----------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_long_poll_sends_prefer_wait(stack: Stack, mode: str) -> None:
    key = stack.key()
    driver = Driver(mode, stack.base, key)
    policy = PollPolicy(start=0.2, ceiling=1, deadline=60, long_poll=5, first_long_polls=0)

    async def scenario(c: Any) -> tuple[Any, Any]:
        created = await aw(c.submit(["https://a.example/lp"], engine="bing"))
        return created, await aw(c.wait("index_submit", created.job_id, policy=policy))

    created, done = driver.run(scenario)
    assert done.status == "completed"
    reads = stack.recorder.requests("GET", f"/index-submit/jobs/{created.job_id}")
    assert reads and all(r.headers.get("prefer") == "wait=5" for r in reads)
    # Held polls say so; one that found the job finished was answered at once, without it.
    applied = [r.response_headers.get("preference-applied") for r in reads]
    assert set(applied) <= {"wait=5", None}, applied

    plain = Driver(mode, stack.base, key)
    plain.run(lambda c: c.wait("index_submit", created.job_id, policy=FAST))
    last = stack.recorder.requests("GET", f"/index-submit/jobs/{created.job_id}")[-1]
    assert "prefer" not in last.headers


@pytest.mark.parametrize("mode", MODES)
def test_a_job_that_ends_at_once_is_reported_by_a_long_poll_not_a_period_later(
    stack: Stack, mode: str
) -> None:
    # Issue 27.6: with no policy given (the kind's hint, first poll 5 s or more after a
    # submission), the wait first asks Prefer: wait=20, and the server answers as the job ends.
    key = stack.key()
    driver = Driver(mode, stack.base, key)

    async def scenario(c: Any) -> tuple[Any, Any, PollPolicy]:
        created = await aw(c.submit(["https://a.example/now"], engine="bing"))
        done = await aw(c.wait("index_submit", created.job_id, poll_first=False))
        return created, done, await aw(c.poll_policy("index_submit"))

    created, done, hint = driver.run(scenario)
    assert done.status == "completed" and hint.start >= 2
    reads = stack.recorder.requests("GET", f"/index-submit/jobs/{created.job_id}")
    # At most: held until it started, held until it ended, (one spare for a slow worker).
    assert 1 <= len(reads) <= 3 and all(r.headers["prefer"] == "wait=20" for r in reads)
    # No sleep of the schedule: only the long polls' spacing (one a second at most).
    assert all(delay <= 1.0 for delay in driver.recording.delays), driver.recording.delays


# -- v2 batch status ------------------------------------------------------------------------------


def test_v2_batch_status_reports_completion(stack: Stack) -> None:
    key = stack.key()
    with Client(stack.base, key) as client:
        jobs = [client.submit([f"https://a.example/v{i}"], engine="bing") for i in range(3)]
        for job in jobs:
            client.wait("index_submit", job.job_id, policy=FAST)
        tasks = client.v2_status("bing", "indexer", [str(j.job_id) for j in jobs] + ["999999"])
    assert all(isinstance(t, V2Task) for t in tasks)
    assert sorted(t.id for t in tasks) == sorted(str(j.job_id) for j in jobs)  # unknown left out
    assert all(t.is_completed and t.size == 1 for t in tasks)
    batch = [s for s in stack.recorder.requests("POST", "/v2/task/bing/indexer/status")]
    assert len(batch) == 1  # one request for every id


def test_async_v2_status(stack: Stack) -> None:
    key = stack.key()

    async def main() -> list[V2Task]:
        async with AsyncClient(stack.base, key) as client:
            job = await client.submit(["https://a.example/av"], engine="bing")
            await client.wait("index_submit", job.job_id, policy=FAST)
            return await client.v2_status("bing", "indexer", [str(job.job_id)])

    [task] = asyncio.run(main())
    assert task.is_completed
