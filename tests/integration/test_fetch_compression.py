"""A compressed page is decoded in bounded pieces: a gzip or Brotli bomb never fills the memory.

The fetcher lets aiohttp decode ``Content-Encoding`` and stops reading at ``fetch_max_bytes``.
That only bounds memory if the decoder hands the body over in bounded pieces, as aiohttp does
since 3.13.3 (CVE-2025-69223: before, one network chunk could inflate to its full size at
once). The server is a raw loopback socket, so nothing in between decodes or buffers.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import tracemalloc
from collections.abc import AsyncIterator, Callable

import brotli
import pytest

from seojobs.fetch import Fetcher
from seojobs.settings import Settings

INFLATED = 64 * 1024 * 1024  # what the bomb inflates to
CAP = 1024 * 1024  # fetch_max_bytes for the test


COMPRESS: dict[str, Callable[[bytes], bytes]] = {
    "gzip": lambda body: gzip.compress(body, compresslevel=9),
    "br": lambda body: brotli.compress(body, quality=5),
}


@pytest.fixture(scope="module", params=sorted(COMPRESS))
def encoding(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def bomb(encoding: str) -> bytes:
    return COMPRESS[encoding](b"\0" * INFLATED)


@contextlib.asynccontextmanager
async def serving(body: bytes, encoding: str) -> AsyncIterator[str]:
    """A raw loopback server that answers ``body`` with ``Content-Encoding: encoding``,
    whatever the request's ``Accept-Encoding`` said."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n"
            + f"Content-Encoding: {encoding}\r\n".encode()
            + f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
            + body
        )
        # The fetcher may stop reading at its cap and close the connection.
        with contextlib.suppress(ConnectionError):
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        yield f"http://127.0.0.1:{port}/"


@pytest.fixture
async def bomb_server(bomb: bytes, encoding: str) -> AsyncIterator[str]:
    async with serving(bomb, encoding) as url:
        yield url


async def test_a_bomb_is_cut_at_the_cap_without_inflating_it_whole(
    bomb_server: str, bomb: bytes
) -> None:
    assert len(bomb) < INFLATED // 500  # it really is a bomb
    settings = Settings(database_url="sqlite://", allow_private_networks=True, fetch_max_bytes=CAP)
    async with Fetcher(settings) as fetcher:
        tracemalloc.start()
        try:
            result = await fetcher.fetch(bomb_server)
            _now, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert result.error is None, result.error
    assert result.status == 200
    assert result.truncated
    assert len(result.body) == CAP
    assert result.body == b"\0" * CAP
    # Inflated whole, the body alone would be 64 MiB.
    assert peak < INFLATED // 4, f"peak {peak / 2**20:.1f} MiB while fetching"


async def test_a_page_sent_in_brotli_unasked_is_decoded() -> None:
    page = b"<html><head><title>Brotli</title></head><body>" + b"word " * 5000 + b"</body></html>"
    settings = Settings(database_url="sqlite://", allow_private_networks=True)
    async with serving(brotli.compress(page), "br") as url, Fetcher(settings) as fetcher:
        result = await fetcher.fetch(url)
    assert result.error is None, result.error
    assert result.status == 200
    assert result.body == page
