"""index_submit jobs end to end: engine + provider adapter + fake provider on loopback."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from seojobs.engine.worker import Worker
from seojobs.kinds import load_registry
from seojobs.services import Invalid, Services, indexing
from seojobs.services.quotas import day_start
from seojobs.settings import Settings
from seojobs.store.db import Database
from seojobs.timefmt import rfc3339
from tests.conftest import make_settings
from tests.fakes.google import (
    INDEXING_SCOPE,
    TOKEN_PATH,
    FakeIndexingApi,
    FakeTokenEndpoint,
    ServiceAccountKey,
)
from tests.fakes.indexnow import FakeIndexNow, Reply
from tests.fakes.server import serve
from tests.waiting import await_until

KEY = "0123456789abcdef"


@pytest.fixture
def indexnow() -> Iterator[tuple[FakeIndexNow, str]]:
    fake = FakeIndexNow()
    with serve(fake.app()) as base:
        yield fake, base + "/indexnow"


def settings_with(store_url: str, endpoint: str, **extra: object) -> Settings:
    return make_settings(
        store_url,
        indexnow_key=KEY,
        indexnow_endpoint=endpoint,
        provider_backoff=0.01,
        provider_retries=2,
        **extra,
    )


class Stack:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.db = Database(settings.database_url)
        self.registry = load_registry(settings)
        self.services = Services(self.db, settings, self.registry)
        self.user = self.services.accounts.create_user("alice").user

    def submit(self, urls: list[str], **params: object) -> int:
        job, _ = self.services.jobs.create(self.user, "index_submit", {"urls": urls, **params})
        return job.id

    def status(self, job_id: int) -> dict[str, object]:
        return indexing.submission_status(self.services, self.services.jobs.get(self.user, job_id))

    async def finished(self, job_id: int) -> dict[str, object]:
        async def check() -> dict[str, object] | None:
            body = await asyncio.to_thread(self.status, job_id)
            return body if body["status"] in ("completed", "failed") else None

        return await await_until(check)

    async def run(self, *job_ids: int) -> list[dict[str, object]]:
        worker = Worker(self.db, self.settings, self.registry)
        task = asyncio.create_task(worker.run())
        try:
            return [await self.finished(j) for j in job_ids]
        finally:
            worker.stop()
            await asyncio.wait_for(task, 30)


@pytest.fixture
def stack_factory(store_url: str) -> Iterator[object]:
    made: list[Stack] = []

    def make(settings: Settings) -> Stack:
        made.append(Stack(settings))
        return made[-1]

    yield make
    for s in made:
        s.db.dispose()


async def test_submission_to_indexnow_one_post_per_host(store_url, indexnow, stack_factory) -> None:  # type: ignore[no-untyped-def]
    fake, endpoint = indexnow
    stack = stack_factory(settings_with(store_url, endpoint))
    urls = [f"https://a.example/p{i}" for i in range(20)] + [
        f"https://b.example/p{i}" for i in range(10)
    ]
    job_id = stack.submit(urls + urls[:3], engine="bing")
    [body] = await stack.run(job_id)
    assert body["status"] == "completed"
    assert body["total_urls"] == 30  # duplicates removed
    assert (body["submitted_urls"], body["successful_count"], body["failed_count"]) == (30, 30, 0)
    assert body["progress_percent"] == 100 and body["success_percent"] == 100
    assert sorted(s.host for s in fake.submissions) == ["a.example", "b.example"]
    assert fake.urls_for("a.example") == urls[:20]
    items = stack.services.jobs.items(stack.user, job_id)
    assert {i.outcome for i in items} == {"submitted"}
    assert all(i.result and i.result["provider"] == "indexnow" for i in items)


async def test_engine_without_provider_is_refused_naming_the_setting(
    store_url,
    indexnow,
    stack_factory,  # type: ignore[no-untyped-def]
) -> None:
    _fake, endpoint = indexnow
    shipped = {"google": ["google_indexing"], "bing": ["indexnow"]}
    stack = stack_factory(settings_with(store_url, endpoint, submit_providers=shipped))
    with pytest.raises(Invalid) as refused:
        stack.submit(["https://a.example/"], engine="google")
    assert refused.value.code == "provider_not_configured"
    assert "SEOJOBS_GOOGLE_CREDENTIALS_FILE" in str(refused.value)
    assert stack.services.jobs.page(stack.user) == []


async def test_provider_429_is_retried_then_succeeds(store_url, indexnow, stack_factory) -> None:  # type: ignore[no-untyped-def]
    fake, endpoint = indexnow
    fake.answer(Reply(429, headers={"Retry-After": "0"}), Reply(429, headers={"Retry-After": "0"}))
    stack = stack_factory(settings_with(store_url, endpoint))
    job_id = stack.submit([f"https://a.example/{i}" for i in range(5)], engine="yandex")
    [body] = await stack.run(job_id)
    assert body["status"] == "completed" and body["successful_count"] == 5
    assert [s.status for s in fake.submissions] == [429, 429, 200]


async def test_persistent_5xx_fails_the_urls_not_the_job(
    store_url, indexnow, stack_factory
) -> None:  # type: ignore[no-untyped-def]
    fake, endpoint = indexnow
    fake.always(Reply(503), host="down.example")
    stack = stack_factory(settings_with(store_url, endpoint))
    urls = ["https://down.example/1", "https://down.example/2", "https://up.example/1"]
    job_id = stack.submit(urls, engine="bing")
    [body] = await stack.run(job_id)
    assert body["status"] == "completed"
    assert (body["successful_count"], body["failed_count"]) == (1, 2)
    assert body["success_percent"] == 33
    items = {i.input: i for i in stack.services.jobs.items(stack.user, job_id)}
    assert items["https://down.example/1"].error_code == "upstream_error"
    assert items["https://up.example/1"].outcome == "submitted"
    assert len(fake.posts_for("down.example")) == 3  # one try plus two retries


async def test_malformed_provider_answer_fails_items_cleanly(
    store_url,
    indexnow,
    stack_factory,  # type: ignore[no-untyped-def]
) -> None:
    fake, endpoint = indexnow
    fake.answer_host("odd.example", Reply(302, b"<html>moved</html>", {"Location": "https://x/"}))
    stack = stack_factory(settings_with(store_url, endpoint))
    job_id = stack.submit(["https://odd.example/1", "https://odd.example/2"], engine="bing")
    second = stack.submit(["https://a.example/3"], engine="bing")
    first_body, second_body = await stack.run(job_id, second)
    assert first_body["status"] == "completed" and first_body["failed_count"] == 2
    codes = {i.error_code for i in stack.services.jobs.items(stack.user, job_id)}
    assert codes == {"malformed_response"}
    assert second_body["successful_count"] == 1  # the worker carried on


async def test_daily_quota_refuses_the_job_that_would_exceed_it(
    store_url,
    indexnow,
    stack_factory,  # type: ignore[no-untyped-def]
) -> None:
    _fake, endpoint = indexnow
    stack = stack_factory(settings_with(store_url, endpoint, quota_submit_daily=10))
    ok = stack.submit([f"https://a.example/{i}" for i in range(8)], engine="bing")
    over = stack.submit([f"https://a.example/x{i}" for i in range(5)], engine="bing")
    refused = stack.status(over)
    assert refused["status"] == "failed"
    assert refused["error"]["code"] == "quota_exceeded"
    reset = rfc3339(day_start(stack.services.clock()) + timedelta(days=1))
    assert reset in refused["error"]["message"]
    usage = stack.services.quotas.usage(stack.user)
    assert (usage["submit"].used, usage["submit"].remaining) == (8, 2)
    assert usage["check"].used == 0
    fits = stack.submit(["https://a.example/y1", "https://a.example/y2"], engine="bing")
    assert stack.status(fits)["status"] == "pending"
    [body] = await stack.run(ok)
    assert body["status"] == "completed"


async def test_per_user_quota_override(store_url, indexnow, stack_factory) -> None:  # type: ignore[no-untyped-def]
    _fake, endpoint = indexnow
    stack = stack_factory(settings_with(store_url, endpoint, quota_submit_daily=1))
    stack.user = stack.services.quotas.set_limits(stack.user, {"submit_daily": 3})
    job = stack.submit(["https://a.example/1", "https://a.example/2", "https://a.example/3"])
    assert stack.status(job)["status"] == "pending"


async def test_cancelling_a_submission_cancels_its_follow_up(
    store_url,
    indexnow,
    stack_factory,  # type: ignore[no-untyped-def]
) -> None:
    _fake, endpoint = indexnow
    stack = stack_factory(settings_with(store_url, endpoint))
    job_id = stack.submit(["https://a.example/1"], engine="bing", checker=2)
    body = stack.status(job_id)
    assert body["scheduled_check_days"] == 2
    assert body["scheduled_check_status"] == "pending"
    assert body["scheduled_check_run_id"] is None
    stack.services.jobs.cancel(stack.user, job_id)
    after = stack.status(job_id)
    assert after["status"] == "failed" and after["scheduled_check_status"] == "failed"


@pytest.fixture
def google(tmp_path: Path) -> Iterator[tuple[FakeIndexingApi, str, Path]]:
    key = ServiceAccountKey()
    tokens = FakeTokenEndpoint(INDEXING_SCOPE)
    tokens.trust(key)
    api = FakeIndexingApi(tokens)
    with serve(api.app()) as base:
        yield api, base, key.write(tmp_path / "sa.json", base + TOKEN_PATH)


async def test_google_submission_in_batches_of_100(store_url, google, stack_factory) -> None:  # type: ignore[no-untyped-def]
    api, base, credentials = google
    stack = stack_factory(
        make_settings(
            store_url,
            google_credentials_file=str(credentials),
            google_indexing_base_url=base,
            provider_backoff=0.01,
        )
    )
    urls = [f"https://jobs.example/posting/{i}" for i in range(250)]
    job_id = stack.submit(urls, engine="google")
    [body] = await stack.run(job_id)
    assert body["status"] == "completed" and body["successful_count"] == 250
    assert sorted(api.published()) == sorted(urls)


async def test_bad_google_credentials_fail_the_whole_job(
    store_url, tmp_path, stack_factory
) -> None:  # type: ignore[no-untyped-def]
    bad = tmp_path / "sa.json"
    bad.write_text("{not json")
    stack = stack_factory(make_settings(store_url, google_credentials_file=str(bad)))
    job_id = stack.submit(["https://jobs.example/1"], engine="google")
    [body] = await stack.run(job_id)
    assert body["status"] == "failed"
    assert body["error"]["code"] == "provider_auth_failed"
    assert "SEOJOBS_GOOGLE_CREDENTIALS_FILE" in body["error"]["message"]
