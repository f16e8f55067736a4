"""Connect only to addresses the guard validated (DNS rebinding cannot slip in between).

A client would resolve the hostname again when it opens a connection, and a hostile resolver
can answer differently the second time. So the fetcher's connections are made by a connector
of ours (a subclass of aiohttp's ``TCPConnector``, under the fetcher's aiohttp session):

* the fetcher resolves and validates a host, then *pins* those addresses for the current task
  (a context variable: aiohttp opens connections in the task that sends the request);
* the connector's resolver answers with the pinned addresses, never asking DNS again; a
  connection for a host without a pin (not expected) is resolved and validated there instead.
  Its DNS cache is off, so every new connection asks the resolver;
* before a socket opens, every address it may be opened to is checked the same way (issue
  25.6): aiohttp skips the resolver for an IP-literal URL, so a refused literal (a registrar
  link in an RDAP answer) was dialled first and refused after, and whether the dial worked
  (the port's state) showed in the error;
* after the socket opens, its peer address must be one the guard allows for the host (and one
  of the pinned ones if pinned), before a single byte is written.

The URL keeps the hostname, so the ``Host`` header, TLS SNI, certificate verification and the
pool's connection key (one pool entry per hostname, never shared between names that happen to
share an IP) all stay those of the hostname.
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
import ssl
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult

from seojobs.fetch.errors import SSRFRefused
from seojobs.fetch.guard import AddressGuard, IPAddress


@dataclass(frozen=True)
class _Pin:
    host: str
    addresses: tuple[IPAddress, ...]


_PIN: ContextVar[_Pin | None] = ContextVar("seojobs_fetch_pin", default=None)


@contextlib.contextmanager
def pinned(host: str, addresses: tuple[IPAddress, ...]) -> Iterator[None]:
    """Connections opened for ``host`` in this task go to ``addresses`` only."""
    token = _PIN.set(_Pin(host.lower(), addresses))
    try:
        yield
    finally:
        _PIN.reset(token)


def _pinned_for(host: str) -> tuple[IPAddress, ...] | None:
    """The addresses pinned for ``host`` in this task, if any."""
    pin = _PIN.get()
    return pin.addresses if pin is not None and pin.host == host.lower() else None


def check_peer(guard: AddressGuard, host: str, peername: Any) -> IPAddress:
    """The address a socket connected to, if the guard allows it for ``host``; else refuse."""
    try:
        address = ipaddress.ip_address(str(peername[0]).split("%", 1)[0])
    except (TypeError, IndexError, ValueError):
        raise SSRFRefused(f"cannot tell which address {host} connected to") from None
    pins = _pinned_for(host)
    if pins is not None and address not in pins:
        raise SSRFRefused(f"connected peer {address} is not a validated address of {host}")
    guard.check(host, (address,))
    return address


class GuardResolver(AbstractResolver):
    """aiohttp's resolver: the pinned addresses, or the guard's own validated lookup."""

    def __init__(self, guard: AddressGuard) -> None:
        self._guard = guard

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        addresses = _pinned_for(host)
        if addresses is None:
            addresses = await self._guard.resolve(host)
        # Checked again here: the last point before a socket opens.
        self._guard.check(host, addresses)
        return [
            {
                "hostname": host,
                "host": str(address),
                "port": port,
                "family": socket.AF_INET6 if address.version == 6 else socket.AF_INET,
                "proto": 0,
                "flags": socket.AI_NUMERICHOST,
            }
            for address in addresses
        ]

    async def close(self) -> None:
        return None


class PinnedConnector(aiohttp.TCPConnector):
    """``TCPConnector`` with the guard's resolver, no DNS cache, and a peer check."""

    def __init__(self, guard: AddressGuard, limit: int, tls: ssl.SSLContext | None = None) -> None:
        # aiohttp has no public hook after connect; fail loudly if the one used here moves
        # rather than silently connect without the peer check.
        if not hasattr(aiohttp.TCPConnector, "_wrap_create_connection"):
            raise RuntimeError("unsupported aiohttp version: cannot install the peer check")
        super().__init__(
            resolver=GuardResolver(guard),
            use_dns_cache=False,
            limit=limit,
            ssl=True if tls is None else tls,  # None: aiohttp's verifying default
        )
        self._guard = guard

    async def _wrap_create_connection(self, *args: Any, **kwargs: Any) -> Any:
        host = kwargs["req"].url.raw_host or ""
        for info in kwargs["addr_infos"]:  # (family, type, proto, canonname, sockaddr)
            check_peer(self._guard, host, info[4])  # refused here: nothing was dialled
        transport, protocol = await super()._wrap_create_connection(*args, **kwargs)
        try:
            check_peer(self._guard, host, transport.get_extra_info("peername"))
        except BaseException:
            transport.close()
            raise
        return transport, protocol
