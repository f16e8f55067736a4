"""SerpApiChecker against a fake SerpApi on a loopback socket."""

from __future__ import annotations

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
    http_client,
)
from seojobs.providers.serpapi import SerpApiChecker
from seojobs.settings import Settings
from tests.fakes.edge import RecordingConnector
from tests.fakes.serp import FakeSerpApi, RecordingSleep, Reply
from tests.fakes.server import serve

URL = "https://example.com/page"


@pytest.fixture
def fake() -> Iterator[FakeSerpApi]:
    fake = FakeSerpApi()
    with serve(fake.app) as base:
        fake.base_url = base
        yield fake


def make_settings(fake: FakeSerpApi, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "database_url": "sqlite://",
        "serpapi_key": fake.key,
        "serpapi_base_url": fake.base_url,
        "provider_retries": 2,
        "provider_backoff": 0.01,
        **overrides,
    }
    return Settings(**values)


@pytest.fixture
def sleep() -> RecordingSleep:
    return RecordingSleep()


@pytest.fixture
async def checker(fake: FakeSerpApi, sleep: RecordingSleep) -> AsyncIterator[SerpApiChecker]:
    checker = SerpApiChecker(make_settings(fake), sleep=sleep)
    yield checker
    await checker.aclose()


async def test_indexed_on_google(fake: FakeSerpApi, checker: SerpApiChecker) -> None:
    fake.index("google", "https://example.com/page/deeper", URL)
    result = await checker.check(URL, "google")
    assert (result.status, result.provider, result.error_code) == ("indexed", "serpapi", None)
    assert result.detail["matched_url"] == URL
    assert result.detail["position"] == 2
    assert result.detail["query"] == "site:example.com/page"
    assert result.detail["search_id"]
    [request] = fake.requests
    assert request.path == "/search.json"
    assert request.params == {
        "engine": "google",
        "q": "site:example.com/page",
        "api_key": fake.key,
    }


async def test_no_results_is_not_indexed_not_an_error(
    fake: FakeSerpApi, checker: SerpApiChecker
) -> None:
    result = await checker.check(URL, "google")
    assert (result.status, result.error_code) == ("not_indexed", None)
    assert result.detail["results"] == 0


async def test_only_other_pages_is_not_indexed(fake: FakeSerpApi, checker: SerpApiChecker) -> None:
    fake.index("google", "https://example.com/page/deeper", "https://example.com/pages")
    result = await checker.check(URL, "google")
    assert result.status == "not_indexed"
    assert result.detail["results"] == 2
    assert "near_match" not in result.detail


@pytest.mark.parametrize(("engine", "param"), [("bing", "q"), ("yandex", "text")])
async def test_bing_and_yandex(
    fake: FakeSerpApi, checker: SerpApiChecker, engine: str, param: str
) -> None:
    fake.index(engine, URL)
    result = await checker.check(URL, engine)
    assert result.status == "indexed"
    assert fake.requests[0].params["engine"] == engine
    assert fake.requests[0].params[param] == "site:example.com/page"
    assert set(fake.requests[0].params) == {"engine", param, "api_key"}
    assert (await checker.check("https://example.com/other", engine)).status == "not_indexed"


async def test_engines_keep_their_own_index(fake: FakeSerpApi, checker: SerpApiChecker) -> None:
    fake.index("bing", URL)
    assert (await checker.check(URL, "google")).status == "not_indexed"


async def test_trailing_slash_variant_counts(fake: FakeSerpApi, checker: SerpApiChecker) -> None:
    fake.index("google", URL + "/")
    result = await checker.check(URL, "google")
    assert result.status == "indexed"
    assert result.detail["differences"] == ["trailing_slash"]


async def test_other_scheme_is_a_near_match_only(
    fake: FakeSerpApi, checker: SerpApiChecker
) -> None:
    fake.index("google", URL)
    result = await checker.check("http://example.com/page", "google")
    assert result.status == "not_indexed"
    assert result.detail["near_match"] == {"url": URL, "position": 1, "differences": ["scheme"]}


async def test_fragment_is_ignored(fake: FakeSerpApi, checker: SerpApiChecker) -> None:
    fake.index("google", URL)
    result = await checker.check(URL + "#section", "google")
    assert result.status == "indexed"
    assert fake.requests[0].params["q"] == "site:example.com/page"


async def test_junk_result_entries_are_skipped(fake: FakeSerpApi, checker: SerpApiChecker) -> None:
    body = {
        "search_metadata": {"id": "x", "status": "Success"},
        "organic_results": [None, "text", {"title": "no link"}, {"link": 5}, {"link": URL}],
    }
    fake.script(Reply(200, body))
    result = await checker.check(URL, "google")
    assert result.status == "indexed"
    assert result.detail["position"] == 3  # among the entries that are objects


async def test_success_without_organic_results_is_not_indexed(
    fake: FakeSerpApi, checker: SerpApiChecker
) -> None:
    fake.script(Reply(200, {"search_metadata": {"status": "Success"}}))
    assert (await checker.check(URL, "google")).status == "not_indexed"


async def test_invalid_key_is_fatal_and_not_retried(
    fake: FakeSerpApi, sleep: RecordingSleep
) -> None:
    checker = SerpApiChecker(make_settings(fake, serpapi_key="wrong"), sleep=sleep)
    with pytest.raises(ProviderError) as info:
        await checker.check(URL, "google")
    await checker.aclose()
    assert (info.value.code, info.value.fatal, info.value.status) == (AUTH_FAILED, True, 401)
    assert len(fake.requests) == 1


async def test_forbidden_account_is_fatal(fake: FakeSerpApi, checker: SerpApiChecker) -> None:
    fake.script(Reply(403, {"error": "This account is not allowed to use this API."}))
    with pytest.raises(ProviderError) as info:
        await checker.check(URL, "google")
    assert (info.value.code, info.value.fatal) == (AUTH_FAILED, True)


@pytest.mark.parametrize("status", [429, 200])
async def test_searches_used_up_is_fatal_quota(
    fake: FakeSerpApi, checker: SerpApiChecker, status: int
) -> None:
    fake.script(Reply(status, {"error": "Your account has run out of searches."}))
    with pytest.raises(ProviderError) as info:
        await checker.check(URL, "google")
    assert (info.value.code, info.value.fatal) == (QUOTA_EXHAUSTED, True)
    assert len(fake.requests) == 1


async def test_bad_parameter_is_a_rejected_result(
    fake: FakeSerpApi, checker: SerpApiChecker
) -> None:
    fake.script(Reply(400, {"error": "Unsupported `gl` parameter."}))
    result = await checker.check(URL, "google")
    assert (result.status, result.error_code) == ("failed", REJECTED)
    assert result.error_message == "Unsupported `gl` parameter."
    assert len(fake.requests) == 1


async def test_search_error_status_is_an_upstream_result(
    fake: FakeSerpApi, checker: SerpApiChecker
) -> None:
    fake.script(
        Reply(200, {"search_metadata": {"status": "Error"}, "error": "Google blocked the search."})
    )
    result = await checker.check(URL, "google")
    assert (result.status, result.error_code) == ("failed", UPSTREAM_ERROR)
    assert "Google blocked the search." in (result.error_message or "")


async def test_throttled_twice_then_ok(
    fake: FakeSerpApi, checker: SerpApiChecker, sleep: RecordingSleep
) -> None:
    fake.index("google", URL)
    throttled = {"error": "Your account has exceeded the hourly searches limit."}
    fake.script(Reply(429, throttled, headers={"Retry-After": "7"}), Reply(503, {}))
    result = await checker.check(URL, "google")
    assert result.status == "indexed"
    assert len(fake.requests) == 3
    assert len(sleep.delays) == 2
    assert sleep.delays[0] >= 7  # the provider's Retry-After wins over the short backoff


async def test_retries_exhausted_raise_upstream_error(
    fake: FakeSerpApi, checker: SerpApiChecker
) -> None:
    fake.script(*[Reply(500, {"error": "Internal error"})] * 3)
    with pytest.raises(ProviderError) as info:
        await checker.check(URL, "google")
    assert (info.value.code, info.value.retryable, info.value.status) == (UPSTREAM_ERROR, True, 500)
    assert len(fake.requests) == 3  # provider_retries=2


async def test_cut_off_transfer_is_retried(fake: FakeSerpApi, checker: SerpApiChecker) -> None:
    fake.index("google", URL)
    fake.script(Reply(200, {"organic_results": []}, truncate=True))
    assert (await checker.check(URL, "google")).status == "indexed"
    assert len(fake.requests) == 2


@pytest.mark.parametrize(
    "reply",
    [
        Reply(200, text="<html>maintenance</html>"),
        Reply(200, text='{"search_metadata": {"status": "Success"}, "organic_results": [{"li'),
        Reply(200, [1, 2]),
        Reply(200, {"search_metadata": {"status": "Success"}, "organic_results": {"link": URL}}),
        Reply(200, {"search_metadata": {"status": "Success"}, "error": {"code": 1}}),
        Reply(200, {}),
        Reply(200, text="plain", headers={"Content-Encoding": "gzip"}),
    ],
    ids=["html", "cut-json", "array", "dict-results", "error-object", "empty", "bad-gzip"],
)
async def test_malformed_answers_are_failed_results(
    fake: FakeSerpApi, checker: SerpApiChecker, reply: Reply
) -> None:
    fake.script(reply)
    result = await checker.check(URL, "google")
    assert (result.status, result.error_code) == ("failed", MALFORMED_RESPONSE)
    assert len(fake.requests) == 1  # a malformed answer is not retried


async def test_not_configured_names_the_setting(fake: FakeSerpApi) -> None:
    with pytest.raises(ProviderNotConfigured) as info:
        SerpApiChecker(make_settings(fake, serpapi_key=None))
    assert info.value.settings_needed == ["serpapi_key"]
    assert "SEOJOBS_SERPAPI_KEY" in info.value.message
    assert info.value.fatal
    assert fake.requests == []


async def test_unsupported_engine_is_fatal(fake: FakeSerpApi, checker: SerpApiChecker) -> None:
    with pytest.raises(ProviderError) as info:
        await checker.check(URL, "duckduckgo")
    assert (info.value.code, info.value.fatal) == (REJECTED, True)
    assert fake.requests == []


async def test_invalid_url_fails_without_a_paid_search(
    fake: FakeSerpApi, checker: SerpApiChecker
) -> None:
    result = await checker.check("ftp://example.com/file", "google")
    assert (result.status, result.error_code) == ("failed", REJECTED)
    assert fake.requests == []


async def test_a_shared_client_is_used_and_left_open(fake: FakeSerpApi) -> None:
    fake.index("google", URL)
    edge = RecordingConnector()
    async with http_client(make_settings(fake), connector=lambda: edge) as client:
        checker = SerpApiChecker(make_settings(fake), client=client)
        assert (await checker.check(URL, "google")).status == "indexed"
        assert (await checker.check(URL, "google")).status == "indexed"
        await checker.aclose()
        assert not client.closed  # the caller's client stays the caller's
    # Both searches went through the caller's client (its connector at the network edge).
    assert [r.split("?")[0] for r in edge.requests] == [f"GET {fake.base_url}/search.json"] * 2
    assert len(fake.requests) == 2
