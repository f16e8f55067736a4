"""The client's HTTP edges without sockets: rate-limit fields, Retry-After, the exception tree,
retries and pacing (httpx.MockTransport and an injected clock)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from email.utils import format_datetime
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from seojobs.client import (
    APIError,
    AsyncClient,
    AuthenticationError,
    Client,
    ConflictError,
    InvalidRequestError,
    NotFoundError,
    RateLimitedError,
    SeojobsError,
    ServerError,
    TransportError,
)
from seojobs.client._base import (
    Base,
    RateLimitState,
    error_from,
    parse_retry_after,
    parse_sf_list,
)
from seojobs.client.policy import RetryPolicy
from tests.unit.test_client_wait import FakeTime

PROBLEM = "application/problem+json"


def headers(**values: str | bytes) -> httpx.Headers:
    return httpx.Headers({k.replace("_", "-"): v for k, v in values.items()})


# -- RateLimit-Policy / RateLimit -----------------------------------------------------------------


def test_ratelimit_fields_of_the_draft() -> None:
    state = RateLimitState()
    state.update(headers(ratelimit_policy='"user";q=120;w=60', ratelimit='"user";r=37;t=21'), 5.0)
    assert (state.limit, state.window, state.remaining, state.reset_in) == (120, 60.0, 37, 21.0)
    assert state.observed_at == 5.0
    assert state.per_second == 2.0
    assert state.reset_left(15.0) == 11.0
    assert state.reset_left(30.0) is None  # over: no longer says anything


def test_ratelimit_token_names_and_several_policies() -> None:
    state = RateLimitState()
    state.update(
        headers(
            ratelimit_policy='burst;q=10;w=1, "day";q=1000;w=86400',
            ratelimit='burst;r=9;t=1, "day";r=400;t=5000',
        ),
        0.0,
    )
    # The lowest sustained rate wins; its own current values are used.
    assert (state.limit, state.window) == (1000, 86400.0)
    assert (state.remaining, state.reset_in) == (400, 5000.0)


@pytest.mark.parametrize(
    "policy",
    [
        '"user";q=abc;w=60',
        '"user";q=-1;w=60',
        '"user";q=120;w=0',
        '"user";q=1.5;w=60',
        '"user";q=?1;w=60',
        '"user";q=120;w=60,',
        '"user" q=120',
        '"user";Q=120;w=60',
        '"user";q=120;w=60;',
        "",
        '"unterminated;q=120;w=60',
        '"user";q=12345678901234567;w=60',
        '"user";q=@1659578233;w=60',
        '"user";q=%"120";w=60',
        '"user";q=:MTIw:;w=60',
        "(user);q=120;w=60",
        '"user";q=120;w=60;q=?1',
        "us\xe9r;q=120;w=60".encode(),  # UTF-8 on the wire: httpx decodes it as latin-1
    ],
)
def test_malformed_policy_is_ignored(policy: str | bytes) -> None:
    state = RateLimitState(limit=50, window=10.0)
    state.update(headers(ratelimit_policy=policy))
    assert (state.limit, state.window) == (50, 10.0)


@pytest.mark.parametrize(
    "current",
    [
        '"user";r=x;t=5',
        '"user";r=-3;t=5',
        '"user";r=3;t=-5',
        '"user";t=5',
        "r=3",
        '"user";r=3.0;t=5',
        '"user";r=3;t=?1',
        '"user";r=3;t=@1659578233',
        '"user";r=3;t=5,,',
    ],
)
def test_malformed_current_is_ignored(current: str) -> None:
    state = RateLimitState(remaining=9, reset_in=4.0, observed_at=1.0)
    state.update(headers(ratelimit=current), 2.0)
    assert (state.remaining, state.reset_in, state.observed_at) == (9, 4.0, 1.0)


def test_absent_fields_keep_what_was_known() -> None:
    state = RateLimitState()
    state.update(headers(ratelimit_policy='"user";q=120;w=60'), 0.0)
    state.update(headers(), 1.0)
    assert (state.limit, state.window) == (120, 60.0)


def test_structured_field_list_parser() -> None:
    # RFC 9651 values as http-sf returns them; members are named by their string or token.
    assert parse_sf_list('"a";x=1;y="s\\"q";z, b;f=?0;d=2.5;k=:AAE=:') == [
        ("a", {"x": 1, "y": 's"q', "z": True}),
        ("b", {"f": False, "d": Decimal("2.5"), "k": b"\x00\x01"}),
    ]
    assert parse_sf_list("") == []
    # Inner lists and bare numbers cannot name a policy: left out, the rest kept.
    assert parse_sf_list('(a b);q=1;w=1, 5;q=1;w=1, "x";q=2;w=3') == [("x", {"q": 2, "w": 3})]
    for malformed in (None, "a,,b", "a,", '"open', "a;B=1", "a;q=12345678901234567", "é"):
        assert parse_sf_list(malformed) is None, malformed


@given(st.text(max_size=60), st.text(max_size=60))
def test_any_ratelimit_text_leaves_the_client_standing(policy: str, current: str) -> None:
    # Whatever a server or a proxy puts in these fields, reading them never raises.
    state = RateLimitState()
    values = {"ratelimit-policy": policy, "ratelimit": current}
    try:
        fields = httpx.Headers(values)
    except (UnicodeEncodeError, ValueError):
        return  # httpx itself refuses to carry such a header
    state.update(fields, 0.0)
    assert state.limit is None or isinstance(state.limit, int)
    assert state.remaining is None or isinstance(state.remaining, int)


# -- Retry-After ----------------------------------------------------------------------------------


def test_retry_after_forms() -> None:
    now = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert parse_retry_after("7") == 7.0
    assert parse_retry_after(" 0 ") == 0.0
    assert parse_retry_after(format_datetime(now + timedelta(seconds=30), usegmt=True), now) == 30
    assert parse_retry_after(format_datetime(now - timedelta(seconds=30), usegmt=True), now) == 0
    for bad in ("-1", "soon", "", "1e3"):
        assert parse_retry_after(bad) is None
    assert parse_retry_after(None) is None


# -- the exception tree ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "cls"),
    [
        (400, InvalidRequestError),
        (401, AuthenticationError),
        (403, APIError),
        (404, NotFoundError),
        (409, ConflictError),
        (413, InvalidRequestError),
        (422, InvalidRequestError),
        (429, RateLimitedError),
        (500, ServerError),
        (503, ServerError),
    ],
)
def test_status_maps_to_its_exception(status: int, cls: type[APIError]) -> None:
    error = error_from(httpx.Response(status, json={"title": "x", "status": status}))
    assert type(error) is cls
    assert isinstance(error, APIError) and isinstance(error, SeojobsError)
    assert error.status == status


def test_problem_members_are_exposed() -> None:
    body = {
        "type": "https://seojobs.dev/problems/rate_limited",
        "title": "Too many requests",
        "status": 429,
        "detail": "the limit is 3 requests per 60 s; retry in 42 s",
        "instance": "/api/v1/usage",
        "violated_policies": ["user"],
    }
    response = httpx.Response(
        429, json=body, headers={"Retry-After": "42", "Content-Type": PROBLEM}
    )
    error = error_from(response)
    assert isinstance(error, RateLimitedError)
    assert error.type == body["type"] and error.code == "rate_limited"
    assert error.title == "Too many requests" and error.detail == body["detail"]
    assert error.instance == "/api/v1/usage"
    assert error.retry_after == 42.0
    assert error.extensions == {"violated_policies": ["user"]}
    assert error.body == body
    assert "429 Too many requests" in str(error)


def test_validation_errors_and_explicit_code() -> None:
    body = {
        "title": "Invalid request",
        "status": 422,
        "code": "validation_error",
        "errors": [{"field": "urls[0]", "message": "not a URL"}],
    }
    error = error_from(httpx.Response(422, json=body))
    assert isinstance(error, InvalidRequestError)
    assert error.code == "validation_error" and error.type == "about:blank"
    assert error.errors == [{"field": "urls[0]", "message": "not a URL"}]


def test_non_json_error_keeps_the_text() -> None:
    error = error_from(httpx.Response(502, text="<html>Bad gateway</html>"))
    assert isinstance(error, ServerError)
    assert error.title == "Bad Gateway" and error.detail == "<html>Bad gateway</html>"
    assert error.code is None and error.retry_after is None and error.extensions == {}


# -- retries --------------------------------------------------------------------------------------


class Script:
    """A MockTransport handler answering from a list; records every request."""

    def __init__(self, *answers: httpx.Response | Exception) -> None:
        self.answers = list(answers)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, Exception):
            raise answer
        return answer


def make(script: Callable[[httpx.Request], httpx.Response], time: FakeTime, **kw: Any) -> Client:
    return Client(
        "http://api.test",
        "key",
        transport=httpx.MockTransport(script),
        sleep=time.sleep,
        clock=time.clock,
        **kw,
    )


CREATED = {"job_id": 5, "status": "pending"}
USAGE = {
    name: {"limit": 10, "used": 1, "remaining": 9, "resets_at": "2026-01-02T00:00:00+00:00"}
    for name in ("submit", "check")
}


def test_lost_answer_to_a_post_is_retried_with_the_same_key() -> None:
    script = Script(httpx.ReadError("connection reset"), httpx.Response(202, json=CREATED))
    time = FakeTime()
    with make(script, time) as client:
        job = client.submit(["https://a.example/"], engine="bing")
    assert job.job_id == 5
    keys = [r.headers["idempotency-key"] for r in script.requests]
    assert len(keys) == 2 and keys[0] == keys[1] and keys[0]
    assert len(time.sleeps) == 1 and 0 <= time.sleeps[0] <= 0.5  # full jitter, first attempt


def test_in_flight_conflict_of_a_keyed_post_is_retried_after_its_retry_after() -> None:
    busy = httpx.Response(409, json={"title": "Request in progress"}, headers={"Retry-After": "1"})
    script = Script(busy, httpx.Response(202, json=CREATED))
    time = FakeTime()
    with make(script, time) as client:
        assert client.check_urls(["https://a.example/"]).job_id == 5
    assert time.sleeps and time.sleeps[0] >= 1.0


def test_5xx_is_retried_honouring_retry_after_then_gives_up() -> None:
    script = Script(httpx.Response(503, json={"title": "Busy"}, headers={"Retry-After": "4"}))
    time = FakeTime()
    client = make(script, time, retry_policy=RetryPolicy(attempts=2))
    with client, pytest.raises(ServerError) as caught:
        client.usage()
    assert caught.value.status == 503 and caught.value.retry_after == 4.0
    assert len(script.requests) == 3
    assert len(time.sleeps) == 2 and all(s >= 4.0 for s in time.sleeps)


def test_429_is_retried_after_retry_after_unless_the_caller_handles_it() -> None:
    limited = httpx.Response(429, json={"title": "Too many"}, headers={"Retry-After": "9"})
    time = FakeTime()
    with make(Script(limited, httpx.Response(200, json=USAGE)), time) as client:
        assert client.usage().submit.remaining == 9
    assert time.sleeps and time.sleeps[0] >= 9.0

    time = FakeTime()
    script = Script(limited, httpx.Response(200, json=CREATED))
    with make(script, time) as client, pytest.raises(RateLimitedError) as caught:
        client.get("index_check", 5, retry_429=False)
    assert caught.value.retry_after == 9.0 and len(script.requests) == 1 and time.sleeps == []


@pytest.mark.parametrize("status", [400, 401, 404, 422, 500])
def test_answers_that_retrying_cannot_fix_are_not_retried(status: int) -> None:
    script = Script(httpx.Response(status, json={"title": "No"}))
    time = FakeTime()
    with make(script, time) as client, pytest.raises(APIError):
        client.get("index_submit", 1)
    assert len(script.requests) == 1 and time.sleeps == []


def test_transport_errors_exhausted_become_transport_error() -> None:
    script = Script(httpx.ConnectError("refused"))
    time = FakeTime()
    with make(script, time, retries=2) as client, pytest.raises(TransportError) as caught:
        client.get("index_submit", 1)
    assert isinstance(caught.value.__cause__, httpx.ConnectError)
    assert len(script.requests) == 3 and client.requests_sent == 3


# -- pacing ---------------------------------------------------------------------------------------


def budget_server(limit: int, window: int, time: FakeTime) -> Callable[[httpx.Request], Any]:
    """Announces its policy and records when each request arrived."""
    arrivals: list[float] = []

    def handler(request: httpx.Request) -> httpx.Response:
        arrivals.append(time.now)
        return httpx.Response(
            200, json=USAGE, headers={"RateLimit-Policy": f'"user";q={limit};w={window}'}
        )

    handler.arrivals = arrivals  # type: ignore[attr-defined]
    return handler


def test_pacer_keeps_every_window_within_the_announced_limit() -> None:
    time = FakeTime()
    server = budget_server(3, 10, time)
    with make(server, time) as client:
        for _ in range(10):
            client.usage()
    arrivals: list[float] = server.arrivals  # type: ignore[attr-defined]
    assert len(arrivals) == 10
    for start in arrivals:
        assert sum(1 for t in arrivals if start <= t < start + 10) <= 3
    assert arrivals[3] >= 10.0


def test_pacing_can_be_switched_off() -> None:
    time = FakeTime()
    server = budget_server(3, 10, time)
    with make(server, time, pace=False) as client:
        for _ in range(5):
            client.usage()
    assert time.sleeps == []


def test_a_429_holds_back_every_later_call_for_its_retry_after() -> None:
    time = FakeTime()
    limited = httpx.Response(429, json={"title": "Too many"}, headers={"Retry-After": "20"})
    script = Script(limited, httpx.Response(200, json=CREATED))
    with make(script, time) as client:
        with pytest.raises(RateLimitedError):
            client.get("index_check", 5, retry_429=False)
        client.get("index_check", 5)  # another call, not a retry: still waits
    assert time.sleeps == [20.0]


def test_r_zero_waits_for_t() -> None:
    time = FakeTime()
    empty = httpx.Response(200, json=CREATED, headers={"RateLimit": '"user";r=0;t=12'})
    with make(Script(empty, httpx.Response(200, json=CREATED)), time) as client:
        client.get("index_check", 5)
        client.get("index_check", 5)
    assert time.sleeps == [12.0]


def test_async_client_paces_and_retries_the_same_way() -> None:
    time = FakeTime()
    script = Script(
        httpx.ReadError("reset"),
        httpx.Response(202, json=CREATED, headers={"RateLimit": '"user";r=0;t=7'}),
        httpx.Response(200, json=CREATED),
    )

    async def sleep(seconds: float) -> None:
        time.sleep(seconds)

    async def scenario() -> None:
        async with AsyncClient(
            "http://api.test",
            "key",
            transport=httpx.MockTransport(script),
            sleep=sleep,
            clock=time.clock,
        ) as client:
            await client.submit(["https://a.example/"])
            await client.get("index_submit", 5)

    asyncio.run(scenario())
    keys = [r.headers.get("idempotency-key") for r in script.requests[:2]]
    assert keys[0] and keys[0] == keys[1]
    assert time.sleeps[-1] == 7.0


# -- requests -------------------------------------------------------------------------------------


def test_long_poll_sends_prefer_wait_and_stretches_the_read_timeout() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=CREATED)

    time = FakeTime()
    with make(handler, time, timeout=30.0) as client:
        client.get("index_submit", 5, long_poll=25)
        client.get("index_submit", 5)
    assert seen[0].headers["prefer"] == "wait=25"
    assert seen[0].extensions["timeout"]["read"] == 55.0
    assert "prefer" not in seen[1].headers
    assert seen[1].extensions["timeout"]["read"] == 30.0


def test_requests_carry_the_key_and_kinds_are_normalised() -> None:
    request = Base.create_request("index_submit", ["https://a/"], checker=2, title="t")
    assert request.json == {"urls": ["https://a/"], "engine": "google", "checker": 2, "title": "t"}
    assert len(request.headers["Idempotency-Key"]) >= 32
    assert Base.status_request("index_check", 3).path == "/api/v1/index-check/jobs/3"
    client = Client("http://api.test", "secret")
    assert client._http.headers["authorization"] == "Bearer secret"
    client.close()
