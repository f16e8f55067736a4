"""The RDAP adapter against a fake RDAP service on loopback (RFC 9224 bootstrap, RFC 9083
answers and errors): the bootstrap file's cache and its expiry, the registrar hop and what
happens when either server fails, and TLDs the bootstrap file does not list."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from seojobs.fetch.http import HttpClient
from seojobs.providers import rdap
from seojobs.providers.base import http_client
from seojobs.settings import Settings
from tests.fakes.rdap import FakeRdap
from tests.fakes.server import serve

DOMAIN = "example.test"
TTL = 3600.0


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def fake() -> Iterator[FakeRdap]:
    made = FakeRdap({DOMAIN})
    with serve(made.app()) as base:
        made.base = base
        yield made


@pytest.fixture
async def http() -> AsyncIterator[HttpClient]:
    async with http_client(Settings(database_url="sqlite://")) as client:
        yield client


async def _lookup(
    http: HttpClient, fake: FakeRdap, cache: rdap.BootstrapCache, domain: str = DOMAIN
) -> dict[str, object]:
    url = f"{fake.base}/bootstrap/dns.json"
    return await rdap.lookup(http, domain, bootstrap_url=url, ttl=TTL, cache=cache)


async def test_the_bootstrap_file_is_fetched_once_per_ttl(http: HttpClient, fake: FakeRdap) -> None:
    clock = Clock()
    cache = rdap.BootstrapCache(clock)
    await _lookup(http, fake, cache)
    clock.now += TTL - 1
    await _lookup(http, fake, cache)
    assert fake.hits["/bootstrap/dns.json"] == 1
    clock.now += 1  # TTL seconds after the fetch: stale
    await _lookup(http, fake, cache)
    assert fake.hits["/bootstrap/dns.json"] == 2 and cache.fetches == 2
    assert fake.hits[f"/registry/domain/{DOMAIN}"] == 3


async def test_a_registrar_that_fails_leaves_the_registrys_data(
    http: HttpClient, fake: FakeRdap
) -> None:
    fake.registrar_down = True
    found = await _lookup(http, fake, rdap.BootstrapCache())
    assert found["registrar_error"] == {
        "code": "rdap_unavailable",
        "message": f"the registrar's RDAP server answered 503 at {found['registrar_url']}",
    }
    assert found["expires"] == "2026-08-13T04:00:00Z"
    assert found["status"] == ["client delete prohibited", "client transfer prohibited"]


async def test_the_registrar_hop_goes_through_the_ssrf_guard(
    http: HttpClient, fake: FakeRdap
) -> None:
    url = f"{fake.base}/bootstrap/dns.json"
    settings = Settings(database_url="sqlite://", allow_private_networks=False)
    async with rdap.guarded_client(settings) as guarded:
        found = await rdap.lookup(
            http, DOMAIN, bootstrap_url=url, ttl=TTL, hop_http=guarded, cache=rdap.BootstrapCache()
        )
    assert found["registrar_error"]["code"] == "rdap_refused"
    assert "loopback" in found["registrar_error"]["message"]
    assert fake.hits[f"/registrar/domain/{DOMAIN.upper()}"] == 0
    assert found["expires"] == "2026-08-13T04:00:00Z"  # the registry's answer stands
    allowed = Settings(database_url="sqlite://", allow_private_networks=True)
    async with rdap.guarded_client(allowed) as guarded:
        found = await rdap.lookup(
            http, DOMAIN, bootstrap_url=url, ttl=TTL, hop_http=guarded, cache=rdap.BootstrapCache()
        )
    assert found["registrar_error"] is None
    assert fake.hits[f"/registrar/domain/{DOMAIN.upper()}"] == 1


@pytest.mark.parametrize(
    ("domain", "down", "code"),
    [
        ("unknown.test", False, "domain_not_found"),
        (DOMAIN, True, "rdap_unavailable"),
        ("example.zz", False, "rdap_unsupported"),
    ],
)
async def test_registry_failures_are_coded(
    http: HttpClient, fake: FakeRdap, domain: str, down: bool, code: str
) -> None:
    fake.registry_down = down
    with pytest.raises(rdap.RdapError) as failed:
        await _lookup(http, fake, rdap.BootstrapCache(), domain)
    assert failed.value.code == code
    assert fake.hits.get("/registrar/domain/EXAMPLE.TEST", 0) == 0  # no hop without a registry


async def test_an_unreachable_bootstrap_file_is_rdap_unavailable(http: HttpClient) -> None:
    with pytest.raises(rdap.RdapError) as failed:
        await rdap.lookup(
            http,
            DOMAIN,
            bootstrap_url="http://127.0.0.1:9/dns.json",
            ttl=TTL,
            cache=rdap.BootstrapCache(),
        )
    assert failed.value.code == "rdap_unavailable"
    assert "bootstrap" in failed.value.message
