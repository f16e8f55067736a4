"""``Idempotency-Key`` on v1 POSTs over HTTP: replays, reuse with another body, per-user keys,
and concurrent retries that still create one job.

One app per store for the module (keys are per user): each test works as its own new users."""

from __future__ import annotations

import ssl
import threading
import uuid
from collections.abc import Iterator

import httpx
import pytest

from tests.api_helpers import V1, Api, assert_problem, owned, shared_api

KINDS = ["index-submit", "index-check"]
BODY = {"urls": ["https://a.example/1", "https://a.example/2"], "title": "once"}
# The racing clients' TLS context, made once: httpx makes one per client (the CA bundle read
# and parsed, ~25 ms of CPU), though the app is plain HTTP on loopback.
TLS = ssl.create_default_context()


@pytest.fixture(scope="module")
def shared_app(module_store: str, request: pytest.FixtureRequest) -> Iterator[Api]:
    with shared_api(module_store, request) as made:
        yield made


@pytest.fixture
def app(shared_app: Api) -> Iterator[Api]:
    yield from owned(shared_app)


def post(client: httpx.Client, kind: str, key: str, body: dict[str, object]) -> httpx.Response:
    return client.post(f"{V1}/{kind}/jobs", json=body, headers={"Idempotency-Key": key})


def job_ids(client: httpx.Client, kind: str) -> list[int]:
    return [j["job_id"] for j in client.get(f"{V1}/{kind}/jobs").json()["jobs"]]


@pytest.mark.parametrize("kind", KINDS)
def test_same_key_and_body_replays_the_first_answer(app: Api, kind: str) -> None:
    client = app.client(app.account())
    key = str(uuid.uuid4())
    first = post(client, kind, key, BODY)
    assert first.status_code == 202, first.text
    assert "idempotent-replayed" not in first.headers
    second = post(client, kind, key, BODY)
    assert second.status_code == 202, second.text
    assert second.headers.get("idempotent-replayed") == "true"
    assert second.json()["job_id"] == first.json()["job_id"]
    assert second.headers["location"] == first.headers["location"]
    assert job_ids(client, kind) == [first.json()["job_id"]]
    # The structured-field spelling ("...") names the same key.
    quoted = post(client, kind, f'"{key}"', BODY)
    assert quoted.json()["job_id"] == first.json()["job_id"]
    assert job_ids(client, kind) == [first.json()["job_id"]]


@pytest.mark.parametrize("kind", KINDS)
def test_same_key_with_a_different_body_is_422(app: Api, kind: str) -> None:
    client = app.client(app.account())
    key = str(uuid.uuid4())
    first = post(client, kind, key, BODY)
    other = post(client, kind, key, {**BODY, "urls": ["https://a.example/other"]})
    problem = assert_problem(other, 422)
    assert problem["type"].endswith("idempotency_key_reused")
    assert job_ids(client, kind) == [first.json()["job_id"]]


@pytest.mark.parametrize("kind", KINDS)
def test_keys_are_per_user(app: Api, kind: str) -> None:
    alice, bob = app.account("alice"), app.account("bob")
    as_alice, as_bob = app.client(alice), app.client(bob)
    key = "shared-key-1"
    mine = post(as_alice, kind, key, BODY)
    theirs = post(as_bob, kind, key, BODY)
    assert theirs.status_code == 202, theirs.text
    assert "idempotent-replayed" not in theirs.headers
    assert theirs.json()["job_id"] != mine.json()["job_id"]
    assert job_ids(as_alice, kind) == [mine.json()["job_id"]]
    assert job_ids(as_bob, kind) == [theirs.json()["job_id"]]
    # Bob may even use the key with another body: it is his key, not Alice's.
    assert post(as_bob, kind, "shared-key-2", BODY).status_code == 202
    assert post(as_alice, kind, "shared-key-2", {"urls": ["https://b.example/"]}).status_code == 202


@pytest.mark.parametrize("kind", KINDS)
def test_a_refused_request_does_not_burn_its_key(app: Api, kind: str) -> None:
    client = app.client(app.account())
    key = str(uuid.uuid4())
    invalid = post(client, kind, key, {"urls": ["ftp://a.example/"]})
    assert_problem(invalid, 422)
    fixed = post(client, kind, key, BODY)
    assert fixed.status_code == 202, fixed.text
    assert "idempotent-replayed" not in fixed.headers
    assert job_ids(client, kind) == [fixed.json()["job_id"]]


def test_a_malformed_key_is_a_400_problem(app: Api) -> None:
    client = app.client(app.account())
    for key in ("x" * 256, '""'):
        assert_problem(post(client, "index-submit", key, BODY), 400)
    assert job_ids(client, "index-submit") == []


@pytest.mark.parametrize("kind", KINDS)
def test_concurrent_retries_with_one_key_create_one_job(app: Api, kind: str) -> None:
    account = app.account()
    key = str(uuid.uuid4())
    start = threading.Barrier(6)
    answers: list[httpx.Response] = []
    lock = threading.Lock()

    def attempt() -> None:
        with httpx.Client(
            base_url=app.base, headers=account.headers(), timeout=60, verify=TLS
        ) as client:
            start.wait()
            answer = post(client, kind, key, BODY)
        with lock:
            answers.append(answer)

    threads = [threading.Thread(target=attempt) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert len(answers) == 6
    assert {a.status_code for a in answers} <= {202, 409}, [a.text for a in answers]
    for answer in answers:
        if answer.status_code == 409:
            assert_problem(answer, 409)
            assert answer.headers.get("retry-after")
    created = {a.json()["job_id"] for a in answers if a.status_code == 202}
    assert len(created) == 1
    assert job_ids(app.client(account), kind) == list(created)
    fresh = sum(
        1 for a in answers if a.status_code == 202 and "idempotent-replayed" not in a.headers
    )
    assert fresh == 1


@pytest.mark.parametrize("kind", KINDS)
def test_a_lost_idempotency_record_still_yields_the_same_job(app: Api, kind: str) -> None:
    """The process dies after creating the job but before saving the answer: the key's record
    is gone (or went stale). The retry must find the job, not create a second one."""
    from seojobs.store.tables import idempotency_keys

    account = app.account()
    client = app.client(account)
    key = str(uuid.uuid4())
    first = post(client, kind, key, BODY)
    assert first.status_code == 202, first.text
    services = app.app.state.services
    mine = idempotency_keys.c.user_id == account.user.id  # the module's app is shared
    with services.db.write() as conn:
        assert conn.execute(idempotency_keys.delete().where(mine)).rowcount == 1
    again = post(client, kind, key, BODY)
    assert again.status_code == 202, again.text
    assert "idempotent-replayed" not in again.headers  # answered afresh, from the job itself
    assert again.json()["job_id"] == first.json()["job_id"]
    assert job_ids(client, kind) == [first.json()["job_id"]]
    # The retry recorded the key again, so reusing it for another request is refused again.
    other = post(client, kind, key, {**BODY, "urls": ["https://a.example/other"]})
    assert_problem(other, 422)
