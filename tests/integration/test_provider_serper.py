"""SerperChecker against a fake Serper.dev on a loopback socket."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from seojobs.providers.base import (
    AUTH_FAILED,
    MALFORMED_RESPONSE,
    QUOTA_EXHAUSTED,
    REJECTED,
    UPSTREAM_ERROR,
    ProviderError,
    ProviderNotConfigured,
)
from seojobs.providers.serper import SerperChecker
from seojobs.settings import Settings
from tests.fakes.serp import FakeSerper, RecordingSleep, Reply
from tests.fakes.server import serve

URL = "https://example.com/page"


@pytest.fixture
def fake() -> Iterator[FakeSerper]:
    fake = FakeSerper()
    with serve(fake.app) as base:
        fake.base_url = base
        yield fake


def make_settings(fake: FakeSerper, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "database_url": "sqlite://",
        "serper_key": fake.key,
        "serper_base_url": fake.base_url,
        "provider_retries": 2,
        "provider_backoff": 0.01,
        **overrides,
    }
    return Settings(**values)


@pytest.fixture
def sleep() -> RecordingSleep:
    return RecordingSleep()


@pytest.fixture
async def checker(fake: FakeSerper, sleep: RecordingSleep) -> AsyncIterator[SerperChecker]:
    checker = SerperChecker(make_settings(fake), sleep=sleep)
    yield checker
    await checker.aclose()


async def test_indexed(fake: FakeSerper, checker: SerperChecker) -> None:
    fake.index("google", "https://example.com/page/deeper", URL)
    result = await checker.check(URL, "google")
    assert (result.status, result.provider, result.error_code) == ("indexed", "serper", None)
    assert (result.detail["matched_url"], result.detail["position"]) == (URL, 2)
    assert result.detail["query"] == "site:example.com/page"
    assert result.detail["credits"] == 1
    [request] = fake.requests
    assert (request.method, request.path) == ("POST", "/search")
    assert request.headers["x-api-key"] == fake.key
    assert request.body == {"q": "site:example.com/page", "num": 10}


async def test_not_indexed(fake: FakeSerper, checker: SerperChecker) -> None:
    fake.index("google", "https://example.com/page/deeper")
    result = await checker.check(URL, "google")
    assert (result.status, result.error_code) == ("not_indexed", None)
    assert result.detail["results"] == 1


async def test_num_is_an_option(fake: FakeSerper) -> None:
    checker = SerperChecker(make_settings(fake), num=20)
    await checker.check(URL, "google")
    await checker.aclose()
    assert fake.requests[0].body["num"] == 20


@pytest.mark.parametrize(
    ("wanted", "listed", "status", "field"),
    [
        (URL, URL + "/", "indexed", "differences"),
        ("http://example.com/page", URL, "not_indexed", "near_match"),
        (URL + "#top", URL, "indexed", "matched_url"),
    ],
    ids=["trailing-slash", "http-vs-https", "fragment"],
)
async def test_near_misses(
    fake: FakeSerper, checker: SerperChecker, wanted: str, listed: str, status: str, field: str
) -> None:
    fake.index("google", listed)
    result = await checker.check(wanted, "google")
    assert result.status == status
    assert field in result.detail


async def test_answer_without_organic_is_not_indexed(
    fake: FakeSerper, checker: SerperChecker
) -> None:
    fake.script(Reply(200, {"searchParameters": {"q": "site:example.com/page"}}))
    result = await checker.check(URL, "google")
    assert (result.status, result.error_code) == ("not_indexed", None)


async def test_invalid_key_is_fatal_and_not_retried(fake: FakeSerper) -> None:
    checker = SerperChecker(make_settings(fake, serper_key="wrong"))
    with pytest.raises(ProviderError) as info:
        await checker.check(URL, "google")
    await checker.aclose()
    assert (info.value.code, info.value.fatal, info.value.status) == (AUTH_FAILED, True, 403)
    assert len(fake.requests) == 1


async def test_no_credits_is_fatal_quota(fake: FakeSerper, checker: SerperChecker) -> None:
    fake.credits = 0
    with pytest.raises(ProviderError) as info:
        await checker.check(URL, "google")
    assert (info.value.code, info.value.fatal) == (QUOTA_EXHAUSTED, True)
    assert len(fake.requests) == 1


async def test_other_bad_request_is_a_rejected_result(
    fake: FakeSerper, checker: SerperChecker
) -> None:
    fake.script(Reply(400, {"message": "Query too long", "statusCode": 400}))
    result = await checker.check(URL, "google")
    assert (result.status, result.error_code) == ("failed", REJECTED)
    assert "Query too long" in (result.error_message or "")


async def test_throttled_then_ok(
    fake: FakeSerper, checker: SerperChecker, sleep: RecordingSleep
) -> None:
    fake.index("google", URL)
    fake.script(Reply(429, {"message": "Too many requests"}), Reply(502, text="Bad Gateway"))
    assert (await checker.check(URL, "google")).status == "indexed"
    assert len(fake.requests) == 3
    assert len(sleep.delays) == 2


async def test_retries_exhausted_raise_upstream_error(
    fake: FakeSerper, checker: SerperChecker
) -> None:
    fake.script(*[Reply(503, text="unavailable")] * 3)
    with pytest.raises(ProviderError) as info:
        await checker.check(URL, "google")
    assert (info.value.code, info.value.retryable, info.value.status) == (UPSTREAM_ERROR, True, 503)
    assert len(fake.requests) == 3


async def test_cut_off_transfers_exhaust_to_upstream_error(
    fake: FakeSerper, checker: SerperChecker
) -> None:
    fake.script(*[Reply(200, {"organic": []}, truncate=True)] * 3)
    with pytest.raises(ProviderError) as info:
        await checker.check(URL, "google")
    assert (info.value.code, info.value.retryable) == (UPSTREAM_ERROR, True)
    assert len(fake.requests) == 3


@pytest.mark.parametrize(
    "reply",
    [
        Reply(200, text="not json"),
        Reply(200, text='{"organic": [{"link": "https://exa'),
        Reply(200, ["organic"]),
        Reply(200, {"organic": {"link": URL}}),
        Reply(200, {}),
        Reply(200, text="plain", headers={"Content-Encoding": "gzip"}),
    ],
    ids=["text", "cut-json", "array", "organic-dict", "empty", "bad-gzip"],
)
async def test_malformed_answers_are_failed_results(
    fake: FakeSerper, checker: SerperChecker, reply: Reply
) -> None:
    fake.script(reply)
    result = await checker.check(URL, "google")
    assert (result.status, result.error_code) == ("failed", MALFORMED_RESPONSE)
    assert len(fake.requests) == 1


async def test_a_gzip_answer_is_decoded(fake: FakeSerper, checker: SerperChecker) -> None:
    fake.script(Reply(200, {"organic": [{"link": URL}]}, gzip=True))
    result = await checker.check(URL, "google")
    assert (result.status, result.detail["position"]) == ("indexed", 1)


async def test_a_proxy_from_the_environment_is_used(
    fake: FakeSerper, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A forward proxy on loopback that answers itself: the request must reach it, not Serper.
    seen: list[str] = []

    async def proxy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
        length = next(
            int(line.split(":", 1)[1])
            for line in head.split("\r\n")
            if line.lower().startswith("content-length:")
        )
        await reader.readexactly(length)
        seen.append(head.split("\r\n", 1)[0])
        body = json.dumps({"organic": [{"link": URL}]}).encode()
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(proxy, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    for name in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY", "no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{port}")
    checker = SerperChecker(make_settings(fake))
    try:
        result = await checker.check(URL, "google")
    finally:
        await checker.aclose()
        server.close()
        await server.wait_closed()
    assert result.status == "indexed"
    assert seen == [f"POST {fake.base_url}/search HTTP/1.1"]
    assert fake.requests == []


async def test_junk_entries_are_skipped(fake: FakeSerper, checker: SerperChecker) -> None:
    fake.script(Reply(200, {"organic": [1, {"title": "x"}, {"link": None}, {"link": URL}]}))
    result = await checker.check(URL, "google")
    assert result.status == "indexed"


def test_not_configured_names_the_setting(fake: FakeSerper) -> None:
    with pytest.raises(ProviderNotConfigured) as info:
        SerperChecker(make_settings(fake, serper_key=None))
    assert info.value.settings_needed == ["serper_key"]
    assert "SEOJOBS_SERPER_KEY" in info.value.message


@pytest.mark.parametrize("engine", ["bing", "yandex"])
async def test_google_only(fake: FakeSerper, checker: SerperChecker, engine: str) -> None:
    with pytest.raises(ProviderError) as info:
        await checker.check(URL, engine)
    assert (info.value.code, info.value.fatal) == (REJECTED, True)
    assert fake.requests == []
