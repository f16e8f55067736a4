"""Connect only to addresses the guard validated (DNS rebinding cannot slip in between).

httpx would resolve the hostname again when it opens a connection, and a hostile resolver can
answer differently the second time. So the connection pool gets a network backend of ours:

* the fetcher resolves and validates a host, then *pins* those addresses for the current task
  (a context variable: httpcore opens connections in the task that sends the request);
* ``connect_tcp`` dials one of the pinned addresses itself, never the name. A connection for a
  host without a pin (not expected) is resolved and validated here instead;
* after the socket opens, its peer address is compared with the address dialled, before a
  single byte is written.

The URL keeps the hostname, so the ``Host`` header, TLS SNI, certificate verification and the
pool's connection key (one pool entry per hostname, never shared between names that happen to
share an IP) all stay those of the hostname.
"""

from __future__ import annotations

import contextlib
import ipaddress
from collections.abc import Iterable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import httpcore
import httpx

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


def _peer_address(stream: httpcore.AsyncNetworkStream) -> IPAddress | None:
    peer = stream.get_extra_info("server_addr")
    if not peer:
        return None
    try:
        return ipaddress.ip_address(str(peer[0]))
    except ValueError:
        return None


class PinningBackend(httpcore.AsyncNetworkBackend):
    """A network backend that dials validated IP addresses instead of hostnames."""

    def __init__(
        self, guard: AddressGuard, inner: httpcore.AsyncNetworkBackend | None = None
    ) -> None:
        self._guard = guard
        self._inner = inner or httpcore.AnyIOBackend()

    async def _addresses(self, host: str) -> tuple[IPAddress, ...]:
        pin = _PIN.get()
        if pin is not None and pin.host == host.lower():
            addresses = pin.addresses
        else:
            addresses = await self._guard.resolve(host)
        # Checked again here: this is the last point before a socket opens.
        self._guard.check(host, addresses)
        return addresses

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore's backend signature)
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        failure: Exception | None = None
        for address in await self._addresses(host):
            try:
                stream = await self._inner.connect_tcp(
                    str(address), port, timeout, local_address, socket_options
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                failure = exc  # try the next validated address, like happy eyeballs would
                continue
            peer = _peer_address(stream)
            if peer != address:
                await stream.aclose()
                raise SSRFRefused(f"connected peer {peer} is not the validated address {address}")
            return stream
        assert failure is not None  # _addresses never returns an empty tuple
        raise failure

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore's backend signature)
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise SSRFRefused("the fetcher never connects to unix sockets")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class PinnedTransport(httpx.AsyncHTTPTransport):
    """httpx's own transport, with its connection pool built on :class:`PinningBackend`.

    Proxies are never used (``trust_env=False``): behind a proxy the guard could not see the
    address the proxy connects to.
    """

    def __init__(self, backend: PinningBackend, limits: httpx.Limits) -> None:
        super().__init__(trust_env=False, limits=limits, retries=0)
        # httpx has no public hook for the network backend, so the pool it built is replaced.
        # Fail loudly if its internals move rather than silently connect without the pin.
        if not isinstance(getattr(self, "_pool", None), httpcore.AsyncConnectionPool):
            raise RuntimeError("unsupported httpx version: cannot install the pinning backend")
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=httpx.create_ssl_context(),
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            http1=True,
            http2=False,
            retries=0,
            network_backend=backend,
        )
