"""``GET /metrics``: the queue's gauges read from the database (jobs by type and state, the
oldest due job's wait, leases that ran out, busy workers, schedules on) and the process's own,
in Prometheus' text format; behind a bearer token when ``SEOJOBS_METRICS_TOKEN`` is set."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from seojobs.store import jobs as job_sql
from seojobs.store.coltypes import utcnow
from tests.api_helpers import Api, api, assert_problem
from tests.conftest import make_settings
from tests.dashboard_helpers import collected_job


@pytest.fixture
def app(store_url: str) -> Iterator[Api]:
    with api(make_settings(store_url)) as running:
        yield running


def _scrape(app: Api, headers: dict[str, str] | None = None) -> dict[tuple[str, tuple], float]:
    with httpx.Client(base_url=app.base, timeout=60) as client:  # no API key: an operator's scraper
        answer = client.get("/metrics", headers=headers)
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/plain; version=")
    found: dict[tuple[str, tuple], float] = {}
    for family in text_string_to_metric_families(answer.text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def test_the_queue_as_the_database_holds_it(app: Api) -> None:
    alice = app.account("alice")
    services = app.services
    empty = _scrape(app)
    assert empty[("seojobs_queue_oldest_due_seconds", ())] == 0
    assert empty[("seojobs_expired_leases", ())] == 0
    assert empty[("seojobs_workers_busy", ())] == 0
    zeros = {key: value for key, value in empty.items() if key[0] == "seojobs_jobs"}
    assert len(zeros) == 4 * len(app.services.registry.names())  # every type, every state
    assert set(zeros.values()) == {0}
    assert ("process_cpu_seconds_total", ()) in empty  # the process collector

    # First: it claims the oldest job due within two hours as a worker would.
    collected_job(services, alice.user, alice.user.default_project_id, {"pages": 1})
    later, _ = services.jobs.create(alice.user, "test_noop", {}, delay_seconds=3600)
    assert _scrape(app)[("seojobs_queue_oldest_due_seconds", ())] == 0  # not due yet
    due, _ = services.jobs.create(alice.user, "test_noop", {})
    held, _ = services.jobs.create(alice.user, "test_sleep", {"seconds": 1})
    db = services.db
    with db.write() as conn:  # a worker took it, with a lease that has already run out
        [claimed] = job_sql.claim(db, conn, "gone-worker", 1, utcnow(), 1e-6, kinds=["test_sleep"])
    assert claimed.id == held.id
    services.schedules.create(alice.user, name="nightly", kind="test_noop", params={}, every_days=1)
    snapshot = services.queue_snapshot()
    assert snapshot.oldest_due == due.run_at  # the delayed job is not due

    found = _scrape(app)
    jobs = {
        dict(labels)["type"] + "/" + dict(labels)["state"]: value
        for (name, labels), value in found.items()
        if name == "seojobs_jobs" and value
    }
    assert jobs == {
        "test_noop/pending": 2,
        "test_sleep/processing": 1,
        "test_crawl/completed": 1,
    }
    assert found[("seojobs_queue_oldest_due_seconds", ())] > 0
    assert found[("seojobs_expired_leases", ())] == 1
    assert found[("seojobs_workers_busy", ())] == 1
    assert found[("seojobs_schedules_enabled", ())] == 1
    assert later.id not in (due.id, held.id)


def test_a_token_guards_the_metrics(store_url: str) -> None:
    with api(make_settings(store_url, metrics_token="s3cret-token")) as app:
        with httpx.Client(base_url=app.base, timeout=60) as client:
            for headers in (
                {},
                {"Authorization": "Bearer wrong"},
                {"Authorization": "s3cret-token"},
            ):
                refused = client.get("/metrics", headers=headers)
                body = assert_problem(refused, 401)
                assert "SEOJOBS_METRICS_TOKEN" in body["detail"]
                assert refused.headers["www-authenticate"].startswith("Bearer")
                assert "seojobs_jobs" not in refused.text
        found = _scrape(app, {"Authorization": "Bearer s3cret-token"})
        assert ("seojobs_workers_busy", ()) in found
