"""The pinning connector under the fetcher: its resolver, its peer check, and (on loopback
only) a real connection refused after connect, before a byte is written."""

from __future__ import annotations

import asyncio
import ipaddress
import socket

import aiohttp
import pytest

from seojobs.fetch import AddressGuard, GuardPolicy
from seojobs.fetch.errors import SSRFRefused
from seojobs.fetch.transport import GuardResolver, PinnedConnector, check_peer, pinned

PUBLIC = "93.184.216.34"  # only ever returned by a resolver here, never dialled


class CountingResolver:
    """Name resolution for the guard (what DNS would answer), counting the lookups."""

    def __init__(self, answers: dict[str, list[str]]) -> None:
        self.answers = answers
        self.calls: list[str] = []

    def __call__(self, host: str) -> list[str]:
        self.calls.append(host)
        return self.answers[host]


def resolver(
    answers: dict[str, list[str]], policy: GuardPolicy | None = None
) -> tuple[GuardResolver, CountingResolver]:
    dns = CountingResolver(answers)
    return GuardResolver(AddressGuard(policy or GuardPolicy(), dns)), dns


async def test_the_pinned_addresses_are_answered_and_the_name_is_not_resolved_again() -> None:
    # A rebinding DNS: a second lookup would answer loopback.
    guard_resolver, dns = resolver({"site.test": ["127.0.0.1"]})
    with pinned("site.test", (ipaddress.ip_address(PUBLIC),)):
        answer = await guard_resolver.resolve("site.test", 443, socket.AF_INET)
    assert [(a["host"], a["port"], a["hostname"]) for a in answer] == [(PUBLIC, 443, "site.test")]
    assert answer[0]["flags"] == socket.AI_NUMERICHOST
    assert dns.calls == []


async def test_without_a_pin_the_resolver_looks_up_and_refuses_itself() -> None:
    guard_resolver, dns = resolver({"rebound.test": [PUBLIC, "127.0.0.1"]})
    with pytest.raises(SSRFRefused):
        await guard_resolver.resolve("rebound.test", 80)
    assert dns.calls == ["rebound.test"]


async def test_a_pin_for_another_host_is_not_used() -> None:
    guard_resolver, dns = resolver({"b.test": ["10.0.0.1"]})
    with pinned("a.test", (ipaddress.ip_address(PUBLIC),)), pytest.raises(SSRFRefused):
        await guard_resolver.resolve("b.test", 80)
    assert dns.calls == ["b.test"]


async def test_a_forbidden_pinned_address_is_refused_at_connect_time() -> None:
    # Belt and braces: the pin is checked again at the last point before a socket opens.
    guard_resolver, _ = resolver({})
    metadata = (ipaddress.ip_address("169.254.169.254"),)
    with pinned("site.test", metadata), pytest.raises(SSRFRefused):
        await guard_resolver.resolve("site.test", 80)


async def test_ipv6_answers_carry_their_family() -> None:
    guard_resolver, _ = resolver({})
    v6 = ipaddress.ip_address("2606:4700:4700::1111")
    with pinned("site.test", (ipaddress.ip_address(PUBLIC), v6)):
        answer = await guard_resolver.resolve("site.test", 80, socket.AF_UNSPEC)
    assert [a["family"] for a in answer] == [socket.AF_INET, socket.AF_INET6]


def test_the_peer_must_be_pinned_and_allowed() -> None:
    guard = AddressGuard(GuardPolicy())
    with pinned("site.test", (ipaddress.ip_address(PUBLIC),)):
        assert check_peer(guard, "site.test", (PUBLIC, 80)) == ipaddress.ip_address(PUBLIC)
        with pytest.raises(SSRFRefused, match="not a validated address"):
            check_peer(guard, "site.test", ("8.8.8.8", 80))
    with pytest.raises(SSRFRefused):
        check_peer(guard, "site.test", ("10.9.9.9", 80))  # no pin: the policy decides
    with pytest.raises(SSRFRefused, match="cannot tell"):
        check_peer(guard, "site.test", None)
    assert check_peer(guard, "site.test", ("2606:4700:4700::1111", 80, 0, 0)).version == 6


async def test_an_ip_literal_url_is_refused_before_it_is_dialled() -> None:
    # aiohttp skips the resolver for IP literals; the connector checks the addresses it is
    # about to dial, so a refused literal gets no connection at all (issue 25.6: once it was
    # refused after connecting, and an open port and a closed one answered differently).
    # (The fetcher refuses such URLs before this point; this is the connector on its own.)
    connections: list[int] = []

    async def record(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(1)
        writer.close()

    server = await asyncio.start_server(record, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    guard = AddressGuard(GuardPolicy(allow_private_networks=False))
    try:
        async with aiohttp.ClientSession(connector=PinnedConnector(guard, limit=10)) as session:
            with pytest.raises(SSRFRefused, match=r"127\.0\.0\.1"):
                await session.get(f"http://127.0.0.1:{port}/secret")
    finally:
        server.close()
        await server.wait_closed()  # a connection made would have been handled by now
    assert connections == []


async def test_a_pinned_name_is_dialled_at_the_pinned_address_with_its_own_host_header() -> None:
    seen: list[bytes] = []

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.append(await reader.readuntil(b"\r\n\r\n"))
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    dns = CountingResolver({})
    policy = GuardPolicy(allow_private_networks=True)
    connector = PinnedConnector(AddressGuard(policy, dns), limit=10)
    try:
        async with aiohttp.ClientSession(connector=connector) as session:
            with pinned("site.test", (ipaddress.ip_address("127.0.0.1"),)):
                async with session.get(f"http://site.test:{port}/page") as response:
                    status, text = response.status, await response.text()
    finally:
        server.close()
        await server.wait_closed()
    assert (status, text) == (200, "ok")
    assert dns.calls == []
    assert f"host: site.test:{port}".encode() in seen[0].lower()
