"""The pinning network backend, with a stub of the socket layer under it (no sockets open)."""

from __future__ import annotations

import ipaddress
from typing import Any

import httpcore
import pytest

from seojobs.fetch import AddressGuard, GuardPolicy
from seojobs.fetch.errors import SSRFRefused
from seojobs.fetch.transport import PinningBackend, pinned

PUBLIC = "93.184.216.34"  # only ever handed to the stub below, never dialled


class StubStream(httpcore.AsyncNetworkStream):
    def __init__(self, peer: tuple[str, int] | None) -> None:
        self.peer = peer
        self.closed = False

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        raise AssertionError("nothing may be read in these tests")

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        raise AssertionError("nothing may be written in these tests")

    async def aclose(self) -> None:
        self.closed = True

    def get_extra_info(self, info: str) -> Any:
        return self.peer if info == "server_addr" else None


class StubSockets(httpcore.AsyncNetworkBackend):
    """Records every dial; ``refuse`` addresses fail like a closed port, ``peer`` overrides."""

    def __init__(self, refuse: set[str] | None = None, peer: str | None = None) -> None:
        self.dialled: list[str] = []
        self.refuse = refuse or set()
        self.peer = peer
        self.streams: list[StubStream] = []

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Any = None,
    ) -> httpcore.AsyncNetworkStream:
        self.dialled.append(host)
        if host in self.refuse:
            raise httpcore.ConnectError("connection refused")
        stream = StubStream((self.peer or host, port))
        self.streams.append(stream)
        return stream


class CountingResolver:
    def __init__(self, answers: dict[str, list[str]]) -> None:
        self.answers = answers
        self.calls: list[str] = []

    def __call__(self, host: str) -> list[str]:
        self.calls.append(host)
        return self.answers[host]


def backend(
    answers: dict[str, list[str]], sockets: StubSockets, policy: GuardPolicy | None = None
) -> tuple[PinningBackend, CountingResolver]:
    resolver = CountingResolver(answers)
    return PinningBackend(AddressGuard(policy or GuardPolicy(), resolver), sockets), resolver


async def test_the_pinned_address_is_dialled_and_the_name_is_not_resolved_again() -> None:
    sockets = StubSockets()
    # A rebinding resolver: a second lookup would answer loopback.
    pinning, resolver = backend({"site.test": ["127.0.0.1"]}, sockets)
    with pinned("site.test", (ipaddress.ip_address(PUBLIC),)):
        stream = await pinning.connect_tcp("site.test", 443)
    assert sockets.dialled == [PUBLIC]
    assert resolver.calls == []
    assert stream is sockets.streams[0]


async def test_without_a_pin_the_backend_resolves_and_refuses_itself() -> None:
    sockets = StubSockets()
    pinning, resolver = backend({"rebound.test": [PUBLIC, "127.0.0.1"]}, sockets)
    with pytest.raises(SSRFRefused):
        await pinning.connect_tcp("rebound.test", 80)
    assert resolver.calls == ["rebound.test"]
    assert sockets.dialled == []


async def test_a_pin_for_another_host_is_not_used() -> None:
    sockets = StubSockets()
    pinning, resolver = backend({"b.test": ["10.0.0.1"]}, sockets)
    with pinned("a.test", (ipaddress.ip_address(PUBLIC),)), pytest.raises(SSRFRefused):
        await pinning.connect_tcp("b.test", 80)
    assert resolver.calls == ["b.test"]
    assert sockets.dialled == []


async def test_a_forbidden_pinned_address_is_refused_at_connect_time() -> None:
    # Belt and braces: the pin is re-checked at the last point before a socket opens.
    sockets = StubSockets()
    pinning, _ = backend({}, sockets)
    metadata = (ipaddress.ip_address("169.254.169.254"),)
    with pinned("site.test", metadata), pytest.raises(SSRFRefused):
        await pinning.connect_tcp("site.test", 80)
    assert sockets.dialled == []


async def test_a_peer_other_than_the_dialled_address_is_refused_and_closed() -> None:
    sockets = StubSockets(peer="10.9.9.9")
    pinning, _ = backend({}, sockets)
    with pinned("site.test", (ipaddress.ip_address(PUBLIC),)), pytest.raises(SSRFRefused):
        await pinning.connect_tcp("site.test", 80)
    assert sockets.dialled == [PUBLIC]
    assert sockets.streams[0].closed


async def test_the_next_validated_address_is_tried_when_one_fails() -> None:
    second = "2606:4700:4700::1111"
    sockets = StubSockets(refuse={PUBLIC})
    pinning, _ = backend({}, sockets)
    addresses = (ipaddress.ip_address(PUBLIC), ipaddress.ip_address(second))
    with pinned("site.test", addresses):
        await pinning.connect_tcp("site.test", 80)
    assert sockets.dialled == [PUBLIC, second]


async def test_when_every_address_fails_the_connect_error_surfaces() -> None:
    sockets = StubSockets(refuse={PUBLIC})
    pinning, _ = backend({}, sockets)
    public = (ipaddress.ip_address(PUBLIC),)
    with pinned("site.test", public), pytest.raises(httpcore.ConnectError):
        await pinning.connect_tcp("site.test", 80)


async def test_unix_sockets_are_refused() -> None:
    pinning, _ = backend({}, StubSockets())
    with pytest.raises(SSRFRefused):
        await pinning.connect_unix_socket("/var/run/docker.sock")
