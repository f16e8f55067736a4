"""What a redirect (or a URL) may hand the fetcher: credentials are dropped, port 0 is invalid.

``user:password@`` in a Location used to be sent as Basic auth to the next hop and echoed in
``redirect_chain`` and ``verdict_reason``; a port-0 URL had its robots.txt fetched from the
default port while the page went to port 0. Against the loopback fixture site, which records
the Authorization header of every request.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest

from seojobs.fetch import Diagnostics, Fetcher
from seojobs.settings import Settings
from tests.fakes.site import FixtureSite, fence_to_loopback, running_site

Site = tuple[FixtureSite, str]
SECRET = "s3cret"


@pytest.fixture(autouse=True)
def nothing_beyond_loopback(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    attempts = fence_to_loopback(monkeypatch)
    yield
    assert attempts == []


@pytest.fixture
def site() -> Iterator[Site]:
    with running_site() as served:
        yield served


def fetcher() -> Fetcher:
    return Fetcher(Settings(database_url="sqlite://", allow_private_networks=True))


def moved_to(site: Site, location: str) -> str:
    """A URL of the site that redirects to ``location`` (kept out of the URL itself, so
    anything of it in a report came through the fetcher)."""
    fake, base = site
    fake.moved_to = location
    return f"{base}/moved"


def shown(result: Diagnostics) -> str:
    """Everything a report stores of a check."""
    return json.dumps(result.to_dict())


@pytest.mark.parametrize(
    "location",
    [
        "http://user:s3cret@{host}/ok",
        "http://s3cret@{host}/ok",  # a user name alone is sent as Basic auth too
        "http://:s3cret@{host}/ok",
        "http://us%40er:s3cret%21@{host}/ok",
        "HTTP://user:s3cret@{host}/ok",
        "//user:s3cret@{host}/ok",  # scheme-relative
    ],
)
async def test_credentials_in_a_redirect_are_neither_sent_nor_shown(
    site: Site, location: str
) -> None:
    fake, base = site
    host = httpx.URL(base).netloc.decode()
    async with fetcher() as client:
        result = await client.inspect(moved_to(site, location.format(host=host)))
    assert (result.http_status, result.fetch_error_kind) == (200, None)
    assert result.final_url == f"{base}/ok"
    assert result.verdict_reason == f"Redirected to {base}/ok (1 hop)"
    assert fake.paths() == ["/robots.txt", "/moved", "/ok"]
    assert [seen.authorization for seen in fake.seen] == [None, None, None]
    assert SECRET not in shown(result)


@pytest.mark.parametrize(
    "location",
    [
        "http://user:s3cret@{host}:0/ok",
        "http://user:s3cret@{host}:99999/ok",
        "http://user:s3cret@{host}:x/ok",
        "ftp://user:s3cret@{host}/ok",
        "http://user:s3cret@/ok",
        "http://user:s3cret@1.2.3.4.5/ok",
    ],
)
async def test_credentials_in_an_unusable_redirect_are_not_shown(site: Site, location: str) -> None:
    fake, _ = site
    async with fetcher() as client:
        result = await client.inspect(moved_to(site, location.format(host="127.0.0.1")))
    assert result.page_fetch_state == "REDIRECT_ERROR", result.fetch_error
    assert result.fetch_error_kind in {"invalid_url", "unsupported_scheme"}
    assert fake.paths() == ["/robots.txt", "/moved"]
    assert SECRET not in shown(result)


@pytest.mark.parametrize("port", ["0", "00", "000"])
async def test_a_redirect_to_port_zero_is_an_invalid_url(site: Site, port: str) -> None:
    fake, _ = site
    async with fetcher() as client:
        result = await client.inspect(moved_to(site, f"http://127.0.0.1:{port}/ok"))
    assert (result.fetch_error_kind, result.page_fetch_state) == ("invalid_url", "REDIRECT_ERROR")
    assert fake.paths() == ["/robots.txt", "/moved"]


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:0/", "http://127.0.0.1:00/x", "https://[::1]:0/", "http://a.test:0/"]
)
async def test_a_port_zero_url_fetches_nothing(url: str) -> None:
    # Before, robots.txt was fetched from the scheme's default port and the page from port 0.
    connections: list[str] = []

    async def resolver(host: str) -> list[str]:
        connections.append(host)
        return ["127.0.0.1"]

    settings = Settings(database_url="sqlite://", allow_private_networks=True)
    async with Fetcher(settings, resolver=resolver) as client:
        result = await client.inspect(url)
        verdict = await client.robots_verdict(url)
        fetched = await client.fetch(url)
    assert (result.page_fetch_state, result.fetch_error_kind) == ("INVALID_URL", "invalid_url")
    assert (verdict.error_kind, fetched.error_kind) == ("invalid_url", "invalid_url")
    assert connections == []
