"""The rate limiter's Redis failing: hung, refusing, coming back; and deployments sharing one.

The failing Redis is a real loopback port (``tests.fakes.tcp.Endpoint``) that refuses, accepts
and never answers, or forwards to the test Redis; the app is the real one on a real socket.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from seojobs.settings import Settings
from tests.api_helpers import (
    TLS,
    V1,
    Account,
    Api,
    api,
    assert_problem,
    auth_headers,
    forget_rate_limit_keys,
    key_prefix,
    rate_limit_fields,
    redis_or_skip,
    retry_after,
)
from tests.conftest import make_settings
from tests.fakes.tcp import address_of, endpoint
from tests.waiting import wait_until

# A guard, not a measurement: an answer that has not come in this long is taken as hung (the
# hung endpoint holds connections for 60 s).
ANSWER_WITHIN = 10.0
WRONG_KEY = auth_headers("sk_wrong")


@pytest.fixture
def redis_url() -> str:
    return redis_or_skip()


@pytest.fixture
def prefix(redis_url: str) -> Iterator[str]:
    made = key_prefix()
    yield made
    forget_rate_limit_keys(redis_url, made)


def _settings(url: str, storage: str, **overrides: object) -> Settings:
    values: dict[str, object] = {
        "rate_limit_storage": storage,
        "rate_limit_storage_timeout": 0.5,
        "rate_limit_storage_cooldown": 0.2,  # probes the storage again often
    }
    return make_settings(url, **(values | overrides))


Call = tuple[str, dict[str, str]]


def _send_at_once(base: str, calls: list[Call]) -> list[httpx.Response]:
    """Every call at the same time, each on a connection of its own; fails on any that hangs."""
    # One client for all (each httpx.Client costs ~0.1 s of CPU to build, and 85 of them
    # starved the server in this process), with no cap on its connections, on the tests' one
    # TLS context (building its own was most of a client's cost, 18 times per test).
    client = httpx.Client(
        base_url=base,
        timeout=ANSWER_WITHIN,
        limits=httpx.Limits(max_connections=None),
        verify=TLS,
    )

    def one(call: Call) -> httpx.Response | Exception:
        path, headers = call
        try:
            return client.get(path, headers=headers)
        except httpx.HTTPError as exc:
            return exc

    with client, ThreadPoolExecutor(max_workers=len(calls)) as pool:
        answers = list(pool.map(one, calls))
    got = [a for a in answers if isinstance(a, httpx.Response)]
    hung = [(call[0], repr(a)) for call, a in zip(calls, answers, strict=True) if a not in got]
    assert not hung, f"{len(hung)} requests had no answer within {ANSWER_WITHIN} s: {hung[:3]}"
    return got


def _expect_storage_policy(answer: httpx.Response, policy: str, served: int) -> None:
    """An answer given without the limiter: served unlimited, or 503 under ``closed``."""
    if policy == "open":
        assert answer.status_code == served, answer.text
        assert "ratelimit" not in answer.headers
    else:
        body = assert_problem(answer, 503)
        assert body["type"].endswith("rate_limit_unavailable")
        assert 1 <= retry_after(answer) <= 60


@pytest.mark.parametrize("policy", ["open", "closed"])
def test_a_hung_storage_never_hangs_the_api(store_url: str, policy: str) -> None:
    with endpoint("hang") as hung:
        # Requests held by the hung limiter are slow, so the database gate probes PostgreSQL
        # meanwhile (with 85 client threads in this process, a new connection once took over
        # 1 s on a loaded machine: make_settings gives the probe more).
        settings = _settings(
            store_url, hung.redis_url("redis://h/0"), rate_limit_on_storage_error=policy
        )
        with api(settings) as app:
            try:
                account = app.account()
                # More requests at once than the thread pool has threads (40): before, each
                # held one waiting on Redis, and health checks and key lookups queued behind.
                calls: list[Call] = (
                    [(f"{V1}/usage", account.headers())] * 60
                    + [("/healthz", {})] * 10
                    + [(f"{V1}/usage", WRONG_KEY)] * 10
                    + [(f"{V1}/usage", {})] * 5
                )

                def check(call: Call, answer: httpx.Response) -> None:
                    if call[0] == "/healthz":
                        assert answer.status_code == 200
                    else:
                        served = 200 if call[1] == account.headers() else 401
                        _expect_storage_policy(answer, policy, served)

                for call, answer in zip(calls, _send_at_once(app.base, calls), strict=True):
                    check(call, answer)
                # ... and one at a time after the burst, through the breaker's probes.
                for call in calls[::5]:
                    check(call, _send_at_once(app.base, [call])[0])
                assert hung.accepted >= 1  # the limiter did try the hung server
            finally:
                hung.close()


def _limiter_lines(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "seojobs.ratelimit"]


def _limited(client: httpx.Client) -> bool:
    answer = client.get(f"{V1}/usage")
    assert answer.status_code == 200, answer.text
    return "ratelimit" in answer.headers


def test_an_outage_is_logged_once_and_its_end_once(
    store_url: str, redis_url: str, prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="seojobs.ratelimit")
    with endpoint("refuse", target=address_of(redis_url)) as edge:
        settings = _settings(store_url, edge.redis_url(redis_url), rate_limit_key_prefix=prefix)
        with api(settings) as app:
            try:
                client = app.client(app.account(rate_limit="1000/minute"))
                stranger = app.client()
                for _ in range(120):  # refused: served unlimited, and said once
                    assert not _limited(client)
                for _ in range(30):
                    assert_problem(stranger.get(f"{V1}/usage", headers=WRONG_KEY), 401)
                lines = _limiter_lines(caplog)
                assert len(lines) == 1, [r.getMessage() for r in lines]
                _one_line_without_traceback(lines[0], "unavailable (ConnectionError")

                edge.set("forward")  # Redis is back: counted again, and said once
                wait_until(lambda: _limited(client))
                _counted(client)
                assert len(_limiter_lines(caplog)) == 2
                _one_line_without_traceback(_limiter_lines(caplog)[1], "answers again")

                edge.set("hang")  # a second outage, of another kind: one more line
                wait_until(lambda: not _limited(client))
                for _ in range(30):
                    assert not _limited(client)
                assert len(_limiter_lines(caplog)) == 3

                edge.set("forward")
                wait_until(lambda: _limited(client))
                _counted(client)
                assert len(_limiter_lines(caplog)) == 4
            finally:
                edge.close()


def _one_line_without_traceback(record: logging.LogRecord, says: str) -> None:
    assert record.levelno == logging.WARNING
    assert record.exc_info is None and record.exc_text is None
    assert says in record.getMessage() and "\n" not in record.getMessage()


def _counted(client: httpx.Client) -> None:
    """Each request takes one from the budget again."""
    left = [rate_limit_fields(client.get(f"{V1}/usage"))[2] for _ in range(5)]
    assert left == list(range(left[0], left[0] - 5, -1)), left


def test_closed_policy_answers_503_while_the_storage_refuses(
    store_url: str, redis_url: str, prefix: str
) -> None:
    with endpoint("refuse", target=address_of(redis_url)) as edge:
        settings = _settings(
            store_url,
            edge.redis_url(redis_url),
            rate_limit_on_storage_error="closed",
            rate_limit_key_prefix=prefix,
        )
        with api(settings) as app:
            account = app.account(rate_limit="1000/minute")
            client = app.client(account)
            for headers in (account.headers("bearer"), account.headers("x-api-key"), WRONG_KEY):
                for _ in range(3):
                    _expect_storage_policy(client.get(f"{V1}/usage", headers=headers), "closed", 0)
            assert client.get("/healthz").status_code == 200
            edge.set("forward")

            def served() -> bool:
                return client.get(f"{V1}/usage").status_code == 200

            wait_until(served)
            _counted(client)
            assert_problem(client.get(f"{V1}/usage", headers=WRONG_KEY), 401)


# -- the real Redis --------------------------------------------------------------------------


def _redis_app(url: str, redis_url: str, prefix: str) -> Settings:
    return make_settings(
        url,
        rate_limit_storage=redis_url,
        rate_limit="3/minute",
        auth_failure_limit="2/minute",
        rate_limit_key_prefix=prefix,
    )


def _codes(app: Api, account: Account | None, n: int) -> list[int]:
    client = app.client(account)
    headers = {} if account else WRONG_KEY
    return [client.get(f"{V1}/usage", headers=headers).status_code for _ in range(n)]


def test_redis_limits_users_and_failed_attempts(
    store_url: str, redis_url: str, prefix: str
) -> None:
    with api(_redis_app(store_url, redis_url, prefix)) as app:
        account = app.account()
        client = app.client(account)
        answers = [client.get(f"{V1}/usage") for _ in range(3)]
        assert [rate_limit_fields(a)[:3] for a in answers] == [(3, 60, r) for r in (2, 1, 0)]
        refused = client.get(f"{V1}/usage")
        assert_problem(refused, 429)
        assert rate_limit_fields(refused)[:3] == (3, 60, 0)
        assert 1 <= retry_after(refused) <= 60
        assert _codes(app, None, 3) == [401, 401, 429]
        assert 1 <= retry_after(app.client().get(f"{V1}/usage", headers=WRONG_KEY)) <= 60


def test_deployments_sharing_a_redis_database_have_separate_budgets(
    store_url: str, redis_url: str
) -> None:
    # One database, so that the user has the same id in every app: what two deployments with
    # databases of their own look like to Redis (ids restart at 1 in each).
    ours, theirs = key_prefix(), key_prefix()
    try:
        with (
            api(_redis_app(store_url, redis_url, ours)) as first,
            api(_redis_app(store_url, redis_url, theirs)) as other,
            api(_redis_app(store_url, redis_url, ours)) as same,  # our second process
        ):
            account = first.account()
            assert _codes(first, account, 4) == [200, 200, 200, 429]
            assert _codes(other, account, 4) == [200, 200, 200, 429]
            assert _codes(same, account, 1) == [429]
            assert _codes(first, None, 3) == [401, 401, 429]
            assert _codes(other, None, 3) == [401, 401, 429]
            assert _codes(same, None, 1) == [429]
    finally:
        forget_rate_limit_keys(redis_url, ours)
        forget_rate_limit_keys(redis_url, theirs)


def test_endpoint_refuses_then_listens() -> None:
    """The fake itself: refused before it listens, then accepted (so the tests above test)."""
    import socket

    with endpoint("refuse") as edge:
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", edge.port), timeout=5).close()
        edge.set("hang")
        conn = socket.create_connection(("127.0.0.1", edge.port), timeout=5)
        wait_until(lambda: edge.accepted == 1)
        conn.close()
