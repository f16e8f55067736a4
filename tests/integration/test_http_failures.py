"""Broken servers, one error mapping: what a page fetch records and what a provider call does.

Every misbehaviour is served raw on loopback (``tests.fakes.raw``). The same failure reaches
the fetcher (a ``FetchResult.error_kind``) and a provider adapter (SerpApi's GET, Serper's
POST): a failed exchange is an ``upstream_error`` worth retrying, an answer whose body cannot
be used (undecodable, endless) is a malformed answer, not retried.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from seojobs.fetch import Fetcher
from seojobs.providers.base import MALFORMED_RESPONSE, UPSTREAM_ERROR, ProviderError
from seojobs.providers.serpapi import SerpApiChecker
from seojobs.providers.serper import SerperChecker
from seojobs.settings import Settings
from tests.fakes import raw
from tests.fakes.raw import Answer, RawServer, raw_server
from tests.fakes.serp import RecordingSleep

URL = "https://example.com/page"
RETRIES = 1
TRANSPORT = [
    pytest.param(raw.hang_up, "protocol_error", id="hang-up"),
    pytest.param(raw.reset, "network_error", id="reset"),
    pytest.param(raw.NOT_HTTP, "protocol_error", id="not-http"),
    pytest.param(raw.CUT_OFF, "protocol_error", id="cut-off"),
    pytest.param(raw.BAD_CHUNK, "protocol_error", id="bad-chunk"),
    pytest.param(raw.silent, "timeout", id="silent"),
    pytest.param(raw.trickle, "timeout", id="trickle"),
]
UNDECODABLE = [
    pytest.param(raw.BAD_GZIP, id="bad-gzip"),
    pytest.param(raw.BAD_DEFLATE, id="bad-deflate"),
    pytest.param(raw.BAD_BROTLI, id="bad-brotli"),
]


def settings(base: str, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "database_url": "sqlite://",
        "allow_private_networks": True,
        # Short, so that silence and trickles end quickly; the answers never come anyway.
        "fetch_timeout": 0.5,
        "fetch_connect_timeout": 0.5,
        "provider_timeout": 0.5,
        "provider_retries": RETRIES,
        "provider_backoff": 0.01,
        "serper_key": "key",
        "serper_base_url": base,
        "serpapi_key": "key",
        "serpapi_base_url": base,
        **overrides,
    }
    return Settings(**values)


@pytest.fixture
async def server(request: pytest.FixtureRequest) -> AsyncIterator[RawServer]:
    answer: Answer = request.param
    async with raw_server(answer) as served:
        yield served


async def check(checker: SerperChecker | SerpApiChecker) -> Any:
    """The checker's verdict, or the ProviderError it raised (bounded: never a hang)."""
    try:
        async with asyncio.timeout(30):
            return await checker.check(URL, "google")
    except ProviderError as exc:
        return exc
    finally:
        await checker.aclose()


def checkers(base: str) -> list[tuple[SerperChecker | SerpApiChecker, RecordingSleep]]:
    """Serper (a POST) and SerpApi (a GET), each with a sleep that records the retries."""
    serper_sleep, serpapi_sleep = RecordingSleep(), RecordingSleep()
    return [
        (SerperChecker(settings(base), sleep=serper_sleep), serper_sleep),
        (SerpApiChecker(settings(base), sleep=serpapi_sleep), serpapi_sleep),
    ]


@pytest.mark.parametrize(("server", "kind"), TRANSPORT, indirect=["server"])
async def test_a_failed_exchange_is_a_page_error_kind_and_a_retried_upstream_error(
    server: RawServer, kind: str
) -> None:
    async with Fetcher(settings(server.base)) as fetcher:
        async with asyncio.timeout(30):
            page = await fetcher.fetch(server.base + "/page")
    assert (page.error_kind, page.status) == (kind, None), page.error
    for checker, sleep in checkers(server.base):
        server.heads.clear()
        outcome = await check(checker)
        assert isinstance(outcome, ProviderError), outcome
        assert (outcome.code, outcome.retryable) == (UPSTREAM_ERROR, True)
        assert len(sleep.delays) == RETRIES, checker.name  # tried, then retried
        # (aiohttp itself sends an idempotent GET once more when the server hung up.)
        assert len(server.heads) >= RETRIES + 1, checker.name


@pytest.mark.parametrize(
    "server", [*UNDECODABLE, pytest.param(raw.endless, id="endless")], indirect=True
)
async def test_an_unusable_body_is_a_malformed_answer_and_not_retried(server: RawServer) -> None:
    for checker, sleep in checkers(server.base):
        server.heads.clear()
        outcome = await check(checker)
        assert not isinstance(outcome, ProviderError), outcome
        assert (outcome.status, outcome.error_code) == ("failed", MALFORMED_RESPONSE)
        assert (len(server.heads), sleep.delays) == (1, []), checker.name


@pytest.mark.parametrize("server", UNDECODABLE, indirect=True)
async def test_a_page_its_encoding_cannot_decode_is_a_protocol_error(server: RawServer) -> None:
    async with Fetcher(settings(server.base)) as fetcher:
        page = await fetcher.fetch(server.base + "/page")
    assert (page.error_kind, page.status) == ("protocol_error", None), page.error


@pytest.mark.parametrize("server", [raw.endless], ids=["endless"], indirect=True)
async def test_an_endless_page_is_cut_at_the_cap(server: RawServer) -> None:
    async with Fetcher(settings(server.base, fetch_max_bytes=100_000)) as fetcher:
        page = await fetcher.fetch(server.base + "/page")
    assert (page.error_kind, page.status, page.truncated) == (None, 200, True)
    assert len(page.body) == 100_000


async def test_nothing_listening_is_a_connect_error_and_a_retried_upstream_error() -> None:
    async with raw_server(raw.hang_up) as gone:
        base = gone.base
    async with Fetcher(settings(base)) as fetcher:
        page = await fetcher.fetch(base + "/page")
    assert page.error_kind == "connect_error", page.error
    for checker, sleep in checkers(base):
        outcome = await check(checker)
        assert isinstance(outcome, ProviderError), outcome
        assert (outcome.code, outcome.retryable) == (UPSTREAM_ERROR, True)
        assert len(sleep.delays) == RETRIES, checker.name


async def test_tls_to_a_server_that_does_not_speak_it_is_a_tls_error() -> None:
    async with raw_server(raw.NOT_HTTP, first=True) as server:
        base = server.base.replace("http://", "https://")
        async with Fetcher(settings(base)) as fetcher:
            page = await fetcher.fetch(base + "/page")
        outcomes = [await check(checker) for checker, _ in checkers(base)]
    assert page.error_kind == "tls_error", page.error
    for outcome in outcomes:
        assert isinstance(outcome, ProviderError), outcome
        assert (outcome.code, outcome.retryable) == (UPSTREAM_ERROR, True)
        assert "tls_error" in outcome.message
