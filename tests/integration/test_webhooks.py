"""Webhooks (issue 27) over real HTTP on both stores: endpoints, the outbox written with a
job's terminal state, signed deliveries verified with the Standard Webhooks reference
implementation, retries, 410, rotation, and the address policy at registration."""

from __future__ import annotations

import base64
import json
import socket
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from standardwebhooks import Webhook, WebhookVerificationError

from tests.api_helpers import TERMINAL, Api, api, assert_problem, error_fields, owned, shared_api
from tests.conftest import make_settings
from tests.fakes.webhook_receiver import receiver
from tests.waiting import wait_until


@pytest.fixture(scope="module")
def shared_hooked(module_store: str, request: pytest.FixtureRequest) -> Iterator[Api]:
    """One server with its worker for the module's delivery tests, each as its own users,
    allowed to deliver to loopback (the receivers), retrying quickly. Its dispatcher polls
    once an hour: what it sends, it was woken for (a job's terminal state, a replay) or
    scheduled itself (a retry)."""
    with shared_api(
        module_store,
        request,
        run_worker=True,
        allow_private_networks=True,
        webhook_retry_schedule="0.05,0.05,0.05",
        webhook_poll_interval=3600,
        webhook_timeout=5,
    ) as made:
        yield made


@pytest.fixture
def hooked(shared_hooked: Api) -> Iterator[Api]:
    yield from owned(shared_hooked)


@pytest.fixture(scope="module")
def shared_registering(module_store: str, request: pytest.FixtureRequest) -> Iterator[Api]:
    """One app for the module's tests of what registration accepts (no deliveries, no
    worker): each test as its own users."""
    with shared_api(module_store, request, allow_private_networks=True) as made:
        yield made


@pytest.fixture
def registering(shared_registering: Api) -> Iterator[Api]:
    yield from owned(shared_registering)


def register(client: httpx.Client, url: str, **body: Any) -> dict[str, Any]:
    answer = client.post("/v1/webhooks", json={"url": url, **body})
    assert answer.status_code == 201, answer.text
    data: dict[str, Any] = answer.json()["data"]
    return data


def run_job(client: httpx.Client, project_id: int, kind: str, **params: Any) -> dict[str, Any]:
    answer = client.post(f"/v1/projects/{project_id}/jobs", json={"type": kind, "params": params})
    assert answer.status_code == 202, answer.text
    job_id = answer.json()["data"]["id"]

    def done() -> dict[str, Any] | None:
        data: dict[str, Any] = client.get(f"/v1/jobs/{job_id}").json()["data"]
        return data if data["status"] in TERMINAL else None

    return wait_until(done)


def deliveries(client: httpx.Client, hook_id: int) -> list[dict[str, Any]]:
    answer = client.get(f"/v1/webhooks/{hook_id}/deliveries")
    assert answer.status_code == 200, answer.text
    found: list[dict[str, Any]] = answer.json()["data"]
    return found


def settled(client: httpx.Client, hook_id: int, count: int) -> list[dict[str, Any]]:
    """The endpoint's deliveries once ``count`` of them exist and none is pending."""

    def check() -> list[dict[str, Any]] | None:
        found = deliveries(client, hook_id)
        done = len(found) == count and all(d["status"] != "pending" for d in found)
        return found if done else None

    return wait_until(check)


def verified(secret: str, delivery: Any) -> dict[str, Any]:
    """The payload, verified by the reference implementation (raises when it does not)."""
    payload: dict[str, Any] = Webhook(secret).verify(delivery.body, delivery.headers)
    return payload


# -- endpoints ----------------------------------------------------------------------------------


def test_endpoints_crud_and_the_secret_shown_once(hooked: Api) -> None:
    alice = hooked.account()
    client = hooked.client(alice)
    created = register(
        client,
        "http://127.0.0.1:9/in",
        events=["job.completed"],
        description="ci",
        filters={"rank.changed": {"min_change": 3, "top": 10}},
    )
    secret = created["secret"]
    assert secret.startswith("whsec_") and len(base64.b64decode(secret[6:])) == 32
    assert created["events"] == ["job.completed"] and created["enabled"] is True
    assert created["filters"] == {"rank.changed": {"min_change": 3, "top": 10}}
    hook_id = created["id"]

    read = client.get(f"/v1/webhooks/{hook_id}").json()["data"]
    assert "secret" not in read and read["url"] == "http://127.0.0.1:9/in"
    assert [h["id"] for h in client.get("/v1/webhooks").json()["data"]] == [hook_id]

    patched = client.patch(f"/v1/webhooks/{hook_id}", json={"events": "*", "enabled": False})
    assert patched.status_code == 200, patched.text
    assert patched.json()["data"]["events"] == "*"
    assert patched.json()["data"]["enabled"] is False

    rotated = client.post(f"/v1/webhooks/{hook_id}/rotate-secret").json()["data"]
    assert rotated["secret"].startswith("whsec_") and rotated["secret"] != secret

    # Someone else's endpoint does not exist for you.
    bob = hooked.client(hooked.account("bob"))
    assert_problem(bob.get(f"/v1/webhooks/{hook_id}"), 404)
    assert_problem(bob.delete(f"/v1/webhooks/{hook_id}"), 404)

    assert client.delete(f"/v1/webhooks/{hook_id}").status_code == 204
    assert_problem(client.get(f"/v1/webhooks/{hook_id}"), 404)


@pytest.mark.stores("sqlite")  # the document, before the store
def test_the_document_says_an_endpoint_has_at_least_one_event_type(registering: Api) -> None:
    """An empty list of events is refused (422 naming ``events``, on create and on PATCH): the
    published schema says so, so a schema-valid request is never refused for it (schemathesis
    sent a PATCH with ``"events": []`` and met the 422)."""
    document = registering.client(registering.account()).get("/openapi.json").json()
    schemas = document["components"]["schemas"]
    for model in ("WebhookIn", "WebhookPatch"):
        variants = schemas[model]["properties"]["events"]["anyOf"]
        arrays = [v for v in variants if v.get("type") == "array"]
        assert arrays and all(v.get("minItems") == 1 for v in arrays), (model, variants)
    client = registering.client(registering.account())
    hook = register(client, "http://127.0.0.1:9/", events=["rank.changed"])
    answer = client.patch(f"/v1/webhooks/{hook['id']}", json={"events": []})
    assert_problem(answer, 422)
    assert any(f.startswith("events") for f in error_fields(answer)), answer.text


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"url": "ftp://127.0.0.1/"}, "url"),
        ({"url": "http://127.0.0.1:9/", "events": ["job.exploded"]}, "events[0]"),
        ({"url": "http://127.0.0.1:9/", "events": []}, "events"),
        ({"url": "http://127.0.0.1:9/", "enabled": "maybe"}, "enabled"),
        ({"url": "http://127.0.0.1:9/", "project_id": 999999}, "project_id"),
        ({"url": "http://127.0.0.1:9/", "colour": "red"}, "colour"),
    ],
)
@pytest.mark.stores("sqlite")  # input validation, before the store
def test_bad_endpoints_are_422_naming_the_field(
    registering: Api, body: dict[str, Any], field: str
) -> None:
    client = registering.client(registering.account())
    answer = client.post("/v1/webhooks", json=body)
    if field == "project_id":  # a project that is not yours does not exist
        assert_problem(answer, 404)
        return
    assert_problem(answer, 422)
    assert any(f == field or f.startswith(field) for f in error_fields(answer)), answer.text


BAD_FILTERS = [
    ({"rank.changed": {"min_change": 0}}, "filters.rank.changed.min_change"),
    ({"rank.changed": {"top": "10"}}, "filters.rank.changed.top"),
    ({"rank.changed": {"colour": 1}}, "filters.rank.changed.colour"),
    ({"domain.expiring": {"days": 400}}, "filters.domain.expiring.days"),
    ({"geo.visibility_changed": {"min_change": "a lot"}}, "filters.geo.visibility_changed"),
    ({"audit.issues_new": {"severity": "fatal"}}, "filters.audit.issues_new.severity"),
    ({"job.completed": {"type": "site_audit"}}, "filters.job.completed"),
    ({"job.progress": {"every_seconds": 1}}, "filters.job.progress.every_seconds"),
    ({"rank.exploded": {}}, "filters.rank.exploded"),
]


@pytest.mark.stores("sqlite")  # input validation, before the store
def test_bad_filters_are_422_naming_the_field_on_create_and_patch(registering: Api) -> None:
    client = registering.client(registering.account())
    hook = register(client, "http://127.0.0.1:9/", events=["rank.changed"])
    for filters, field in BAD_FILTERS:
        for answer in (
            client.post("/v1/webhooks", json={"url": "http://127.0.0.1:9/", "filters": filters}),
            client.patch(f"/v1/webhooks/{hook['id']}", json={"filters": filters}),
        ):
            assert_problem(answer, 422)
            assert any(f.startswith(field) for f in error_fields(answer)), (field, answer.text)
    assert len(client.get("/v1/webhooks").json()["data"]) == 1
    assert client.get(f"/v1/webhooks/{hook['id']}").json()["data"]["filters"] is None


def test_a_private_or_loopback_url_is_refused_at_registration(sqlite_url: str) -> None:
    """Without SEOJOBS_ALLOW_PRIVATE_NETWORKS: refused before anything is sent. A listening
    socket on loopback proves nothing dialled it."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.setblocking(False)
    port = listener.getsockname()[1]
    try:
        with api(make_settings(sqlite_url)) as running:
            client = running.client(running.account())
            for url in (
                f"http://127.0.0.1:{port}/hook",
                f"http://localhost:{port}/hook",
                "http://[::1]/hook",
                "http://10.1.2.3/hook",
                "http://169.254.169.254/latest",
            ):
                answer = client.post("/v1/webhooks", json={"url": url})
                assert_problem(answer, 422)
                assert error_fields(answer) == ["url"], answer.text
                # A job's own webhook_url passes the same policy.
                check = {"urls": ["https://example.com/"], "webhook_url": url}
                answer = client.post("/api/v1/index-check/jobs", json=check)
                assert_problem(answer, 422)
                assert error_fields(answer) == ["webhook_url"], answer.text
            assert client.get("/v1/webhooks").json()["data"] == []
        with pytest.raises(BlockingIOError):
            listener.accept()
    finally:
        listener.close()


# -- deliveries ---------------------------------------------------------------------------------


def test_one_signed_delivery_per_subscribed_event(hooked: Api) -> None:
    alice = hooked.account()
    client = hooked.client(alice)
    project = alice.user.default_project_id
    with receiver() as consumer:
        done_hook = register(client, consumer.url + "/done", events=["job.completed"])
        fail_hook = register(client, consumer.url + "/failed", events=["job.failed"])
        all_hook = register(client, consumer.url + "/all", events="*")
        completed = run_job(client, project, "test_noop")
        failed = run_job(client, project, "test_fail", code="boom", message="it failed")

        settled(client, done_hook["id"], 1)
        settled(client, fail_hook["id"], 1)
        settled(client, all_hook["id"], 2)
        [done] = consumer.at("/done")
        [fail] = consumer.at("/failed")
        both = consumer.at("/all")

    event = verified(done_hook["secret"], done)
    assert event["type"] == "job.completed"
    assert event["data"] == completed  # the status endpoint's body
    assert json.loads(done.body)["data"]["status"] == "completed"
    failure = verified(fail_hook["secret"], fail)
    assert failure["type"] == "job.failed"
    assert failure["data"]["id"] == failed["id"]
    assert failure["data"]["error"] == failed["error"]
    assert sorted(verified(all_hook["secret"], d)["type"] for d in both) == [
        "job.completed",
        "job.failed",
    ]
    # A wrong secret does not verify.
    with pytest.raises(WebhookVerificationError):
        verified(fail_hook["secret"], done)
    [record] = deliveries(client, done_hook["id"])
    assert record["status"] == "delivered" and record["webhook_id"] == done.headers["webhook-id"]
    [attempt] = record["attempts"]
    assert attempt["status_code"] == 200 and attempt["response_head"] == "answered 200"


def test_retries_after_500_500_then_200_keep_one_webhook_id(hooked: Api) -> None:
    alice = hooked.account()
    client = hooked.client(alice)
    with receiver(answers=[500, 500]) as consumer:
        hook = register(client, consumer.url + "/hook", events=["job.completed"])
        run_job(client, alice.user.default_project_id, "test_noop")
        [record] = settled(client, hook["id"], 1)
        got = consumer.at("/hook")

    assert record["status"] == "delivered"
    assert [a["status_code"] for a in record["attempts"]] == [500, 500, 200]
    assert len(got) == 3  # nothing after the success: the delivery is no longer pending
    assert {r.headers["webhook-id"] for r in got} == {record["webhook_id"]}
    assert len({r.body for r in got}) == 1
    for each in got:
        verified(hook["secret"], each)


def test_a_delivery_fails_after_the_schedule_and_can_be_replayed(hooked: Api) -> None:
    alice = hooked.account()
    client = hooked.client(alice)
    with receiver(answers=[503, 503, 503, 503]) as consumer:
        hook = register(client, consumer.url + "/hook", events=["job.completed"])
        run_job(client, alice.user.default_project_id, "test_noop")
        [record] = settled(client, hook["id"], 1)
        assert record["status"] == "failed" and len(record["attempts"]) == 4  # 1 + 3 retries
        assert record["last_error"] == "the endpoint answered 503"

        replay = client.post(f"/v1/webhooks/{hook['id']}/deliveries/{record['id']}/replay")
        assert replay.status_code == 202
        wait_until(lambda: deliveries(client, hook["id"])[0]["status"] == "delivered")
        got = consumer.at("/hook")
    assert len(got) == 5 and {r.headers["webhook-id"] for r in got} == {record["webhook_id"]}


def test_410_disables_the_endpoint(hooked: Api) -> None:
    alice = hooked.account()
    client = hooked.client(alice)
    with receiver(answers=[410]) as consumer:
        hook = register(client, consumer.url + "/gone", events=["job.completed"])
        run_job(client, alice.user.default_project_id, "test_noop")
        [record] = settled(client, hook["id"], 1)
        # Disabled: the next job's event is not even queued for it.
        run_job(client, alice.user.default_project_id, "test_noop")
        assert len(consumer.at("/gone")) == 1
    assert record["status"] == "failed"
    data = client.get(f"/v1/webhooks/{hook['id']}").json()["data"]
    assert data["enabled"] is False and "410" in data["disabled_reason"]
    assert len(deliveries(client, hook["id"])) == 1


def test_after_a_rotation_both_secrets_sign(hooked: Api) -> None:
    alice = hooked.account()
    client = hooked.client(alice)
    with receiver() as consumer:
        hook = register(client, consumer.url + "/hook", events=["job.completed"])
        rotated = client.post(f"/v1/webhooks/{hook['id']}/rotate-secret").json()["data"]
        run_job(client, alice.user.default_project_id, "test_noop")
        settled(client, hook["id"], 1)
        [got] = consumer.at("/hook")
    assert len(got.headers["webhook-signature"].split(" ")) == 2
    verified(hook["secret"], got)
    verified(rotated["secret"], got)


def test_an_endpoint_of_one_project_hears_only_its_jobs(hooked: Api) -> None:
    alice = hooked.account()
    client = hooked.client(alice)
    other = client.post("/v1/projects", json={"name": "other"}).json()["data"]["id"]
    with receiver() as consumer:
        hook = register(client, consumer.url + "/p", project_id=other)
        run_job(client, alice.user.default_project_id, "test_noop")
        job = run_job(client, other, "test_noop")
        [record] = settled(client, hook["id"], 1)
    assert record["job_id"] == job["id"]


# -- a job's own webhook_url (seed 000 style) -----------------------------------------------------


def test_a_jobs_webhook_url_needs_a_callback_secret(hooked: Api) -> None:
    alice = hooked.account()
    client = hooked.client(alice)
    project = alice.user.default_project_id
    body = {"type": "test_noop", "params": {}, "webhook_url": "http://127.0.0.1:9/cb"}
    answer = client.post(f"/v1/projects/{project}/jobs", json=body)
    assert_problem(answer, 422)
    assert error_fields(answer) == ["webhook_url"]
    assert client.get(f"/v1/projects/{project}/jobs").json()["data"] == []  # nothing made


def test_a_jobs_webhook_url_is_called_once_signed_with_the_callback_secret(hooked: Api) -> None:
    alice = hooked.account()
    client = hooked.client(alice)
    made = client.post("/v1/webhook-callback-secret")
    assert made.status_code == 201, made.text
    secret = made.json()["data"]["secret"]
    with receiver() as consumer:
        body = {"type": "test_noop", "params": {}, "webhook_url": consumer.url + "/one"}
        started = client.post(f"/v1/projects/{alice.user.default_project_id}/jobs", json=body)
        assert started.status_code == 202, started.text
        job_id = started.json()["data"]["id"]
        # Seed 000's create body takes it too.
        check = {"urls": ["https://example.com/"], "webhook_url": consumer.url + "/v1"}
        created = client.post("/api/v1/index-check/jobs", json=check)
        assert created.status_code == 202, created.text
        check_id = created.json()["job_id"]
        wait_until(lambda: len(consumer.at("/one")) == 1 and len(consumer.at("/v1")) == 1)
        run_job(client, alice.user.default_project_id, "test_noop")  # no webhook_url
        [one] = consumer.at("/one")
        [v1] = consumer.at("/v1")
    event = verified(secret, one)
    assert event["type"] == "job.completed" and event["data"]["id"] == job_id
    assert verified(secret, v1)["data"]["id"] == check_id
    # One-off endpoints are not listed among the user's endpoints.
    assert client.get("/v1/webhooks").json()["data"] == []


def test_an_attempt_the_address_policy_refuses_sends_nothing(sqlite_url: str) -> None:
    """The policy is applied again at delivery: an endpoint that points at loopback (stored
    behind the API's back, as if its name had moved there since) is never dialled."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.setblocking(False)
    settings = make_settings(sqlite_url, webhook_retry_schedule="", webhook_poll_interval=0.05)
    try:
        with api(settings, run_worker=True) as running:
            alice = running.account()
            client = running.client(alice)
            url = f"http://127.0.0.1:{listener.getsockname()[1]}/h"
            hook = running.services.webhooks.create(alice.user, url=url, events="*")
            run_job(client, alice.user.default_project_id, "test_noop")
            [record] = settled(client, hook.id, 1)
        with pytest.raises(BlockingIOError):
            listener.accept()
    finally:
        listener.close()
    assert record["status"] == "failed"
    [attempt] = record["attempts"]
    assert attempt["status_code"] is None and attempt["error"].startswith("ssrf_refused")
