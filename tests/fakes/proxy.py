"""A forward HTTP proxy on loopback that records what it is asked to carry.

Plain-HTTP requests (absolute-form, ``GET http://127.0.0.1:8001/x HTTP/1.1``) are forwarded to
their loopback target and the answer relayed; a target off loopback is refused with 502 and
never dialled. ``CONNECT`` (how an https request goes through a proxy) is recorded and refused
with 403: no test needs the tunnel, only the proof that it was asked for.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from urllib.parse import urlsplit

LOOPBACK = frozenset({"127.0.0.1", "::1", "localhost"})
_HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-authorization", "proxy-connection"})


@dataclass
class ForwardProxy:
    port: int = 0
    seen: list[str] = field(default_factory=list)  # "METHOD target" of every request
    credentials: list[str | None] = field(default_factory=list)  # its Proxy-Authorization

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
            request_line, *lines = head.split("\r\n")
            method, target, _ = request_line.split(" ", 2)
            headers = [tuple(p.strip() for p in line.split(":", 1)) for line in lines if line]
            named = {name.lower(): value for name, value in headers}
            self.seen.append(f"{method} {target}")
            self.credentials.append(named.get("proxy-authorization"))
            body = await reader.readexactly(int(named.get("content-length", "0")))
            if method == "CONNECT":
                writer.write(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
            else:
                await self._forward(method, target, headers, body, writer)
            await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def _forward(
        self,
        method: str,
        target: str,
        headers: list[tuple[str, ...]],
        body: bytes,
        writer: asyncio.StreamWriter,
    ) -> None:
        parts = urlsplit(target)
        if parts.hostname not in LOOPBACK or parts.port is None:
            writer.write(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
            return
        upstream_reader, upstream_writer = await asyncio.open_connection(parts.hostname, parts.port)
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        kept = "".join(f"{n}: {v}\r\n" for n, v in headers if n.lower() not in _HOP_BY_HOP)
        upstream_writer.write(
            f"{method} {path} HTTP/1.1\r\n{kept}Connection: close\r\n\r\n".encode("latin-1") + body
        )
        await upstream_writer.drain()
        writer.write(await upstream_reader.read())  # until the server closes: one answer
        upstream_writer.close()


@contextlib.asynccontextmanager
async def forward_proxy() -> AsyncIterator[ForwardProxy]:
    proxy = ForwardProxy()
    server = await asyncio.start_server(proxy.handle, "127.0.0.1", 0)
    proxy.port = server.sockets[0].getsockname()[1]
    async with server:
        yield proxy
