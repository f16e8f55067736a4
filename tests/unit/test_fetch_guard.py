"""The private-network guard with stubbed name resolution: nothing here opens a connection."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import pytest
from aiohttp.abc import AbstractResolver, ResolveResult

from seojobs.fetch import AddressGuard, Fetcher, GuardPolicy, forbidden_reason, parse_ip_host
from seojobs.fetch.errors import DNSError, InvalidURL, SSRFRefused
from seojobs.fetch.urls import parse_url
from seojobs.settings import Settings
from tests.fakes.site import fence_to_loopback

# A public address used only as a resolver answer; the fence below makes sure that no test
# ever connects to it, whatever the code under test does.
PUBLIC = "93.184.216.34"


@pytest.fixture(autouse=True)
def no_outside_traffic(monkeypatch: pytest.MonkeyPatch) -> Iterable[None]:
    attempts = fence_to_loopback(monkeypatch)
    yield
    assert attempts == []


class StubResolver:
    def __init__(self, answers: dict[str, list[str]]) -> None:
        self.answers = answers
        self.calls: list[str] = []

    async def __call__(self, host: str) -> list[str]:
        self.calls.append(host)
        return self.answers[host]  # KeyError -> a DNS failure, like NXDOMAIN


class NoNetwork(aiohttp.BaseConnector):
    """The network edge for refusal tests: any connection attempt fails the test."""

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[str] = []

    async def connect(self, req: Any, traces: Any, timeout: Any) -> Any:
        self.requests.append(str(req.url))
        raise AssertionError(f"a request left the fetcher: {req.url}")


@dataclass(frozen=True)
class Reply:
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""


class _ToCanned(AbstractResolver):
    """Every name resolves to the canned server's loopback port."""

    def __init__(self, port: int) -> None:
        self.port = port

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        return [
            {
                "hostname": host,
                "host": "127.0.0.1",
                "port": self.port,
                "family": socket.AF_INET,
                "proto": 0,
                "flags": socket.AI_NUMERICHOST,
            }
        ]

    async def close(self) -> None:
        return None


class Canned:
    """An HTTP server on loopback: answers from a table, records what it was asked.

    The fetcher reaches it through ``connector()``, whose resolver sends every name here, so
    the URLs keep their public-looking names and nothing leaves the machine.
    """

    def __init__(self, routes: dict[str, Reply]) -> None:
        self.routes = routes
        self.requests: list[str] = []
        self._server: asyncio.Server | None = None

    async def __aenter__(self) -> Canned:
        self._server = await asyncio.start_server(self._answer, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()

    def connector(self) -> aiohttp.BaseConnector:
        assert self._server is not None
        port = self._server.sockets[0].getsockname()[1]
        return aiohttp.TCPConnector(resolver=_ToCanned(port), use_dns_cache=False)

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        path = head[0].split(" ")[1]
        host = next(
            line.split(":", 1)[1].strip() for line in head if line.lower().startswith("host:")
        )
        url = f"http://{host}{path}"
        self.requests.append(url)
        reply = self.routes[url]
        lines = [
            f"HTTP/1.1 {reply.status} X",
            f"Content-Length: {len(reply.body)}",
            "Connection: close",
        ]
        lines += [f"{name}: {value}" for name, value in reply.headers.items()]
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + reply.body)
        await writer.drain()
        writer.close()


def settings(**overrides: object) -> Settings:
    return Settings(database_url="sqlite://", **overrides)  # type: ignore[arg-type]


# -- address classification ----------------------------------------------------------------

FORBIDDEN = [
    ("10.1.2.3", "private"),
    ("172.16.0.1", "private"),
    ("172.31.255.254", "private"),
    ("192.168.1.1", "private"),
    ("127.0.0.1", "loopback"),
    ("127.1.2.3", "loopback"),
    ("169.254.10.20", "link-local"),
    ("100.64.0.1", "carrier-grade NAT"),
    ("100.127.255.254", "carrier-grade NAT"),
    ("0.0.0.0", "unspecified"),
    ("0.1.2.3", "unspecified"),
    ("224.0.0.1", "multicast"),
    ("239.255.255.250", "multicast"),
    ("240.0.0.1", "reserved"),
    ("255.255.255.255", "reserved"),
    ("169.254.169.254", "cloud metadata"),
    ("100.100.100.200", "cloud metadata"),
    ("fd00:ec2::254", "cloud metadata"),
    ("::1", "loopback"),
    ("::", "unspecified"),
    ("fc00::1", "unique-local"),
    ("fd12:3456::1", "unique-local"),
    ("fe80::1", "link-local"),
    ("ff02::1", "multicast"),
    ("::ffff:127.0.0.1", "loopback"),
    ("::ffff:10.0.0.1", "private"),
    ("::ffff:169.254.169.254", "cloud metadata"),
    ("2002:7f00:1::", "loopback"),  # 6to4 wrapping 127.0.0.1
    ("64:ff9b::a00:1", "private"),  # NAT64 wrapping 10.0.0.1
    ("::127.0.0.1", "IPv4-compatible"),
    ("2001:db8::1", "documentation"),
]


@pytest.mark.parametrize(("address", "label"), FORBIDDEN)
def test_forbidden_addresses_are_refused_with_a_reason(address: str, label: str) -> None:
    reason = forbidden_reason(ipaddress.ip_address(address))
    assert reason is not None
    assert label in reason


@pytest.mark.parametrize(
    "address", [PUBLIC, "8.8.8.8", "1.1.1.1", "2606:4700:4700::1111", "::ffff:8.8.8.8"]
)
def test_public_addresses_pass(address: str) -> None:
    assert forbidden_reason(ipaddress.ip_address(address)) is None


# -- numeric host tricks ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        ("2130706433", "127.0.0.1"),  # one decimal number
        ("0x7f.1", "127.0.0.1"),  # hex, two parts
        ("0x7f000001", "127.0.0.1"),
        ("0177.0.0.1", "127.0.0.1"),  # octal first part
        ("017700000001", "127.0.0.1"),  # one octal number
        ("127.1", "127.0.0.1"),
        ("10.1", "10.0.0.1"),
        ("0", "0.0.0.0"),
        ("127.0.0.1.", "127.0.0.1"),  # a trailing dot
        ("[::1]", "::1"),
        ("::ffff:7f00:1", "::ffff:127.0.0.1"),
    ],
)
def test_numeric_hosts_are_read_as_the_address_they_reach(host: str, expected: str) -> None:
    assert parse_ip_host(host) == ipaddress.ip_address(expected)


@pytest.mark.parametrize("host", ["1.2.3.4.5", "256.0.0.1", "1.2.3.256", "08.1.1.1", "example.1"])
def test_malformed_numeric_hosts_are_invalid(host: str) -> None:
    with pytest.raises(InvalidURL):
        parse_ip_host(host)


@pytest.mark.parametrize("host", ["example.com", "fixture.test", "1.example", "0x.example"])
def test_names_need_resolution(host: str) -> None:
    assert parse_ip_host(host) is None


# -- the guard with a stub resolver ----------------------------------------------------------


async def test_a_name_is_refused_if_any_of_its_addresses_is_forbidden() -> None:
    resolver = StubResolver({"mixed.test": [PUBLIC, "10.0.0.7"]})
    guard = AddressGuard(GuardPolicy(), resolver)
    with pytest.raises(SSRFRefused, match=r"10\.0\.0\.7"):
        await guard.resolve("mixed.test")
    assert resolver.calls == ["mixed.test"]


async def test_a_public_name_resolves_to_its_addresses_once() -> None:
    resolver = StubResolver({"public.test": [PUBLIC, PUBLIC, "2606:4700:4700::1111"]})
    guard = AddressGuard(GuardPolicy(), resolver)
    addresses = await guard.resolve("public.test")
    assert [str(a) for a in addresses] == [PUBLIC, "2606:4700:4700::1111"]
    assert resolver.calls == ["public.test"]


async def test_literals_and_localhost_names_never_reach_the_resolver() -> None:
    resolver = StubResolver({})
    guard = AddressGuard(GuardPolicy(), resolver)
    for host in ("127.0.0.1", "2130706433", "localhost", "app.localhost", "LOCALHOST."):
        with pytest.raises(SSRFRefused):
            await guard.resolve(host)
    assert resolver.calls == []


async def test_allow_list_exempts_exactly_the_listed_host() -> None:
    loopback = ["127.0.0.1"]
    resolver = StubResolver(
        {"fixture.test": loopback, "other.test": loopback, "sub.fixture.test": loopback}
    )
    guard = AddressGuard(GuardPolicy(allow_hosts=frozenset({"fixture.test"})), resolver)
    assert [str(a) for a in await guard.resolve("FIXTURE.test")] == ["127.0.0.1"]
    for host in ("other.test", "sub.fixture.test", "127.0.0.1"):
        with pytest.raises(SSRFRefused):
            await guard.resolve(host)


async def test_allowing_private_networks_still_refuses_cloud_metadata() -> None:
    resolver = StubResolver({"meta.test": ["169.254.169.254"], "intranet.test": ["10.0.0.1"]})
    guard = AddressGuard(GuardPolicy(allow_private_networks=True), resolver)
    assert [str(a) for a in await guard.resolve("intranet.test")] == ["10.0.0.1"]
    assert [str(a) for a in await guard.resolve("127.0.0.1")] == ["127.0.0.1"]
    with pytest.raises(SSRFRefused, match="metadata"):
        await guard.resolve("meta.test")
    with pytest.raises(SSRFRefused, match="metadata"):
        await guard.resolve("169.254.169.254")


async def test_resolution_failures_are_dns_errors() -> None:
    def sync_resolver(host: str) -> list[str]:
        return {"empty.test": [], "junk.test": ["not-an-ip"]}[host]

    guard = AddressGuard(GuardPolicy(), sync_resolver)
    for host in ("missing.test", "empty.test", "junk.test"):
        with pytest.raises(DNSError):
            await guard.resolve(host)


async def test_a_resolver_that_never_answers_is_a_dns_error() -> None:
    async def hangs(host: str) -> list[str]:
        await asyncio.Event().wait()
        return []

    guard = AddressGuard(GuardPolicy(), hangs, lookup_timeout=0.1)
    async with asyncio.timeout(10):  # a guard against hanging, not a timing
        with pytest.raises(DNSError, match=r"hangs\.test timed out"):
            await guard.resolve("hangs.test")


async def test_a_kept_answer_is_checked_again_and_a_failure_is_not_kept() -> None:
    answers: dict[str, list[str]] = {"mixed.test": [PUBLIC, "10.0.0.7"], "late.test": []}
    resolver = StubResolver(answers)
    guard = AddressGuard(GuardPolicy(), resolver, dns_ttl=60)
    for _ in range(2):
        with pytest.raises(SSRFRefused):
            await guard.resolve("mixed.test")
    with pytest.raises(DNSError):
        await guard.resolve("late.test")
    answers["late.test"] = [PUBLIC]
    for _ in range(2):
        assert [str(a) for a in await guard.resolve("late.test")] == [PUBLIC]
    assert resolver.calls == ["mixed.test", "late.test", "late.test"]
    assert guard.lookups == 3


def test_policy_from_settings() -> None:
    policy = GuardPolicy.from_settings(settings(fetch_allow_hosts="Fixture.Test., b.test"))
    assert policy == GuardPolicy(False, frozenset({"fixture.test", "b.test"}))
    assert GuardPolicy.from_settings(settings(allow_private_networks=True)).exempt("x")


# -- the fetcher refuses before anything is sent -----------------------------------------------

REFUSED_URLS = [
    "http://10.0.0.1/",
    "http://172.16.5.4/",
    "http://192.168.0.10:8080/admin",
    "http://169.254.169.254/latest/meta-data/",
    "http://100.64.0.1/",
    "http://100.100.100.200/",
    "http://[fc00::1]/",
    "http://[fd00:ec2::254]/",
    "http://[fe80::1]/",
    "http://[::ffff:127.0.0.1]/",
    "http://[::ffff:a9fe:a9fe]/",  # IPv4-mapped 169.254.169.254, written in hex
    "http://[::1]/",
    "http://[::]/",
    "http://0.0.0.0/",
    "http://0/",
    "http://2130706433/",
    "http://0x7f.1/",
    "http://0x7f000001/",
    "http://127.1/",
    "http://localhost/",
    "https://internal.test/",  # resolves to 10.1.1.1
    "http://meta.test/",  # resolves to 169.254.169.254
    "http://mixed.test/",  # resolves to a public and a private address
    "http://v6.test/",  # resolves to fe80::1
]
STUB = {
    "internal.test": ["10.1.1.1"],
    "meta.test": ["169.254.169.254"],
    "mixed.test": [PUBLIC, "192.168.1.1"],
    "v6.test": ["fe80::1"],
}


@pytest.mark.parametrize("url", REFUSED_URLS)
async def test_refused_urls_send_nothing(url: str) -> None:
    network = NoNetwork()
    with_stub = StubResolver(STUB)
    async with Fetcher(settings(), resolver=with_stub, connector=lambda: network) as fetcher:
        result = await fetcher.fetch(url)
    assert result.error_kind == "ssrf_refused", result.error
    assert result.status is None
    assert network.requests == []


@pytest.mark.parametrize(
    ("url", "kind"),
    [
        ("http://1.2.3.4.5/", "invalid_url"),
        ("http://0177.0.0.1/", "invalid_url"),  # httpx rejects this spelling outright
        ("file:///etc/passwd", "unsupported_scheme"),
        ("gopher://127.0.0.1:70/", "unsupported_scheme"),
        ("/relative/path", "invalid_url"),
        ("http:///no-host", "invalid_url"),
        ("http://nowhere.test/", "dns_error"),
        ("http://public.test:99999/", "invalid_url"),  # once a ValueError from the stack
    ],
)
async def test_unusable_urls_send_nothing(url: str, kind: str) -> None:
    network = NoNetwork()
    with_stub = StubResolver(STUB)
    async with Fetcher(settings(), resolver=with_stub, connector=lambda: network) as fetcher:
        result = await fetcher.fetch(url)
    assert result.error_kind == kind, result.error
    assert network.requests == []


async def test_a_public_url_reaches_the_network_edge() -> None:
    # The control for the refusals above: the guard does not refuse everything.
    resolver = StubResolver({"public.test": [PUBLIC]})
    async with (
        Canned({"http://public.test/": Reply(200, body=b"hi")}) as network,
        Fetcher(settings(), resolver=resolver, connector=network.connector) as fetcher,
    ):
        result = await fetcher.fetch("http://public.test/")
    assert (result.error_kind, result.status, result.body) == (None, 200, b"hi")
    assert network.requests == ["http://public.test/"]


@pytest.mark.parametrize(
    "target",
    ["http://127.0.0.1/", "http://[::ffff:7f00:1]/", "http://2130706433/", "http://internal.test/"],
)
async def test_a_redirect_to_a_forbidden_address_is_refused_before_it_is_followed(
    target: str,
) -> None:
    resolver = StubResolver({"public.test": [PUBLIC], **STUB})
    async with (
        Canned({"http://public.test/": Reply(302, {"Location": target})}) as network,
        Fetcher(settings(), resolver=resolver, connector=network.connector) as fetcher,
    ):
        result = await fetcher.fetch("http://public.test/")
    assert result.error_kind == "ssrf_refused"
    assert network.requests == ["http://public.test/"]
    assert [(hop.url, hop.status) for hop in result.redirect_chain] == [
        ("http://public.test/", 302)
    ]
    assert result.final_url == str(parse_url(target))
