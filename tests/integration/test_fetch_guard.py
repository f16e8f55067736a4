"""The guard end to end: IPv6 spellings of cloud metadata addresses are never dialled.

Metadata addresses are refused in both modes (also with ``allow_private_networks``), whether
the URL names them, a redirect does or DNS answers with them. The fetcher runs with its own
connector; the socket fence records any attempt to connect beyond loopback, so "refused" means
nothing was dialled, not that a connection failed.
"""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import quote

import httpx
import pytest

from seojobs.fetch import Fetcher
from seojobs.fetch.errors import SSRF_REFUSED, FetchError
from seojobs.providers import rdap
from seojobs.settings import Settings
from tests.fakes.site import FixtureSite, fence_to_loopback, running_site
from tests.fakes.tcp import Endpoint

Site = tuple[FixtureSite, str]

# Each IPv6 form that embeds an IPv4 address, spelling a metadata address.
METADATA_FORMS = [
    "::ffff:169.254.169.254",  # IPv4-mapped
    "::ffff:a9fe:a9fe",  # the same in hex
    "::169.254.169.254",  # IPv4-compatible
    "::a9fe:a9fe",
    "::ffff:0:a9fe:a9fe",  # IPv4-translated (SIIT)
    "64:ff9b::a9fe:a9fe",  # NAT64 well-known prefix
    "64:ff9b:1::a9fe:a9fe",  # local-use NAT64, /96
    "64:ff9b:1:a9fe:a9:fe00::",  # local-use NAT64, /48 (bits 64-71 skipped)
    "2002:a9fe:a9fe::",  # 6to4
    "2002:a9fe:a9fe:1::1",
    "2001:0:4136:e378:8000:63bf:5601:5601",  # Teredo, client 169.254.169.254 XORed
    "::ffff:100.100.100.200",  # Alibaba Cloud
    "64:ff9b::6464:64c8",  # Alibaba Cloud via NAT64
    "2002:a9fe:aa02::",  # AWS ECS task metadata (169.254.170.2) via 6to4
    "::ffff:192.0.0.192",  # Oracle Cloud
]
MODES = {"default": False, "private networks allowed": True}


@pytest.fixture(autouse=True)
def nothing_dialled(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    attempts = fence_to_loopback(monkeypatch)
    yield
    assert attempts == [], "the fetcher tried to connect beyond loopback"


@pytest.fixture
def site() -> Iterator[Site]:
    with running_site() as served:
        yield served


class Resolver:
    """fixture.test is the loopback site; meta.test answers with the address under test."""

    def __init__(self, meta: str) -> None:
        self.answers = {"fixture.test": ["127.0.0.1"], "meta.test": [meta]}

    async def __call__(self, host: str) -> list[str]:
        return self.answers[host]


def fetcher(private: bool, meta: str) -> Fetcher:
    # In the default mode the loopback site is reached as an allow-listed name, which exempts
    # that name only: every redirect target is checked afresh.
    settings = Settings(
        database_url="sqlite://",
        allow_private_networks=private,
        fetch_allow_hosts=["fixture.test"],
    )
    return Fetcher(settings, resolver=Resolver(meta))


@pytest.mark.parametrize("private", MODES.values(), ids=MODES.keys())
@pytest.mark.parametrize("address", METADATA_FORMS)
async def test_an_ip_literal_metadata_url_is_refused(private: bool, address: str) -> None:
    url = f"http://[{address}]/latest/meta-data/"
    async with fetcher(private, address) as client:
        fetched = await client.fetch(url)
        inspected = await client.inspect(url)  # robots.txt is not asked for either
    assert (fetched.error_kind, fetched.status) == ("ssrf_refused", None), fetched.error
    assert fetched.error is not None and "metadata" in fetched.error
    assert inspected.fetch_error_kind == "ssrf_refused"
    assert inspected.page_fetch_state == "INTERNAL_CRAWL_ERROR"
    assert inspected.robots_txt is None


@pytest.mark.parametrize("private", MODES.values(), ids=MODES.keys())
@pytest.mark.parametrize("address", METADATA_FORMS)
async def test_a_redirect_to_a_metadata_address_is_not_followed(
    site: Site, private: bool, address: str
) -> None:
    fake, base = site
    port = httpx.URL(base).port
    target = f"http://[{address}]/latest/meta-data/"
    async with fetcher(private, address) as client:
        result = await client.inspect(
            f"http://fixture.test:{port}/redirect-to?url={quote(target, safe='')}"
        )
    assert result.fetch_error_kind == "ssrf_refused", result.fetch_error
    assert [hop.status for hop in result.redirect_chain] == [302]
    assert result.final_url == target
    assert fake.paths() == ["/robots.txt", "/redirect-to"]


@pytest.mark.parametrize("private", MODES.values(), ids=MODES.keys())
@pytest.mark.parametrize("address", METADATA_FORMS)
async def test_a_name_that_resolves_to_a_metadata_address_is_refused(
    private: bool, address: str
) -> None:
    async with fetcher(private, address) as client:
        result = await client.inspect("http://meta.test/latest/meta-data/")
    assert result.fetch_error_kind == "ssrf_refused", result.fetch_error
    assert result.fetch_error is not None and "metadata" in result.fetch_error


async def test_the_control_the_same_paths_reach_a_private_address_when_allowed(
    site: Site,
) -> None:
    # meta.test answers with the site's loopback address instead, and the redirect names it:
    # both are followed, so the refusals above are about the metadata addresses.
    fake, base = site
    port = httpx.URL(base).port
    target = quote(f"http://meta.test:{port}/ok", safe="")
    async with fetcher(True, "127.0.0.1") as client:
        result = await client.fetch(f"{base}/redirect-to?url={target}")
    assert (result.error_kind, result.status) == (None, 200)
    assert fake.paths() == ["/redirect-to", "/ok"]


async def test_a_guarded_client_never_dials_a_refused_ip_literal() -> None:
    """Issue 25.6: aiohttp skips the resolver for an IP-literal URL, so the connector checks
    the addresses it is about to dial (a listener there must see no connection) rather than
    only the peer after connecting, where an open and a closed port answered differently."""
    endpoint = Endpoint(lifetime=30)
    endpoint.set("hang")  # listening: a connection would be accepted and counted
    settings = Settings(database_url="sqlite://", allow_private_networks=False)
    try:
        async with rdap.guarded_client(settings) as http:
            with pytest.raises(FetchError) as raised:
                await http.get(f"http://127.0.0.1:{endpoint.port}/domain/example.test")
    finally:
        accepted = endpoint.accepted
        endpoint.close()
    assert raised.value.kind == SSRF_REFUSED
    assert accepted == 0
