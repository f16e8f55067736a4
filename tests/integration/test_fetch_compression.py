"""A compressed page is decoded in bounded pieces: a gzip bomb never fills the memory.

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
from collections.abc import AsyncIterator

import pytest

from seojobs.fetch import Fetcher
from seojobs.settings import Settings

INFLATED = 64 * 1024 * 1024  # what the bomb inflates to
CAP = 1024 * 1024  # fetch_max_bytes for the test


@pytest.fixture(scope="module")
def bomb() -> bytes:
    return gzip.compress(b"\0" * INFLATED, compresslevel=9)


@pytest.fixture
async def bomb_server(bomb: bytes) -> AsyncIterator[str]:
    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Encoding: gzip\r\n"
            + f"Content-Length: {len(bomb)}\r\nConnection: close\r\n\r\n".encode()
            + bomb
        )
        # The fetcher may stop reading at its cap and close the connection.
        with contextlib.suppress(ConnectionError):
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        yield f"http://127.0.0.1:{port}/"


async def test_a_gzip_bomb_is_cut_at_the_cap_without_inflating_it_whole(
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
