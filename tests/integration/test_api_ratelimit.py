"""The per-user rate limit over HTTP: IETF ``RateLimit-Policy``/``RateLimit`` fields on every
answer, 429 problem+json with ``Retry-After``, per-user overrides, separate budgets, and one
budget shared by two API processes through Redis."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.api_helpers import (
    V1,
    Account,
    Api,
    api,
    assert_problem,
    forget_rate_limit_keys,
    key_prefix,
    owned,
    rate_limit_fields,
    redis_or_skip,
    retry_after,
    shared_api,
)
from tests.conftest import STORES, make_settings, subprocess_env
from tests.e2e.helpers import Proc, Spawner, free_port, open_services, run_cli, wait_http_ok

# Store-agnostic (budgets live in the limiter's memory or Redis, never in the store): SQLite
# only, but for a user's own limit, stored with the user and read back on each store.
pytestmark = pytest.mark.stores("sqlite")


@pytest.fixture
def redis_url() -> str:
    """Redis for the shared-budget tests: skipped when unreachable, a FAILURE in CI."""
    return redis_or_skip()


@pytest.fixture(scope="module")
def shared_app(module_store: str, request: pytest.FixtureRequest) -> Iterator[Api]:
    """One app per store for the module: budgets are per user, and each test works as its
    own new users from its own loopback address. The production budget, 120 a minute
    (tests' make_settings lifts it)."""
    with shared_api(module_store, request, rate_limit="120/minute") as made:
        yield made


@pytest.fixture
def app(shared_app: Api) -> Iterator[Api]:
    yield from owned(shared_app)


def test_121st_request_in_a_window_is_a_429_problem(app: Api) -> None:
    client = app.client(app.account())
    job_id = client.post(f"{V1}/index-submit/jobs", json={"urls": ["https://a.example/"]})
    assert job_id.status_code == 202
    status_url = f"{V1}/index-submit/jobs/{job_id.json()['job_id']}"
    seen = [rate_limit_fields(job_id)]
    for _ in range(119):  # status polls count like everything else
        answer = client.get(status_url)
        assert answer.status_code == 200, answer.text
        seen.append(rate_limit_fields(answer))
    assert [r for _q, _w, r, _t in seen] == list(range(119, -1, -1))
    assert {(q, w) for q, w, _r, _t in seen} == {(120, 60)}

    refused = client.get(status_url)
    problem = assert_problem(refused, 429)
    assert problem["type"].endswith("rate_limited")
    q, w, r, t = rate_limit_fields(refused)
    assert (q, w, r) == (120, 60, 0)
    assert 1 <= retry_after(refused) <= 60
    assert retry_after(refused) >= t  # never earlier than the window frees a request
    # Refused requests of any kind stay refused within the window.
    assert_problem(client.get(f"{V1}/usage"), 429)
    refused_post = client.post(f"{V1}/index-check/jobs", json={"urls": ["https://a.example/"]})
    assert_problem(refused_post, 429)
    assert rate_limit_fields(refused_post)[2] == 0


def test_every_authenticated_answer_carries_the_fields_and_is_charged(app: Api) -> None:
    client = app.client(app.account())
    created = client.post(f"{V1}/index-check/jobs", json={"urls": ["https://a.example/"]})
    job_id = created.json()["job_id"]
    answers = [
        created,
        client.get(f"{V1}/index-check/jobs/{job_id}"),  # status poll
        client.get(f"{V1}/index-check/jobs/{job_id}", headers={"Prefer": "wait=0"}),
        client.get(f"{V1}/index-check/jobs"),
        client.get(f"{V1}/index-check/jobs/{job_id}/report"),
        client.get(f"{V1}/index-check/jobs/{job_id}/report", headers={"Accept": "text/csv"}),
        client.get(f"{V1}/usage"),
        client.get(f"{V1}/index-check/jobs/999999"),  # 404
        client.post(f"{V1}/index-check/jobs", json={"urls": []}),  # 422
        client.get(f"{V1}/index-check/jobs", params={"ids": "x"}),  # 422
        client.post(f"{V1}/index-check/jobs/{job_id}/cancel"),
    ]
    remaining = []
    for answer in answers:
        q, w, r, t = rate_limit_fields(answer)
        assert (q, w) == (120, 60), answer.request.url
        assert 0 <= t <= 60
        remaining.append(r)
    assert remaining == list(range(119, 119 - len(answers), -1))


@pytest.mark.stores(*STORES)  # the user's limit, stored and read back
def test_per_user_override_applies(app: Api) -> None:
    limited = app.account("limited", rate_limit="5/minute")
    client = app.client(limited)
    for expected in range(4, -1, -1):
        answer = client.get(f"{V1}/usage")
        assert answer.status_code == 200
        assert rate_limit_fields(answer)[:3] == (5, 60, expected)
    refused = client.get(f"{V1}/usage")
    assert_problem(refused, 429)
    assert rate_limit_fields(refused)[:3] == (5, 60, 0)


def test_cli_rate_limit_option_applies(sqlite_url: str, tmp_path: Path) -> None:
    args = ["users", "create", "cli-user", "--rate-limit", "3", "--json"]
    made = run_cli(*args, env=subprocess_env(sqlite_url), cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    key = json.loads(made.stdout)["api_key"]
    with api(make_settings(sqlite_url), run_worker=False) as running:
        user = running.services.accounts.authenticate(key)
        assert user is not None and user.rate_limit == "3/minute"
        client = running.client(Account(user, key))
        codes = [client.get(f"{V1}/usage").status_code for _ in range(4)]
        assert codes == [200, 200, 200, 429]
        assert rate_limit_fields(client.get(f"{V1}/usage"))[:3] == (3, 60, 0)


def test_two_users_have_separate_budgets(app: Api) -> None:
    alice = app.client(app.account("alice", rate_limit="3/minute"))
    bob = app.client(app.account("bob", rate_limit="3/minute"))
    assert [alice.get(f"{V1}/usage").status_code for _ in range(4)] == [200, 200, 200, 429]
    first = bob.get(f"{V1}/usage")
    assert first.status_code == 200
    assert rate_limit_fields(first)[2] == 2
    assert [bob.get(f"{V1}/usage").status_code for _ in range(3)] == [200, 200, 429]


def test_unauthenticated_requests_are_not_charged_to_anyone(app: Api) -> None:
    account = app.account("alice", rate_limit="3/minute")
    for _ in range(5):
        assert_problem(app.client().get(f"{V1}/usage"), 401)
    answer = app.client(account).get(f"{V1}/usage")
    assert answer.status_code == 200 and rate_limit_fields(answer)[2] == 2


# -- Redis: one budget across API processes -----------------------------------------------------


def _serve(spawner: Spawner, url: str, redis: str, prefix: str) -> tuple[str, Proc]:
    port = free_port()
    env = subprocess_env(
        url,
        SEOJOBS_RATE_LIMIT_STORAGE=redis,
        SEOJOBS_RATE_LIMIT="10/minute",
        SEOJOBS_RATE_LIMIT_KEY_PREFIX=prefix,
    )
    proc = spawner("serve", "--no-worker", "--port", str(port), env=env, name=f"api-{port}")
    base = f"http://127.0.0.1:{port}"
    wait_http_ok(proc, f"{base}/healthz")
    return base, proc


@pytest.fixture
def spawner(tmp_path: Path) -> Iterator[Spawner]:
    made = Spawner(tmp_path)
    try:
        yield made
    finally:
        made.stop_all()


def test_two_api_processes_share_one_budget_through_redis(
    sqlite_url: str, redis_url: str, spawner: Spawner
) -> None:
    with open_services(sqlite_url) as services:
        created = services.accounts.create_user("shared")
    prefix = key_prefix()
    try:
        first, _ = _serve(spawner, sqlite_url, redis_url, prefix)
        second, _ = _serve(spawner, sqlite_url, redis_url, prefix)
        headers = {"Authorization": created.api_key}
        with httpx.Client(headers=headers, timeout=30) as client:
            answers = [client.get(f"{(first, second)[i % 2]}{V1}/usage") for i in range(12)]
        assert [a.status_code for a in answers] == [200] * 10 + [429, 429]
        assert [rate_limit_fields(a)[2] for a in answers[:10]] == list(range(9, -1, -1))
        for refused in answers[10:]:
            assert_problem(refused, 429)
            assert rate_limit_fields(refused)[:3] == (10, 60, 0)
            assert retry_after(refused) >= 1
    finally:
        forget_rate_limit_keys(redis_url, prefix)
