"""Failed authentications are limited per client address (``SEOJOBS_AUTH_FAILURE_LIMIT``),
before the database lookup they would cost; ``X-Forwarded-For`` counts only from the proxies in
``SEOJOBS_TRUSTED_PROXIES``. (The same over Redis: test_api_ratelimit_storage.py.)"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.api_helpers import V1, Api, api, assert_problem, auth_headers, retry_after
from tests.conftest import make_settings, subprocess_env
from tests.e2e.helpers import Spawner, free_port, wait_http_ok

# Store-agnostic (the failure budget is the limiter's, before any store call): SQLite only; the
# store's own behaviour is tested on both stores elsewhere.
pytestmark = pytest.mark.stores("sqlite")

# Every way of failing to authenticate: wrong keys in each of the three forms, a key of the
# right shape that was never issued, a Bearer without a key, another scheme, and no key at all.
FAILURES: list[dict[str, str]] = [
    auth_headers("wrong"),
    auth_headers("wrong", "bearer"),
    auth_headers("wrong", "x-api-key"),
    auth_headers("sk_" + "A" * 43),
    {"Authorization": "Bearer"},
    {"Authorization": "Basic dXNlcjpwYXNz"},
    {},
]
LIMIT = len(FAILURES)  # one of each kind uses the budget up, if every kind is counted


@pytest.fixture
def app(store_url: str) -> Iterator[Api]:
    settings = make_settings(store_url, auth_failure_limit=f"{LIMIT}/minute")
    with api(settings) as running:
        yield running


def _usage(app: Api, headers: dict[str, str]) -> httpx.Response:
    # One client per app (building one costs ~0.1 s), without keys of its own.
    client = app.clients[0] if app.clients else app.client()
    return client.get(f"{V1}/usage", headers=headers)


def _lookups(app: Api) -> int:
    return int(app.app.state.auth_cache.lookups)


def _refused(answer: httpx.Response) -> None:
    body = assert_problem(answer, 429)
    assert body["type"].endswith("rate_limited")
    assert body["violated_policies"] == ["auth-failures"]
    assert 1 <= retry_after(answer) <= 60
    assert answer.headers["ratelimit-policy"] == f'"auth-failures";q={LIMIT};w=60'


def test_failed_attempts_of_every_kind_share_one_budget_per_address(app: Api) -> None:
    for headers in FAILURES:
        assert_problem(_usage(app, headers), 401)
    lookups = _lookups(app)
    for headers in FAILURES:  # every kind refused now, and none looked up
        _refused(_usage(app, headers))
    assert _lookups(app) == lookups


def test_successful_requests_never_count(app: Api) -> None:
    account = app.account(rate_limit="1000/minute")
    for _ in range(LIMIT - 1):
        assert_problem(_usage(app, FAILURES[0]), 401)
    for form in ("raw", "bearer", "x-api-key"):
        for _ in range(20):
            assert _usage(app, account.headers(form)).status_code == 200
    assert_problem(_usage(app, FAILURES[1]), 401)  # the LIMIT-th failure
    _refused(_usage(app, FAILURES[2]))


def test_an_address_over_its_budget_keeps_keys_it_already_proved(app: Api) -> None:
    known = app.account("known")
    assert _usage(app, known.headers()).status_code == 200  # looked up, cached
    unseen = app.account("unseen")
    for _ in range(LIMIT):
        assert_problem(_usage(app, FAILURES[0]), 401)
    lookups = _lookups(app)
    assert _usage(app, known.headers("bearer")).status_code == 200  # from the cache
    _refused(_usage(app, unseen.headers()))  # would need a lookup: refused before it
    assert _lookups(app) == lookups


# -- client addresses -------------------------------------------------------------------------


def _fail_from(app: Api, forwarded: str, n: int) -> list[int]:
    headers = FAILURES[0] | {"X-Forwarded-For": forwarded}
    return [_usage(app, headers).status_code for _ in range(n)]


@pytest.mark.parametrize("trusted", [None, "10.0.0.0/8", "192.0.2.1,::1"])
def test_forwarded_addresses_are_ignored_unless_the_peer_is_a_trusted_proxy(
    store_url: str, trusted: str | None
) -> None:
    extra = {} if trusted is None else {"trusted_proxies": trusted}
    settings = make_settings(store_url, auth_failure_limit=f"{LIMIT}/minute", **extra)
    with api(settings) as app:  # the peer is 127.0.0.1, never trusted here
        codes = [_fail_from(app, f"203.0.113.{i}", 1)[0] for i in range(LIMIT + 2)]
        assert codes == [401] * LIMIT + [429, 429]
        assert _fail_from(app, "198.51.100.9", 1) == [429]


@pytest.mark.parametrize("trusted", ["127.0.0.1", "127.0.0.0/8", "10.0.0.0/8, 127.0.0.1"])
def test_a_trusted_proxy_s_forwarded_address_has_its_own_budget(
    store_url: str, trusted: str
) -> None:
    settings = make_settings(
        store_url, auth_failure_limit=f"{LIMIT}/minute", trusted_proxies=trusted
    )
    with api(settings) as app:
        assert _fail_from(app, "203.0.113.7", LIMIT + 1) == [401] * LIMIT + [429]
        assert _fail_from(app, "203.0.113.8", 1) == [401]  # another client of the proxy
        # A client cannot pick its address by sending its own X-Forwarded-For: the proxy
        # appends the address it saw, and that rightmost untrusted one is the client.
        assert _fail_from(app, "198.51.100.1, 203.0.113.7", 1) == [429]
        assert _fail_from(app, "203.0.113.7, 198.51.100.2", 1) == [401]
        # IPv6 clients are counted by /64: one subscriber's addresses share a budget.
        assert _fail_from(app, "2001:db8:1:2::a", LIMIT) == [401] * LIMIT
        assert _fail_from(app, "2001:db8:1:2:ffff::b", 1) == [429]
        assert _fail_from(app, "2001:db8:1:3::a", 1) == [401]
        # Without the header, the proxy itself is the client.
        assert [_usage(app, FAILURES[0]).status_code for _ in range(LIMIT + 1)][-1] == 429


def test_seojobs_serve_believes_no_forwarded_address_by_default(
    sqlite_url: str, tmp_path: Path
) -> None:
    # uvicorn on its own believes X-Forwarded-For from 127.0.0.1; `seojobs serve` must not.
    spawner = Spawner(tmp_path)
    try:
        port = free_port()
        env = subprocess_env(sqlite_url, SEOJOBS_AUTH_FAILURE_LIMIT=f"{LIMIT}/minute")
        proc = spawner("serve", "--no-worker", "--port", str(port), env=env, name="api")
        base = f"http://127.0.0.1:{port}"
        wait_http_ok(proc, f"{base}/healthz")
        with httpx.Client(base_url=base, timeout=30) as client:
            codes = [
                client.get(
                    f"{V1}/usage", headers=FAILURES[0] | {"X-Forwarded-For": f"203.0.113.{i}"}
                ).status_code
                for i in range(LIMIT + 1)
            ]
        assert codes == [401] * LIMIT + [429]
    finally:
        spawner.stop_all()
