"""One proxy policy: every provider call honours HTTP(S)_PROXY and NO_PROXY; page fetches never
use a proxy (the SSRF guard must see the address a page is fetched from).

Each adapter runs once against its fake (loopback) with ``HTTP_PROXY`` pointing at a recording
forward proxy (``tests.fakes.proxy``): its requests, the Google token request included, must
go through the proxy and still succeed; with the fake's host in ``NO_PROXY`` they go direct.
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from seojobs.fetch import Fetcher
from seojobs.providers.base import UPSTREAM_ERROR, ProviderError
from seojobs.providers.dataforseo import DataForSeoChecker
from seojobs.providers.google_indexing import GoogleIndexingSubmitter
from seojobs.providers.indexnow import IndexNowSubmitter
from seojobs.providers.serpapi import SerpApiChecker
from seojobs.providers.serper import SerperChecker
from seojobs.providers.url_inspection import UrlInspectionChecker
from seojobs.settings import Settings
from tests.fakes.google import (
    INDEXING_SCOPE,
    TOKEN_PATH,
    FakeIndexingApi,
    FakeTokenEndpoint,
    ServiceAccountKey,
)
from tests.fakes.indexnow import PATH, FakeIndexNow
from tests.fakes.proxy import ForwardProxy, forward_proxy
from tests.fakes.serp import FakeDataForSeo, FakeSerpApi, FakeSerper
from tests.fakes.server import serve
from tests.fakes.site import running_site
from tests.fakes.url_inspection import FakeUrlInspection

URL = "https://example.com/page"
PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy", "no_proxy")


@pytest.fixture
def environment(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No proxy settings but the test's own (upper and lower case are both read)."""
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)
    return monkeypatch


@pytest.fixture
async def proxy() -> AsyncIterator[ForwardProxy]:
    async with forward_proxy() as running:
        yield running


def settings(**values: Any) -> Settings:
    return Settings(**{"database_url": "sqlite://", "provider_retries": 0, **values})


@dataclass
class Run:
    """One adapter call against its fake: whether it succeeded, and the requests it sent."""

    ok: bool
    requests: list[str]  # "METHOD url" as a forward proxy sees them


Case = Callable[[Path], Awaitable[Run]]


async def serper(tmp: Path) -> Run:
    fake = FakeSerper()
    fake.index("google", URL)
    with serve(fake.app) as base:
        checker = SerperChecker(settings(serper_key=fake.key, serper_base_url=base))
        result = await checker.check(URL, "google")
        await checker.aclose()
    return Run(result.status == "indexed", [f"POST {base}/search"])


async def serpapi(tmp: Path) -> Run:
    fake = FakeSerpApi()
    fake.index("google", URL)
    with serve(fake.app) as base:
        checker = SerpApiChecker(settings(serpapi_key=fake.key, serpapi_base_url=base))
        result = await checker.check(URL, "google")
        await checker.aclose()
    return Run(result.status == "indexed", [f"GET {base}/search.json"])


async def dataforseo(tmp: Path) -> Run:
    fake = FakeDataForSeo()
    fake.index("google", URL)
    with serve(fake.app) as base:
        checker = DataForSeoChecker(
            settings(
                dataforseo_login=fake.login,
                dataforseo_password=fake.password,
                dataforseo_base_url=base,
            )
        )
        result = await checker.check(URL, "google")
        await checker.aclose()
    return Run(result.status == "indexed", [f"POST {base}/v3/serp/google/organic/live/regular"])


async def url_inspection(tmp: Path) -> Run:
    key = ServiceAccountKey()
    oauth = FakeTokenEndpoint("https://www.googleapis.com/auth/webmasters.readonly")
    oauth.trust(key)
    fake = FakeUrlInspection(tokens=set(), oauth=oauth)
    fake.owned.add("https://example.com/")
    fake.set_page(URL, "PASS", "Submitted and indexed")
    with serve(fake.app) as base:
        credentials = key.write(tmp / "sa.json", base + "/token")
        checker = UrlInspectionChecker(
            settings(google_credentials_file=str(credentials), url_inspection_base_url=base)
        )
        result = await checker.check(URL, "google")
        await checker.aclose()
    inspect = f"POST {base}/v1/urlInspection/index:inspect"
    return Run(result.status == "indexed", [f"POST {base}/token", inspect])


async def indexnow(tmp: Path) -> Run:
    fake = FakeIndexNow()
    with serve(fake.app()) as base:
        adapter = IndexNowSubmitter(
            settings(indexnow_key="73134416ae45434d98edc086e0bf6740", indexnow_endpoint=base + PATH)
        )
        [result] = await adapter.submit([URL])
        await adapter.aclose()
    return Run(result.ok, [f"POST {base}{PATH}"])


async def google_indexing(tmp: Path) -> Run:
    key = ServiceAccountKey()
    tokens = FakeTokenEndpoint(INDEXING_SCOPE)
    tokens.trust(key)
    with serve(FakeIndexingApi(tokens).app()) as base:
        credentials = key.write(tmp / "sa.json", base + TOKEN_PATH)
        adapter = GoogleIndexingSubmitter(
            settings(google_credentials_file=str(credentials), google_indexing_base_url=base)
        )
        [result] = await adapter.submit([URL])
        await adapter.aclose()
    publish = f"POST {base}/v3/urlNotifications:publish"
    return Run(result.ok, [f"POST {base}{TOKEN_PATH}", publish])


CASES = [
    pytest.param(serper, id="serper"),
    pytest.param(serpapi, id="serpapi"),
    pytest.param(dataforseo, id="dataforseo"),
    pytest.param(url_inspection, id="url_inspection"),
    pytest.param(indexnow, id="indexnow"),
    pytest.param(google_indexing, id="google_indexing"),
]


def without_query(seen: list[str]) -> list[str]:
    return [line.split("?", 1)[0] for line in seen]


@pytest.mark.parametrize("case", CASES)
async def test_every_provider_call_goes_through_the_environment_proxy(
    case: Case, proxy: ForwardProxy, environment: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    environment.setenv("HTTP_PROXY", proxy.url)
    run = await case(tmp_path)
    assert run.ok
    assert without_query(proxy.seen) == run.requests


@pytest.mark.parametrize("case", CASES)
async def test_no_proxy_sends_provider_calls_direct(
    case: Case, proxy: ForwardProxy, environment: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    environment.setenv("HTTP_PROXY", proxy.url)
    environment.setenv("NO_PROXY", "localhost,127.0.0.1")
    run = await case(tmp_path)
    assert run.ok
    assert proxy.seen == []


async def test_proxy_credentials_from_the_environment_are_sent_to_the_proxy(
    proxy: ForwardProxy, environment: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    environment.setenv("http_proxy", f"http://user:s3cret@127.0.0.1:{proxy.port}")
    environment.setenv("https_proxy", f"http://user:s3cret@127.0.0.1:{proxy.port}")
    run = await serpapi(tmp_path)  # plain http: the credentials ride on the request
    tunnel = SerpApiChecker(settings(serpapi_key="k", serpapi_base_url="https://127.0.0.1:9"))
    with pytest.raises(ProviderError):  # https: on the CONNECT, which the proxy refuses
        await tunnel.check(URL, "google")
    await tunnel.aclose()
    assert run.ok
    assert [line.split(" ")[0] for line in proxy.seen] == ["GET", "CONNECT"]
    assert proxy.credentials == ["Basic " + base64.b64encode(b"user:s3cret").decode()] * 2


@pytest.mark.parametrize("case", [serper, serpapi], ids=["serper", "serpapi"])
async def test_https_provider_calls_ask_the_proxy_for_a_tunnel(
    case: Case, proxy: ForwardProxy, environment: pytest.MonkeyPatch
) -> None:
    # Port 9 on loopback: if the proxy were skipped, the connection would be refused there.
    base = "https://127.0.0.1:9"
    environment.setenv("HTTPS_PROXY", proxy.url)
    checker: SerperChecker | SerpApiChecker = (
        SerperChecker(settings(serper_key="k", serper_base_url=base))
        if case is serper
        else SerpApiChecker(settings(serpapi_key="k", serpapi_base_url=base))
    )
    with pytest.raises(ProviderError) as caught:
        await checker.check(URL, "google")
    await checker.aclose()
    assert proxy.seen == ["CONNECT 127.0.0.1:9"]  # refused by the proxy (403)
    assert (caught.value.code, caught.value.retryable) == (UPSTREAM_ERROR, True)
    assert "connect_error" in caught.value.message


async def test_page_fetches_never_go_through_a_proxy(
    proxy: ForwardProxy, environment: pytest.MonkeyPatch
) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        environment.setenv(name, proxy.url)
    config = Settings(database_url="sqlite://", allow_private_networks=True)
    with running_site() as (fake, base):
        async with Fetcher(config) as fetcher:
            diagnostics = await fetcher.inspect(f"{base}/redirect/1")
        paths = fake.paths()
    assert (diagnostics.http_status, diagnostics.final_url) == (200, f"{base}/ok")
    assert paths == ["/robots.txt", "/redirect/1", "/ok"]  # straight from the site
    assert proxy.seen == []
