"""The v1 indexing API over real HTTP: creation (202), status bodies in every state, auth, 404s
and ``Prefer: wait`` long-polls. Validation, idempotency, lists and reports have their own
``test_api_v1_*.py`` files.

``idle``, ``working`` (with its worker and the module's fakes) and ``one_a_day`` are one app
each per store for the module; each test works as its own new users."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from tests.api_helpers import (
    FIELDS,
    SUBMIT_FIELDS,
    TERMINAL,
    V1,
    Api,
    Providers,
    api,
    assert_problem,
    auth_headers,
    owned,
    retry_after,
    shared_api,
    shared_idle_per_test,  # noqa: F401  (this module's ``idle``: one app per store)
    when,
)
from tests.waiting import wait_until

KINDS = ["index-submit", "index-check"]


@pytest.fixture
def working(shared_working: Api) -> Iterator[Api]:
    """The module's app with its worker and the module's fakes (one per store), as this
    test's own users."""
    yield from owned(shared_working)


@pytest.fixture
def fakes(shared_fakes: Providers) -> Iterator[Providers]:
    """The module's fakes with no request recorded, no reply scripted, nothing indexed, and
    /hold holding; released after the test (a job it left there ends)."""
    shared_fakes.serper.forget()
    shared_fakes.indexnow.forget()
    shared_fakes.site.release.clear()
    yield shared_fakes
    shared_fakes.site.release.set()


@pytest.fixture(scope="module")
def one_a_day_app(module_store: str, request: pytest.FixtureRequest) -> Iterator[Api]:
    with shared_api(module_store, request, quota_submit_daily=1, quota_check_daily=1) as made:
        yield made


@pytest.fixture
def one_a_day(one_a_day_app: Api) -> Iterator[Api]:
    """An app whose users may submit and check one URL a day (no worker), one per store for
    the module, as this test's own users."""
    yield from owned(one_a_day_app)


def create(client: httpx.Client, kind: str, urls: list[str], **extra: Any) -> httpx.Response:
    return client.post(f"{V1}/{kind}/jobs", json={"urls": urls, **extra})


def status(client: httpx.Client, kind: str, job_id: int, **headers: str) -> httpx.Response:
    return client.get(f"{V1}/{kind}/jobs/{job_id}", headers=headers)


def finished(client: httpx.Client, kind: str, job_id: int) -> dict[str, Any]:
    def check() -> dict[str, Any] | None:
        body: dict[str, Any] = status(client, kind, job_id).json()
        return body if body["status"] in TERMINAL else None

    return wait_until(check)


# -- creation -----------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_post_answers_202_with_status_body_location_and_retry_after(idle: Api, kind: str) -> None:
    client = idle.client(idle.account())
    urls = ["https://a.example/1", "https://a.example/2"]
    before = datetime.now(UTC)
    response = create(client, kind, urls, title="launch week")
    assert response.status_code == 202, response.text
    body = response.json()
    assert set(body) == FIELDS[kind]
    assert body["status"] == "pending"
    assert (body["total_urls"], body["failed_count"], body["progress_percent"]) == (2, 0, 0)
    assert body["title"] == "launch week" and body["error"] is None
    assert body["completed_at"] is None and body["duplicates_removed"] == 0
    assert when(body["created_at"]) >= before - timedelta(seconds=5)
    assert retry_after(response) >= 1
    # Location names the job's status resource, which answers at once (committed before 202).
    location = response.headers["location"]
    assert location.endswith(f"{V1}/{kind}/jobs/{body['job_id']}")
    polled = client.get(httpx.URL(idle.base).join(location))
    assert polled.status_code == 200
    assert polled.json() == body  # the same body on POST and GET (no worker moved it)
    assert retry_after(polled) >= 1


@pytest.mark.parametrize("kind", KINDS)
def test_every_timestamp_is_rfc3339_utc_with_z(idle: Api, kind: str) -> None:
    client = idle.client(idle.account())
    created = create(client, kind, ["https://a.example/1", "https://a.example/1"]).json()
    assert created["duplicates_removed"] == 1
    job_id = created["job_id"]
    cancelled = client.post(f"{V1}/{kind}/jobs/{job_id}/cancel").json()
    bodies = [
        created,
        status(client, kind, job_id).json(),
        client.get(f"{V1}/{kind}/jobs").json()["jobs"][0],
        cancelled,
        client.get(f"{V1}/{kind}/jobs/{job_id}/report").json(),
        client.get(f"{V1}/usage").json(),
        client.get(f"{V1}/{kind}/jobs/{job_id}").json(),
    ]
    stamps = [v for body in bodies for v in _timestamps(body)]
    assert len(stamps) >= 8
    for stamp in stamps:
        assert RFC3339_Z.fullmatch(stamp), stamp
    # One spelling: the single GET and the list agree byte for byte.
    assert bodies[1]["created_at"] == bodies[2]["created_at"] == created["created_at"]


RFC3339_Z = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,6})?Z")


def _timestamps(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [
            s
            for key, v in value.items()
            for s in ([v] if key.endswith("_at") and isinstance(v, str) else _timestamps(v))
        ]
    if isinstance(value, list):
        return [s for v in value for s in _timestamps(v)]
    return []


def test_submit_status_fields_are_seed_000s_with_the_scheduled_check(idle: Api) -> None:
    client = idle.client(idle.account())
    body = create(client, "index-submit", ["https://a.example/1"], checker=3).json()
    polled = status(client, "index-submit", body["job_id"])
    assert polled.status_code == 200
    got = polled.json()
    assert set(got) == SUBMIT_FIELDS
    assert got["job_id"] == body["job_id"] and got["status"] == "pending"
    assert (got["submitted_urls"], got["successful_count"], got["success_percent"]) == (0, 0, 0)
    assert got["scheduled_check_days"] == 3
    assert got["scheduled_check_status"] == "pending"
    assert got["scheduled_check_run_id"] is None  # only once the check has started
    due = when(got["scheduled_check_at"]) - when(got["created_at"])
    assert abs(due.total_seconds() - 3 * idle.settings.day_seconds) < 60


def test_submit_without_checker_has_empty_scheduled_check_fields(idle: Api) -> None:
    client = idle.client(idle.account())
    job_id = create(client, "index-submit", ["https://a.example/1"]).json()["job_id"]
    got = status(client, "index-submit", job_id).json()
    assert {k: got[k] for k in SUBMIT_FIELDS if k.startswith("scheduled_check")} == {
        "scheduled_check_days": None,
        "scheduled_check_status": None,
        "scheduled_check_at": None,
        "scheduled_check_run_id": None,
    }


# -- status in every state ----------------------------------------------------------------------


def test_check_status_is_200_in_every_state_with_retry_after_only_while_open(
    working: Api, fakes: Providers
) -> None:
    client = working.client(working.account())
    ok, held = fakes.site_base + "/ok", fakes.site_base + "/hold"
    fakes.serper.index("google", ok)
    job_id = create(client, "index-check", [ok, held]).json()["job_id"]

    # processing: the worker holds the job while the fixture site holds /hold.
    def processing() -> httpx.Response | None:
        answer = status(client, "index-check", job_id)
        return answer if answer.json()["status"] == "processing" else None

    answer = wait_until(processing)
    assert answer.status_code == 200 and set(answer.json()) == FIELDS["index-check"]
    assert retry_after(answer) >= 1
    assert answer.json()["completed_at"] is None

    fakes.site.release.set()
    done = finished(client, "index-check", job_id)
    answer = status(client, "index-check", job_id)
    assert answer.status_code == 200 and "retry-after" not in answer.headers
    assert set(done) == FIELDS["index-check"]
    assert done["status"] == "completed" and done["error"] is None
    assert (done["total_urls"], done["checked_urls"], done["progress_percent"]) == (2, 2, 100)
    assert (done["indexed_count"], done["not_indexed_count"], done["failed_count"]) == (1, 1, 0)
    assert when(done["completed_at"]) >= when(done["created_at"])


def test_failed_jobs_answer_200_with_error_and_no_retry_after(
    store_url: str, fakes: Providers
) -> None:
    # The check provider refuses the key: the worker fails the job (no automatic retry).
    with api(fakes.settings(store_url, serper_key="not-the-key"), run_worker=True) as working:
        client = working.client(working.account())
        job_id = create(client, "index-check", ["https://a.example/1"]).json()["job_id"]
        body = finished(client, "index-check", job_id)
        answer = status(client, "index-check", job_id)
        assert answer.status_code == 200 and "retry-after" not in answer.headers
        assert set(body) == FIELDS["index-check"]
        assert body["status"] == "failed"
        assert body["error"]["code"] == "provider_auth_failed"
        assert body["error"]["message"]
        assert body["completed_at"] is not None


def test_submit_completes_with_seed_counts(working: Api, fakes: Providers) -> None:
    client = working.client(working.account())
    urls = [f"https://a.example/{i}" for i in range(4)]
    job_id = create(client, "index-submit", urls, engine="bing").json()["job_id"]
    body = finished(client, "index-submit", job_id)
    assert body["status"] == "completed"
    assert (body["total_urls"], body["submitted_urls"], body["successful_count"]) == (4, 4, 4)
    assert (body["failed_count"], body["progress_percent"], body["success_percent"]) == (
        0,
        100,
        100,
    )
    assert fakes.indexnow.urls_for("a.example") == urls
    assert "retry-after" not in status(client, "index-submit", job_id).headers
    # A finished job cannot be cancelled: 409 with its state, and it stays as it was.
    refused = assert_problem(client.post(f"{V1}/index-submit/jobs/{job_id}/cancel"), 409)
    assert refused["type"].endswith("/job_finished")
    assert (refused["job_id"], refused["job_status"], refused["error_code"]) == (
        job_id,
        "completed",
        None,
    )
    assert status(client, "index-submit", job_id).json() == body


def test_cancelled_job_is_failed_with_code_cancelled(idle: Api) -> None:
    client = idle.client(idle.account())
    job_id = create(client, "index-submit", ["https://a.example/1"], checker=1).json()["job_id"]
    cancelled = client.post(f"{V1}/index-submit/jobs/{job_id}/cancel")
    assert cancelled.status_code == 200, cancelled.text
    body = status(client, "index-submit", job_id).json()
    assert body["status"] == "failed" and body["error"]["code"] == "cancelled"
    assert body["scheduled_check_status"] == "failed"  # the follow-up went with it
    again = client.post(f"{V1}/index-submit/jobs/{job_id}/cancel")
    assert again.status_code == 200 and again.json()["status"] == "failed"


# -- ownership and unknown ids ------------------------------------------------------------------


def test_unknown_ids_and_other_users_jobs_are_404_problems(idle: Api) -> None:
    alice, bob = idle.account("alice"), idle.account("bob")
    as_alice, as_bob = idle.client(alice), idle.client(bob)
    submit_id = create(as_alice, "index-submit", ["https://a.example/1"]).json()["job_id"]
    check_id = create(as_alice, "index-check", ["https://a.example/1"]).json()["job_id"]
    unknown = max(submit_id, check_id) + 1000

    cases = [
        (as_alice, "index-submit", unknown),
        (as_alice, "index-check", unknown),
        (as_alice, "index-submit", check_id),  # a check is not a submission
        (as_alice, "index-check", submit_id),
        (as_bob, "index-submit", submit_id),  # someone else's
        (as_bob, "index-check", check_id),
    ]
    for client, kind, job_id in cases:
        for method, path in (
            ("GET", f"{V1}/{kind}/jobs/{job_id}"),
            ("GET", f"{V1}/{kind}/jobs/{job_id}/report"),
            ("POST", f"{V1}/{kind}/jobs/{job_id}/cancel"),
        ):
            answer = client.request(method, path)
            problem = assert_problem(answer, 404)
            # Someone else's job reads exactly like one that does not exist.
            assert {k: problem[k] for k in ("type", "title")} == {
                "type": "https://seojobs.dev/problems/not_found",
                "title": "Not found",
            }
            if client is as_alice and job_id != unknown:  # her own job, under the other path
                other = "index-check" if kind == "index-submit" else "index-submit"
                assert f"read it at {V1}/{other}/jobs/{job_id}" in problem["detail"]
            else:
                assert "read it at" not in problem.get("detail", "")
    # Bob's attempt to cancel changed nothing.
    assert status(as_alice, "index-submit", submit_id).json()["status"] == "pending"


def test_other_users_jobs_never_appear_in_lists(idle: Api) -> None:
    alice, bob = idle.account("alice"), idle.account("bob")
    as_alice, as_bob = idle.client(alice), idle.client(bob)
    mine = create(as_alice, "index-submit", ["https://a.example/1"]).json()["job_id"]
    theirs = create(as_bob, "index-submit", ["https://b.example/1"]).json()["job_id"]
    listed = as_bob.get(f"{V1}/index-submit/jobs").json()
    assert [j["job_id"] for j in listed["jobs"]] == [theirs]
    filtered = as_bob.get(f"{V1}/index-submit/jobs", params={"ids": f"{mine},{theirs}"}).json()
    assert [j["job_id"] for j in filtered["jobs"]] == [theirs]
    only_foreign = as_bob.get(f"{V1}/index-submit/jobs", params={"ids": str(mine)}).json()
    assert only_foreign == {"jobs": [], "next_cursor": None}


# -- authentication -----------------------------------------------------------------------------


@pytest.mark.parametrize("form", ["raw", "bearer", "x-api-key"])
def test_each_auth_form_works(idle: Api, form: str) -> None:
    account = idle.account()
    client = idle.client(account, form=form)
    created = create(client, "index-check", ["https://a.example/1"])
    assert created.status_code == 202, created.text
    assert status(client, "index-check", created.json()["job_id"]).status_code == 200
    assert client.get(f"{V1}/usage").status_code == 200


def test_401_tells_a_missing_key_from_a_refused_one_and_nothing_more(idle: Api) -> None:
    real = idle.account()
    anonymous = idle.client()
    wrong = "sj_" + "x" * 43
    missing = [{}, {"Authorization": "Bearer"}, {"X-API-Key": ""}]
    refused = [
        auth_headers(wrong, "raw"),
        auth_headers(wrong, "bearer"),
        auth_headers(wrong, "x-api-key"),
        auth_headers(real.key[:-1], "raw"),  # a near miss of a real key
    ]
    answers: dict[str, list[Any]] = {"missing": [], "refused": []}
    for group, attempts in (("missing", missing), ("refused", refused)):
        for headers in attempts:
            for method, path, body in (
                ("GET", f"{V1}/usage", None),
                ("GET", f"{V1}/index-submit/jobs/1", None),
                ("POST", f"{V1}/index-check/jobs", {"urls": ["https://a.example/1"]}),
            ):
                answer = anonymous.request(method, path, headers=headers, json=body)
                assert assert_problem(answer, 401)["type"].endswith("/unauthorized")
                answers[group].append((answer.json(), answer.headers.get("www-authenticate")))
    for group in answers.values():  # within a group, every answer is the same
        assert all(a == group[0] for a in group), group
    (no_key, challenge), (bad_key, bad_challenge) = answers["missing"][0], answers["refused"][0]
    assert "no API key was sent" in no_key["detail"] and "X-API-Key" in no_key["detail"]
    assert "not valid" in bad_key["detail"]
    assert challenge == 'Bearer realm="seojobs"'
    assert bad_challenge == 'Bearer realm="seojobs", error="invalid_token"'
    # Nothing was created by the refused POSTs.
    assert idle.client(real).get(f"{V1}/index-check/jobs").json()["jobs"] == []


# -- Prefer: wait -------------------------------------------------------------------------------


def test_prefer_wait_answers_with_the_changed_state(working: Api, fakes: Providers) -> None:
    account = working.account()
    client = working.client(account)
    job_id = create(client, "index-check", [fakes.site_base + "/hold"]).json()["job_id"]
    wait_until(lambda: status(client, "index-check", job_id).json()["status"] == "processing")
    held = status(client, "index-check", job_id).json()
    assert held["checked_urls"] == 0

    # The long-poll is charged to the rate limit when the server takes it: that tells the test
    # the request has arrived, so the change below happens while the server is waiting.
    limiter = working.app.state.rate_limiter

    def remaining() -> int:
        return int(limiter.remaining(account.user.id, account.user.rate_limit))

    before = remaining()
    answers: list[httpx.Response] = []
    poller = threading.Thread(
        target=lambda: answers.append(
            status(working.client(account), "index-check", job_id, Prefer="wait=30")
        )
    )
    poller.start()
    try:
        wait_until(lambda: remaining() < before)
    finally:
        fakes.site.release.set()
        poller.join(timeout=60)
    assert not poller.is_alive()
    [answer] = answers
    assert answer.status_code == 200
    assert answer.headers.get("preference-applied") == "wait=30"  # held, answered early
    body = answer.json()
    # The answer shows the change that happened during the wait, not the state it started in.
    assert body["checked_urls"] == 1 or body["status"] == "completed", body


def test_prefer_wait_on_an_unchanging_job_returns_it_as_it_is(idle: Api) -> None:
    client = idle.client(idle.account())
    job_id = create(client, "index-submit", ["https://a.example/1"]).json()["job_id"]
    answer = status(client, "index-submit", job_id, Prefer="wait=1")
    assert answer.status_code == 200
    assert answer.json()["status"] == "pending"
    assert answer.headers.get("preference-applied") == "wait=1"
    assert retry_after(answer) >= 1


@pytest.mark.parametrize("kind", KINDS)
def test_prefer_wait_on_a_finished_job_answers_at_once_without_preference_applied(
    one_a_day: Api, kind: str
) -> None:
    client = one_a_day.client(one_a_day.account())
    refused = create(client, kind, ["https://a.example/1", "https://a.example/2"]).json()
    assert refused["error"]["code"] == "quota_exceeded", refused
    cancelled = create(client, kind, ["https://a.example/3"]).json()["job_id"]
    assert client.post(f"{V1}/{kind}/jobs/{cancelled}/cancel").status_code == 200
    for job_id in (refused["job_id"], cancelled):
        for prefer in ("wait=30", "wait=5", "wait=1", "wait=0.5", "wait=100"):
            # A hold would last the whole wait: the 10 s timeout guards against it.
            answer = client.get(
                f"{V1}/{kind}/jobs/{job_id}", headers={"Prefer": prefer}, timeout=10
            )
            assert answer.status_code == 200 and answer.json()["status"] == "failed"
            assert "preference-applied" not in answer.headers, (prefer, answer.headers)
            assert "retry-after" not in answer.headers


@pytest.mark.parametrize("prefer", [None, "wait=0", "wait=abc", "respond-async", "wait=-5"])
def test_no_usable_wait_is_answered_without_preference_applied(
    idle: Api, prefer: str | None
) -> None:
    client = idle.client(idle.account())
    job_id = create(client, "index-check", ["https://a.example/1"]).json()["job_id"]
    headers = {"Prefer": prefer} if prefer else {}
    answer = status(client, "index-check", job_id, **headers)
    assert answer.status_code == 200 and answer.json()["status"] == "pending"
    assert "preference-applied" not in answer.headers, answer.headers


# -- out-of-range input is a client error, never a 500 ------------------------------------------

HUGE = "9" * 20  # past a 64-bit id


def test_ids_past_64_bits_are_client_errors(idle: Api) -> None:
    account = idle.account()
    job_id = create(idle.client(account), "index-check", ["https://a.example/1"]).json()["job_id"]
    requests = [
        ("GET", f"/index-check/jobs/{HUGE}", None),
        ("GET", f"/index-submit/jobs/{HUGE}/report", None),
        ("POST", f"/index-check/jobs/{HUGE}/cancel", None),
        ("GET", "/index-submit/jobs", {"ids": HUGE}),
        ("GET", "/index-submit/jobs", {"cursor": HUGE}),
        ("GET", f"/index-check/jobs/{job_id}/report", {"cursor": HUGE}),
    ]
    wrong = []
    for method, path, params in requests:
        # A fresh connection each time: uvicorn closes the connection after a 500.
        answer = httpx.request(
            method, idle.base + V1 + path, params=params, headers=account.headers(), timeout=60
        )
        if answer.status_code not in (404, 422) or not answer.headers.get(
            "content-type", ""
        ).startswith("application/problem+json"):
            wrong.append(f"{method} {path} {params}: {answer.status_code}")
    assert wrong == []


def test_updated_since_edge_values_are_not_server_errors(idle: Api) -> None:
    account = idle.account()
    wrong = []
    for since in ("2026-01-01T00:00:00", "0001-01-01T00:00:00+08:00", "9999-12-31T23:59:59-08:00"):
        answer = httpx.get(
            f"{idle.base}{V1}/index-submit/jobs",
            params={"updated_since": since},
            headers=account.headers(),
            timeout=60,
        )
        if answer.status_code not in (200, 422):
            wrong.append(f"{since}: {answer.status_code}")
    assert wrong == []


@pytest.mark.parametrize("kind", KINDS)
def test_status_ids_are_validated_like_every_other_job_path(idle: Api, kind: str) -> None:
    """Status GETs validate their id themselves (PathIdRoute); the answers must be the 422s
    FastAPI gives on the report route of the same job path, field by field."""
    account = idle.account()
    job_id = create(idle.client(account), kind, ["https://a.example/1"]).json()["job_id"]
    with idle.client(account) as client:
        assert client.get(f"{V1}/{kind}/jobs/{job_id}").json()["job_id"] == job_id
        assert client.get(f"{V1}/{kind}/jobs/0{job_id}").json()["job_id"] == job_id
        # Only ASCII digits are an id (seojobs.api.ids): " 1" and "+1" were read as 1.
        for bad in ["abc", "0", "-3", "1.5", "0x10", str(2**63), f" {job_id}", f"+{job_id}", "٣"]:
            status = client.get(f"{V1}/{kind}/jobs/{bad}")
            report = client.get(f"{V1}/{kind}/jobs/{bad}/report")
            body = assert_problem(status, 422)
            assert body["errors"] == assert_problem(report, 422)["errors"], bad
            assert [e["field"] for e in body["errors"]] == ["job_id"], body
