"""What each process counts (issue 26.3) and the request id: HTTP requests by route template
and status with their latency, rate-limit refusals, provider calls by provider and outcome,
claims, lease rescues and job durations, on ``GET /metrics``; ``X-Request-ID`` kept or made,
echoed, and on the worker's log lines of the job the request made.

The counters belong to the process (the suite starts many apps in one), so each test reads
how much they grew across what it did.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from datetime import timedelta

import httpx
import pytest
from opentelemetry import metrics as otel_metrics
from opentelemetry import trace as otel_trace
from prometheus_client.parser import text_string_to_metric_families

from seojobs.engine import maintenance
from seojobs.logfmt import RequestIdFilter
from seojobs.providers.base import ProviderError
from seojobs.providers.serper import SerperChecker
from seojobs.settings import Settings
from seojobs.store import jobs as job_sql
from seojobs.store.coltypes import utcnow
from tests.api_helpers import Api, api
from tests.conftest import make_settings
from tests.fakes.serp import FakeSerper, RecordingSleep, Reply
from tests.fakes.server import serve
from tests.waiting import run_until_final

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def _scrape(app: Api) -> Samples:
    # httpx's default 5 s timeout: a scrape counts every job, and on a loaded CI machine it
    # once took longer (a timed-out test, not a slow product).
    with httpx.Client(base_url=app.base, timeout=60) as client:
        answer = client.get("/metrics")
    assert answer.status_code == 200, answer.text
    found: Samples = {}
    for family in text_string_to_metric_families(answer.text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def _grew(before: Samples, after: Samples, name: str, **labels: str) -> float:
    key = (name, tuple(sorted(labels.items())))
    return after.get(key, 0.0) - before.get(key, 0.0)


@pytest.fixture
def app(sqlite_url: str) -> Iterator[Api]:
    with api(make_settings(sqlite_url)) as running:
        yield running


def test_requests_by_route_template_and_status(app: Api) -> None:
    alice = app.account(rate_limit="3/minute")
    client = app.client(alice)
    job, _ = app.services.jobs.create(alice.user, "test_noop", {})
    before = _scrape(app)
    assert client.get(f"/v1/jobs/{job.id}").status_code == 200
    assert client.get("/v1/jobs/999999999").status_code == 404
    assert client.get("/v1/projects").status_code == 200
    assert client.get("/v1/projects").status_code == 429  # the budget of 3 is spent
    assert client.get("/no/such/path").status_code == 404
    after = _scrape(app)

    requests = "seojobs_http_requests_total"
    route = "/v1/jobs/{job_id}"  # the template: one series for every job id
    assert _grew(before, after, requests, method="GET", route=route, status="200") == 1
    assert _grew(before, after, requests, method="GET", route=route, status="404") == 1
    assert _grew(before, after, requests, method="GET", route="/v1/projects", status="429") == 1
    assert _grew(before, after, requests, method="GET", route="unmatched", status="404") == 1
    routes = {value for _name, labels in after for key, value in labels if key == "route"}
    assert f"/v1/jobs/{job.id}" not in routes and "/no/such/path" not in routes  # templates
    latency = "seojobs_http_request_duration_seconds_count"
    assert _grew(before, after, latency, method="GET", route=route) == 2
    assert _grew(before, after, "seojobs_rate_limit_rejections_total", policy="user") == 1


def test_requests_never_ask_for_opentelemetry_providers(
    app: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    # FastAPI's own OpenTelemetry hooks are off: seojobs counts on /metrics, and FastAPI asked
    # for the global providers (reading the environment) on every request, about 10 us of
    # each status GET (bench/api.py).
    asked: list[str] = []
    for module, getter in (
        (otel_trace, "get_tracer_provider"),
        (otel_metrics, "get_meter_provider"),
    ):
        real = getattr(module, getter)
        monkeypatch.setattr(
            module, getter, lambda real=real, name=getter: asked.append(name) or real()
        )
    alice = app.account()
    job, _ = app.services.jobs.create(alice.user, "test_noop", {})
    client = app.client(alice, in_process=True)
    assert client.get(f"/v1/jobs/{job.id}").status_code == 200
    assert asked == []


def test_request_id_kept_made_and_echoed(app: Api) -> None:
    client = app.client(app.account())
    given = client.get("/v1/projects", headers={"X-Request-ID": "edge-7f3a:42"})
    assert given.headers["x-request-id"] == "edge-7f3a:42"
    for unusable in ("has spaces in it", "x" * 129, ""):
        made = client.get("/v1/projects", headers={"X-Request-ID": unusable})
        assert re.fullmatch(r"[0-9a-f]{24}", made.headers["x-request-id"]), unusable
    first = client.get("/healthz").headers["x-request-id"]
    assert first != client.get("/healthz").headers["x-request-id"]
    refused = app.client().get("/v1/projects", headers={"X-Request-ID": "no-key-1"})
    assert (refused.status_code, refused.headers["x-request-id"]) == (401, "no-key-1")


async def test_claims_durations_and_rescues(app: Api) -> None:
    services = app.services
    alice = app.account()
    before = _scrape(app)
    done, _ = services.jobs.create(alice.user, "test_noop", {})
    await run_until_final(services, alice.user, done)
    failed, _ = services.jobs.create(alice.user, "test_fail", {})
    await run_until_final(services, alice.user, failed)
    held, _ = services.jobs.create(alice.user, "test_sleep", {"seconds": 1})
    db = services.db
    now = utcnow()
    with db.write() as conn:  # a worker took it and died: its lease has run out
        [claimed] = job_sql.claim(db, conn, "gone-worker", 1, now, 1e-6, kinds=["test_sleep"])
    assert claimed.id == held.id
    report = maintenance.run_once(db, services.settings, "leader", now + timedelta(seconds=1))
    assert report.resumed == 1
    after = _scrape(app)

    assert _grew(before, after, "seojobs_jobs_claimed_total", type="test_noop") == 1
    assert _grew(before, after, "seojobs_jobs_claimed_total", type="test_fail") == 1
    durations = "seojobs_job_duration_seconds_count"
    assert _grew(before, after, durations, type="test_noop", outcome="completed") == 1
    assert _grew(before, after, durations, type="test_fail", outcome="failed") == 1
    assert _grew(before, after, "seojobs_lease_rescues_total", outcome="resumed") == 1


@pytest.mark.stores("sqlite")
async def test_provider_calls_by_provider_and_outcome(app: Api) -> None:
    fake = FakeSerper()
    with serve(fake.app) as base:
        fake.base_url = base
        settings = Settings(
            database_url="sqlite://",
            serper_key=fake.key,
            serper_base_url=base,
            provider_retries=1,
            provider_backoff=0.01,
        )
        checker = SerperChecker(settings, sleep=RecordingSleep())
        try:
            before = _scrape(app)
            fake.index("google", "https://example.com/a")
            await checker.check("https://example.com/a", "google")
            fake.script(Reply(503, {"message": "busy"}), Reply(503, {"message": "busy"}))
            with pytest.raises(ProviderError) as failed:
                await checker.check("https://example.com/b", "google")
            after = _scrape(app)
        finally:
            await checker.aclose()
    calls = "seojobs_provider_calls_total"
    assert _grew(before, after, calls, provider="serper", outcome="ok") == 1
    # Each attempt counts: the first and its one retry.
    assert _grew(before, after, calls, provider="serper", outcome=failed.value.code) == 2
    timed = "seojobs_provider_call_duration_seconds_count"
    assert _grew(before, after, timed, provider="serper") == 3


async def test_a_jobs_worker_log_lines_carry_the_request_that_made_it(
    app: Api, caplog: pytest.LogCaptureFixture
) -> None:
    alice = app.account()
    answer = app.client(alice).post(
        f"/v1/projects/{alice.user.default_project_id}/jobs",
        json={"type": "test_fail", "params": {}},
        headers={"X-Request-ID": "edge-job:7"},
    )
    assert answer.status_code == 202, answer.text
    job = app.services.jobs.get(alice.user, int(answer.json()["data"]["id"]))
    assert job.request_id == "edge-job:7"
    other, _ = app.services.jobs.create(alice.user, "test_fail", {})  # made by no request
    assert other.request_id is None
    caplog.handler.addFilter(RequestIdFilter())  # what the server's handler has (logfmt)
    with caplog.at_level(logging.INFO, logger="seojobs.worker"):
        await run_until_final(app.services, alice.user, job)
        await run_until_final(app.services, alice.user, other)

    def ids_on_lines(job_id: int) -> set[str | None]:
        lines = [r for r in caplog.records if f"job={job_id} " in r.getMessage()]
        assert len(lines) >= 2, [r.getMessage() for r in caplog.records]  # start and end
        return {getattr(r, "request_id", "unset") for r in lines}

    assert ids_on_lines(job.id) == {"edge-job:7"}
    assert ids_on_lines(other.id) == {None}
