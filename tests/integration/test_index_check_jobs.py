"""index_check jobs end to end: provider verdict + indexability diagnostics per URL, and the
scheduled follow-up check of a submission."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from sqlalchemy import func, select

from seojobs.engine.worker import Worker
from seojobs.kinds import load_registry
from seojobs.services import Services, indexing
from seojobs.settings import Settings
from seojobs.store.db import Database
from seojobs.store.tables import jobs
from tests.conftest import NO_PROVIDERS, make_settings
from tests.fakes.indexnow import FakeIndexNow
from tests.fakes.serp import FakeDataForSeo, FakeSerper, Reply
from tests.fakes.server import serve
from tests.fakes.site import FixtureSite, running_site
from tests.waiting import await_until


@pytest.fixture
def site() -> Iterator[tuple[FixtureSite, str]]:
    with running_site() as (fixture, base):
        yield fixture, base


@pytest.fixture
def serper() -> Iterator[FakeSerper]:
    fake = FakeSerper()
    with serve(fake.app) as base:
        fake.base_url = base
        yield fake


def check_settings(store_url: str, serper: FakeSerper, **extra: object) -> Settings:
    values: dict[str, object] = {
        "serper_key": "serper-key",
        "serper_base_url": serper.base_url,
        "check_providers": {"google": ["serper"]},
        "allow_private_networks": True,  # the fixture site lives on loopback
        "provider_backoff": 0.01,
    }
    values.update(extra)
    return make_settings(store_url, **values)


class Stack:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.db = Database(settings.database_url)
        self.registry = load_registry(settings)
        self.services = Services(self.db, settings, self.registry)
        self.user = self.services.accounts.create_user("alice").user

    def create(self, kind: str, urls: list[str], **params: object) -> int:
        job, _ = self.services.jobs.create(self.user, kind, {"urls": urls, **params})
        return job.id

    def job(self, job_id: int):  # type: ignore[no-untyped-def]
        return self.services.jobs.get(self.user, job_id)

    async def until(self, predicate, timeout: float = 30):  # type: ignore[no-untyped-def]
        async def check():  # type: ignore[no-untyped-def]
            return await asyncio.to_thread(predicate)

        return await await_until(check, timeout=timeout)

    async def run(self, job_id: int, workers: int = 1) -> None:
        running = [Worker(self.db, self.settings, self.registry) for _ in range(workers)]
        tasks = [asyncio.create_task(w.run()) for w in running]
        try:
            await self.until(lambda: self.job(job_id).state in ("completed", "failed"))
        finally:
            for w in running:
                w.stop()
            await asyncio.wait_for(asyncio.gather(*tasks), 30)


@pytest.fixture
def stacks() -> Iterator[list[Stack]]:
    made: list[Stack] = []
    yield made
    for s in made:
        s.db.dispose()


async def test_check_reports_verdicts_with_diagnostics(
    store_url,
    site,
    serper,
    stacks,  # type: ignore[no-untyped-def]
) -> None:
    fixture, base = site
    serper.index("google", f"{base}/ok", f"{base}/plain")
    stack = Stack(check_settings(store_url, serper))
    stacks.append(stack)
    paths = ["/ok", "/plain", "/noindex-meta", "/private/page", "/gone", "/canonical-other"]
    job_id = stack.create("index_check", [base + p for p in paths])
    await stack.run(job_id)
    body = indexing.check_status(stack.job(job_id))
    assert body["status"] == "completed"
    assert (body["checked_urls"], body["indexed_count"], body["not_indexed_count"]) == (6, 2, 4)
    assert body["failed_count"] == 0 and body["progress_percent"] == 100
    rows = {i.input.removeprefix(base): i for i in stack.services.jobs.items(stack.user, job_id)}
    assert rows["/ok"].outcome == "indexed" and rows["/noindex-meta"].outcome == "not_indexed"
    diag = {path: row.result["diagnostics"] for path, row in rows.items()}
    assert all(row.result["provider"] == "serper" for row in rows.values())
    assert diag["/ok"]["canonical_state"] == "self"
    assert diag["/noindex-meta"]["indexing_state"] == "BLOCKED_BY_META_TAG"
    assert diag["/private/page"]["robots_txt_state"] == "DISALLOWED"
    assert diag["/gone"]["http_status"] == 410
    assert diag["/gone"]["page_fetch_state"] == "NOT_FOUND"
    assert diag["/canonical-other"]["canonical_state"] == "other"
    assert fixture.count("/private/page") == 0  # robots.txt is obeyed


async def test_check_of_a_loopback_url_is_refused_by_the_guard(
    store_url,
    site,
    serper,
    stacks,  # type: ignore[no-untyped-def]
) -> None:
    fixture, base = site
    stack = Stack(check_settings(store_url, serper, allow_private_networks=False))
    stacks.append(stack)
    job_id = stack.create("index_check", [base + "/ok"])
    await stack.run(job_id)
    [row] = stack.services.jobs.items(stack.user, job_id)
    assert row.outcome == "not_indexed"  # the provider still answered
    assert row.result["diagnostics"]["fetch_error_kind"] == "ssrf_refused"
    assert fixture.count() == 0  # nothing reached the site


async def test_bad_provider_credentials_fail_the_job(store_url, site, serper, stacks) -> None:  # type: ignore[no-untyped-def]
    _fixture, base = site
    stack = Stack(check_settings(store_url, serper, serper_key="wrong"))
    stacks.append(stack)
    job_id = stack.create("index_check", [base + "/ok", base + "/plain"])
    await stack.run(job_id)
    job = stack.job(job_id)
    assert job.state == "failed" and job.error_code == "provider_auth_failed"


@pytest.mark.stores("sqlite")
@pytest.mark.parametrize(
    ("reply", "code", "calls"),
    [
        (Reply(503, {"message": "Service Unavailable", "statusCode": 503}), "upstream_error", 4),
        (Reply(403, {"message": "Unauthorized.", "statusCode": 403}), "provider_auth_failed", 1),
    ],
)
async def test_a_provider_failing_hands_every_url_to_the_next(  # type: ignore[no-untyped-def]
    store_url, site, serper, stacks, reply, code, calls
) -> None:
    """Serper answers 503 (after its retry) or a refused key to every call: DataForSEO, next in
    order, answers every URL, and each names both (issue 29.6)."""
    _fixture, base = site
    serper.script(*[reply] * 4)
    dataforseo = FakeDataForSeo()
    dataforseo.index("google", f"{base}/ok")
    with serve(dataforseo.app) as dfs_base:
        settings = check_settings(
            store_url, serper, check_providers={"google": ["serper", "dataforseo"]},
            dataforseo_login="dfs-login", dataforseo_password="dfs-password",
            dataforseo_base_url=dfs_base, provider_retries=1, index_check_concurrency=1,
        )  # fmt: skip
        stack = Stack(settings)
        stacks.append(stack)
        job_id = stack.create("index_check", [base + "/ok", base + "/plain"])
        await stack.run(job_id)
    body = indexing.check_status(stack.job(job_id))
    assert body["status"] == "completed" and body["failed_count"] == 0, body
    rows = stack.services.jobs.items(stack.user, job_id)
    assert [r.outcome for r in rows] == ["indexed", "not_indexed"]
    assert [r.result["provider"] for r in rows] == ["dataforseo", "dataforseo"]
    assert [[(f["provider"], f["code"]) for f in r.result["failed_over"]] for r in rows] == [
        [("serper", code)], [("serper", code)]]  # fmt: skip
    assert len(serper.requests) == calls  # a refused key is not asked again in the job
    assert len(dataforseo.requests) == 2


async def test_provider_errors_fail_only_their_urls(store_url, site, serper, stacks) -> None:  # type: ignore[no-untyped-def]
    _fixture, base = site
    serper.script(Reply(500), Reply(500), Reply(500))  # first URL: try + 2 retries
    stack = Stack(check_settings(store_url, serper, index_check_concurrency=1, provider_retries=2))
    stacks.append(stack)
    job_id = stack.create("index_check", [base + "/ok", base + "/plain"])
    await stack.run(job_id)
    body = indexing.check_status(stack.job(job_id))
    assert body["status"] == "completed" and body["failed_count"] == 1
    first = stack.services.jobs.items(stack.user, job_id)[0]
    assert first.error_code == "upstream_error"
    assert first.result["diagnostics"]["page_fetch_state"] == "SUCCESSFUL"


async def test_no_configured_checker_fails_with_the_settings_to_set(store_url, stacks) -> None:  # type: ignore[no-untyped-def]
    stack = Stack(make_settings(store_url))
    stacks.append(stack)
    job_id = stack.create("index_check", ["https://a.example/"], engine="bing")
    # The key went away between creation (which refuses such a job) and the run.
    stack.settings = make_settings(store_url, **NO_PROVIDERS)
    await stack.run(job_id)
    job = stack.job(job_id)
    assert job.state == "failed" and job.error_code == "provider_not_configured"
    assert "SEOJOBS_SERPAPI_KEY" in job.error_message


async def test_follow_up_check_fires_once_with_three_workers(
    store_url,
    site,
    serper,
    stacks,  # type: ignore[no-untyped-def]
) -> None:
    _fixture, base = site
    fake = FakeIndexNow()
    with serve(fake.app()) as indexnow_base:
        settings = check_settings(
            store_url,
            serper,
            day_seconds=0.5,
            indexnow_key="0123456789abcdef",
            indexnow_endpoint=indexnow_base + "/indexnow",
            submit_providers={"google": ["indexnow"]},
        )
        stack = Stack(settings)
        stacks.append(stack)
        serper.index("google", f"{base}/ok")
        submission = stack.create("index_submit", [base + "/ok", base + "/plain"], checker=1)
        early = indexing.submission_status(stack.services, stack.job(submission))
        assert early["scheduled_check_status"] == "pending"
        assert early["scheduled_check_run_id"] is None
        assert early["scheduled_check_at"] is not None
        running = [Worker(stack.db, settings, stack.registry) for _ in range(3)]
        tasks = [asyncio.create_task(w.run()) for w in running]
        try:
            final = await stack.until(
                lambda: (
                    (b := indexing.submission_status(stack.services, stack.job(submission)))[
                        "scheduled_check_status"
                    ]
                    in ("completed", "failed")
                    and b
                )
            )
        finally:
            for w in running:
                w.stop()
            await asyncio.wait_for(asyncio.gather(*tasks), 30)
    assert final["status"] == "completed" and final["successful_count"] == 2
    assert final["scheduled_check_status"] == "completed"
    check = stack.job(final["scheduled_check_run_id"])
    assert check.kind == "index_check" and check.parent_id == submission
    assert check.started_at >= check.run_at
    assert check.counters == {"indexed": 1, "not_indexed": 1}
    with stack.db.read() as conn:
        children = conn.execute(
            select(func.count()).select_from(jobs).where(jobs.c.parent_id == submission)
        ).scalar_one()
    assert children == 1
