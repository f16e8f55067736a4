"""A job this deployment cannot run (no provider for its engine) is refused at creation on
every surface: 422 problem+json naming the settings to set, nothing stored, nothing charged, no
follow-up. A schedule whose provider went away fires a failed job with the same code. With
SEOJOBS_CHECK_DIAGNOSTICS_ONLY, index checks run anyway: diagnostics, verdict ``unknown``."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from seojobs.engine import maintenance
from seojobs.kinds import load_registry
from seojobs.services import Services
from seojobs.services.quotas import day_start
from seojobs.store.coltypes import utcnow
from seojobs.store.db import Database
from tests.api_helpers import V1, Api, Providers, api, assert_problem, stored
from tests.conftest import NO_PROVIDERS, make_settings
from tests.waiting import wait_until

URLS = ["https://a.example/1", "https://a.example/2"]
# The shipped provider orders (the test settings narrow them to the fakes they run): unset,
# the kinds' declared ones.
SHIPPED_ORDERS = {name: None for name in ("submit_providers", "check_providers")}


def _refused(response: Any, field: str, *settings: str) -> None:
    body = assert_problem(response, 422)
    assert body["type"].endswith("/provider_not_configured"), body
    [error] = body["errors"]
    assert error["field"] == field
    for name in settings:
        assert name in error["message"] and name in body["detail"]


def _nothing_charged(app: Api, account: Any) -> None:
    assert all(use.used == 0 for use in app.services.quotas.usage(account.user).values())


def test_every_creation_path_refuses_a_job_without_a_provider(store_url: str) -> None:
    with api(make_settings(store_url, **NO_PROVIDERS, **SHIPPED_ORDERS)) as app:
        alice = app.account()
        client = app.client(alice)
        before = stored(app)
        submit = client.post(f"{V1}/index-submit/jobs", json={"urls": URLS, "engine": "bing"})
        _refused(submit, "engine", "SEOJOBS_INDEXNOW_KEY")
        check = client.post(f"{V1}/index-check/jobs", json={"urls": URLS, "engine": "bing"})
        _refused(check, "engine", "SEOJOBS_SERPAPI_KEY", "SEOJOBS_DATAFORSEO_LOGIN")
        v2 = client.post("/v2/task/yandex/indexer/create", json={"urls": URLS})
        _refused(v2, "engine", "SEOJOBS_INDEXNOW_KEY")
        project = client.post("/v1/projects", json={"name": "p"}).json()["data"]["id"]
        before = stored(app)
        job = {"type": "index_check", "params": {"urls": URLS}}
        _refused(client.post(f"/v1/projects/{project}/jobs", json=job), "params.engine")
        schedule = {"name": "daily", "every_days": 1, **job}
        made = client.post(f"/v1/projects/{project}/schedules", json=schedule)
        _refused(made, "params.engine", "SEOJOBS_GOOGLE_CREDENTIALS_FILE")
        assert stored(app) == before
        _nothing_charged(app, alice)


def test_a_submission_whose_follow_up_check_has_no_provider_is_refused(store_url: str) -> None:
    # Submission yes, checks no.
    settings = make_settings(store_url, serpapi_key=None, dataforseo_login=None)
    with api(settings) as app:
        alice = app.account()
        client = app.client(alice)
        before = stored(app)
        body = {"urls": URLS, "engine": "bing", "checker": 3}
        _refused(client.post(f"{V1}/index-submit/jobs", json=body), "checker", "SERPAPI_KEY")
        assert stored(app) == before
        _nothing_charged(app, alice)
        # Without the follow-up, the same submission is accepted.
        accepted = client.post(f"{V1}/index-submit/jobs", json={"urls": URLS, "engine": "bing"})
        assert accepted.status_code == 202, accepted.text


def test_a_schedule_whose_provider_went_away_fires_a_failed_job(store_url: str) -> None:
    settings = make_settings(store_url)
    db = Database(store_url)
    try:
        services = Services(db, settings, load_registry(settings))
        user = services.accounts.create_user("alice").user
        t0 = day_start(utcnow()) + timedelta(hours=1)
        made = services.schedules.create(
            user, name="c", kind="index_check", params={"urls": URLS}, every_seconds=3600
        )
        # The operator removes the key and restarts: the schedule still fires.
        gone = make_settings(store_url, **NO_PROVIDERS)
        later = Services(db, gone, load_registry(gone))
        tick = maintenance.run_once(db, gone, "a", t0 + timedelta(days=1), later.schedules.fire)
        assert tick.fired == 1
        [job] = later.jobs.page(user)
        assert job.schedule_id == made.id
        assert (job.state, job.error_code) == ("failed", "provider_not_configured")
        assert "SEOJOBS_SERPAPI_KEY" in (job.error_message or "")
        assert all(use.used == 0 for use in later.quotas.usage(user).values())
    finally:
        db.dispose()


def test_diagnostics_only_checks_run_without_a_provider(store_url: str, fakes: Providers) -> None:
    settings = fakes.settings(store_url, check_diagnostics_only=True, **NO_PROVIDERS)
    settings = settings.model_copy(update={"serper_key": None})
    with api(settings, run_worker=True) as app:
        alice = app.account()
        client = app.client(alice)
        urls = [fakes.site_base + "/ok", fakes.site_base + "/noindex-meta"]
        made = client.post(f"{V1}/index-check/jobs", json={"urls": urls})
        assert made.status_code == 202, made.text
        job_id = made.json()["job_id"]

        def done() -> dict[str, Any] | None:
            body: dict[str, Any] = client.get(f"{V1}/index-check/jobs/{job_id}").json()
            return body if body["status"] in ("completed", "failed") else None

        body = wait_until(done)
        assert (body["status"], body["failed_count"], body["checked_urls"]) == ("completed", 0, 2)
        items = app.services.jobs.items(alice.user, job_id)
        assert [i.outcome for i in items] == ["unknown", "unknown"]
        assert {i.result["provider"] for i in items} == {"none"}
        assert items[0].result["diagnostics"]["http_status"] == 200
        assert fakes.serper.requests == []
        # Submissions are still refused: only checks have a diagnostics-only mode.
        submit = client.post(f"{V1}/index-submit/jobs", json={"urls": urls, "engine": "bing"})
        _refused(submit, "engine", "SEOJOBS_INDEXNOW_KEY")
