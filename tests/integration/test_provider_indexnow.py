"""IndexNowSubmitter against a fake IndexNow endpoint on a loopback socket."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator

import pytest

from seojobs.providers.base import (
    AUTH_FAILED,
    MALFORMED_RESPONSE,
    REJECTED,
    UPSTREAM_ERROR,
    ProviderError,
    ProviderNotConfigured,
    SubmitResult,
    http_client,
)
from seojobs.providers.indexnow import KEY_INVALID, IndexNowSubmitter
from seojobs.settings import Settings
from tests.fakes.edge import RecordingConnector
from tests.fakes.indexnow import PATH, FakeIndexNow, Reply
from tests.fakes.server import serve

KEY = "73134416ae45434d98edc086e0bf6740"
A = "a.example"
B = "b.example"


def settings_for(endpoint: str, **overrides: object) -> Settings:
    values: dict[str, object] = {
        "indexnow_key": KEY,
        "indexnow_endpoint": endpoint,
        "provider_retries": 2,
        "provider_backoff": 0.01,
    }
    values.update(overrides)
    return Settings(**values)  # type: ignore[arg-type]


@pytest.fixture
def fake() -> FakeIndexNow:
    return FakeIndexNow()


@pytest.fixture
def endpoint(fake: FakeIndexNow) -> Iterator[str]:
    with serve(fake.app()) as base:
        yield base + PATH


async def submit(settings: Settings, urls: list[str]) -> list[SubmitResult]:
    adapter = IndexNowSubmitter(settings)
    try:
        return await adapter.submit(urls)
    finally:
        await adapter.aclose()


def urls_on(host: str, n: int, scheme: str = "https") -> list[str]:
    return [f"{scheme}://{host}/page/{i}" for i in range(n)]


async def test_one_host_is_one_documented_post(fake: FakeIndexNow, endpoint: str) -> None:
    settings = settings_for(endpoint)
    urls = urls_on(A, 3)
    results = await submit(settings, urls)

    assert len(fake.submissions) == 1
    sent = fake.submissions[0]
    assert json.loads(sent.raw) == {"host": A, "key": KEY, "urlList": urls}
    assert sent.content_type == "application/json; charset=utf-8"
    assert sent.user_agent == settings.user_agent
    assert [r.url for r in results] == urls
    assert all(r.ok and r.provider == "indexnow" and r.error_code is None for r in results)
    assert results[0].detail == {"status": 200, "host": A, "key_validation_pending": False}


async def test_urls_are_grouped_by_host_and_results_keep_input_order(
    fake: FakeIndexNow, endpoint: str
) -> None:
    urls = [
        "https://a.example/1",
        "http://b.example/1",
        "https://a.example/2",
        "https://c.example/",
    ]
    results = await submit(settings_for(endpoint), urls)

    assert sorted(s.host or "" for s in fake.submissions) == [A, B, "c.example"]
    assert fake.urls_for(A) == ["https://a.example/1", "https://a.example/2"]
    assert fake.urls_for(B) == ["http://b.example/1"]
    assert [r.url for r in results] == urls
    assert all(r.ok for r in results)


async def test_more_than_10000_urls_of_a_host_take_several_posts(
    fake: FakeIndexNow, endpoint: str
) -> None:
    adapter = IndexNowSubmitter(settings_for(endpoint))
    assert adapter.max_batch == 10_000
    urls = urls_on(A, 25_000) + urls_on(B, 2)
    try:
        results = await adapter.submit(urls)
    finally:
        await adapter.aclose()

    assert sorted(len(s.url_list) for s in fake.posts_for(A)) == [5_000, 10_000, 10_000]
    assert len(fake.posts_for(B)) == 1
    assert sorted(fake.urls_for(A)) == sorted(urls_on(A, 25_000))
    assert all(s.status == 200 for s in fake.submissions)
    assert len(results) == len(urls) and all(r.ok for r in results)


async def test_202_is_ok_with_key_validation_pending(fake: FakeIndexNow, endpoint: str) -> None:
    fake.pending_hosts.add(A)
    results = await submit(settings_for(endpoint), urls_on(A, 1) + urls_on(B, 1))

    assert results[0].ok and results[0].detail["status"] == 202
    assert results[0].detail["key_validation_pending"] is True
    assert results[1].ok and results[1].detail["key_validation_pending"] is False


async def test_403_fails_only_the_host_without_the_key() -> None:
    fake = FakeIndexNow(keys={B: KEY})  # a.example's key file does not hold our key
    with serve(fake.app()) as base:
        results = await submit(settings_for(base + PATH), urls_on(A, 2) + urls_on(B, 1))

    assert [r.error_code for r in results] == [KEY_INVALID, KEY_INVALID, None]
    assert not results[0].ok and results[2].ok
    assert results[0].error_message is not None
    assert A in results[0].error_message
    assert "SEOJOBS_INDEXNOW_KEY_LOCATION" in results[0].error_message
    assert len(fake.posts_for(A)) == 1  # a 403 is not retried


@pytest.mark.parametrize("status", [400, 404, 405, 422])
async def test_refusals_are_per_url_rejections_without_retry(
    fake: FakeIndexNow, endpoint: str, status: int
) -> None:
    fake.answer_host(A, Reply(status, b"nope"))
    results = await submit(settings_for(endpoint), urls_on(A, 2) + urls_on(B, 1))

    assert [r.error_code for r in results] == [REJECTED, REJECTED, None]
    assert f"({status})" in (results[0].error_message or "")
    assert len(fake.posts_for(A)) == 1


@pytest.mark.parametrize("status", [429, 500, 503])
async def test_throttling_and_outages_are_retried_then_succeed(
    fake: FakeIndexNow, endpoint: str, status: int
) -> None:
    busy = Reply(status, headers={"Retry-After": "0"})
    fake.answer(busy, busy)
    urls = urls_on(A, 2)
    results = await submit(settings_for(endpoint), urls)

    assert all(r.ok for r in results)
    assert [s.status for s in fake.submissions] == [status, status, 200]
    assert all(s.url_list == urls for s in fake.submissions)


@pytest.mark.parametrize("status", [429, 502])
async def test_retry_exhaustion_is_upstream_error_for_that_host_only(
    fake: FakeIndexNow, endpoint: str, status: int
) -> None:
    fake.always(Reply(status, headers={"Retry-After": "0"}), host=A)
    results = await submit(
        settings_for(endpoint, provider_retries=2), urls_on(A, 2) + urls_on(B, 1)
    )

    assert [r.error_code for r in results] == [UPSTREAM_ERROR, UPSTREAM_ERROR, None]
    assert str(status) in (results[0].error_message or "")
    assert len(fake.posts_for(A)) == 3  # the first try and two retries
    assert len(fake.posts_for(B)) == 1


async def test_truncated_answer_is_retried_then_upstream_error(
    fake: FakeIndexNow, endpoint: str
) -> None:
    # Declares more body than it sends: the connection drops mid-answer.
    fake.always(Reply(200, b"{}", headers={"Content-Length": "500"}))
    results = await submit(settings_for(endpoint, provider_retries=1), urls_on(A, 1))

    assert results[0].error_code == UPSTREAM_ERROR
    assert len(fake.submissions) == 2


async def test_unreachable_endpoint_is_upstream_error() -> None:
    with socket.socket() as sock:  # a loopback port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    results = await submit(settings_for(f"http://127.0.0.1:{port}{PATH}"), urls_on(A, 1))

    assert results[0].error_code == UPSTREAM_ERROR
    assert "transport" in (results[0].error_message or "")


async def test_undocumented_status_is_malformed_response(fake: FakeIndexNow, endpoint: str) -> None:
    fake.answer_host(A, Reply(301, headers={"Location": "https://elsewhere.example/"}))
    results = await submit(settings_for(endpoint), urls_on(A, 1) + urls_on(B, 1))

    assert results[0].error_code == MALFORMED_RESPONSE
    assert "301" in (results[0].error_message or "")
    assert results[1].ok


async def test_a_200_body_is_not_interpreted(fake: FakeIndexNow, endpoint: str) -> None:
    # The protocol defines IndexNow answers by status only; any body on a 200 is ignored.
    fake.answer(Reply(200, b"\x00{not json"))
    results = await submit(settings_for(endpoint), urls_on(A, 1))
    assert results[0].ok


async def test_key_location_path_applies_on_every_host(fake: FakeIndexNow, endpoint: str) -> None:
    settings = settings_for(endpoint, indexnow_key_location="/keys/indexnow.txt")
    results = await submit(settings, ["https://a.example/x", "http://b.example:8080/y"])

    assert all(r.ok for r in results)  # the fake answers 422 to a key location off the host
    assert fake.posts_for(A)[0].key_location == "https://a.example/keys/indexnow.txt"
    assert fake.posts_for(B)[0].key_location == "http://b.example:8080/keys/indexnow.txt"


async def test_key_location_url_is_sent_only_for_its_host(
    fake: FakeIndexNow, endpoint: str
) -> None:
    settings = settings_for(endpoint, indexnow_key_location="https://a.example/k/key.txt")
    results = await submit(settings, urls_on(A, 1) + urls_on(B, 1))

    assert all(r.ok for r in results)
    assert fake.posts_for(A)[0].key_location == "https://a.example/k/key.txt"
    assert fake.posts_for(B)[0].key_location is None
    assert "keyLocation" not in json.loads(fake.posts_for(B)[0].raw)


async def test_non_web_urls_are_rejected_without_being_sent(
    fake: FakeIndexNow, endpoint: str
) -> None:
    urls = ["ftp://a.example/file", "/relative/path", "https://a.example/ok", "http://[::1"]
    results = await submit(settings_for(endpoint), urls)

    assert [r.error_code for r in results] == [REJECTED, REJECTED, None, REJECTED]
    assert fake.urls_for(A) == ["https://a.example/ok"]


async def test_a_url_listed_twice_is_sent_once(fake: FakeIndexNow, endpoint: str) -> None:
    urls = ["https://a.example/1", "https://a.example/1", "https://a.example/2"]
    results = await submit(settings_for(endpoint), urls)

    assert fake.urls_for(A) == ["https://a.example/1", "https://a.example/2"]
    assert [r.url for r in results] == urls and all(r.ok for r in results)


def test_not_configured_names_the_setting() -> None:
    with pytest.raises(ProviderNotConfigured) as caught:
        IndexNowSubmitter(Settings(indexnow_key=None))
    assert caught.value.settings_needed == ["indexnow_key"]
    assert caught.value.fatal
    assert "SEOJOBS_INDEXNOW_KEY" in caught.value.message


@pytest.mark.parametrize("key", ["short", "has spaces in it", "x" * 129, "under_score_key"])
async def test_a_key_outside_the_protocol_is_fatal(
    fake: FakeIndexNow, endpoint: str, key: str
) -> None:
    with pytest.raises(ProviderError) as caught:
        await submit(settings_for(endpoint, indexnow_key=key), urls_on(A, 1))
    assert caught.value.code == AUTH_FAILED and caught.value.fatal
    assert "SEOJOBS_INDEXNOW_KEY" in caught.value.message
    assert fake.submissions == []


async def test_an_injected_client_is_used_and_left_open(fake: FakeIndexNow, endpoint: str) -> None:
    edge = RecordingConnector()  # notes what the injected client sends, at the network edge
    async with http_client(settings_for(endpoint), connector=lambda: edge) as client:
        adapter = IndexNowSubmitter(settings_for(endpoint), client=client)
        results = await adapter.submit(urls_on(A, 1))
        await adapter.aclose()
        assert not client.closed
    assert results[0].ok
    assert edge.requests == [f"POST {endpoint}"]
