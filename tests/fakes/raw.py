"""Raw loopback HTTP servers that misbehave on purpose, byte for byte.

Each server reads one request (head and ``Content-Length`` body), records it, then plays an
``Answer``: bytes that are not HTTP, a body cut short, a Content-Encoding that does not decode,
silence, a trickle, an endless body... Nothing in between parses or fixes what is sent, so the
client meets the failure exactly as a broken server would serve it.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

Answer = Callable[[asyncio.StreamWriter, asyncio.Event], Awaitable[None]]


@dataclass
class RawServer:
    port: int = 0
    heads: list[bytes] = field(default_factory=list)  # the request heads received, in order

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def _content_length(head: bytes) -> int:
    for line in head.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value)
    return 0


@contextlib.asynccontextmanager
async def raw_server(answer: Answer, *, first: bool = False) -> AsyncIterator[RawServer]:
    """Serve ``answer`` to every connection on 127.0.0.1 until the block ends (``first``: as
    soon as it opens, without waiting for a request, as a server of another protocol does)."""
    state = RawServer()
    done = asyncio.Event()  # set at the end: answers that wait forever stop waiting
    tasks: set[asyncio.Task[None]] = set()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        tasks.add(task)
        try:
            if not first:
                head = await reader.readuntil(b"\r\n\r\n")
                await reader.readexactly(_content_length(head))
                state.heads.append(head)
            await answer(writer, done)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass  # the client went away, as it may
        finally:
            writer.close()
            tasks.discard(task)

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    state.port = server.sockets[0].getsockname()[1]
    try:
        yield state
    finally:
        done.set()
        server.close()
        for task in list(tasks):
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await server.wait_closed()


def send(raw: bytes) -> Answer:
    """Write ``raw`` as the whole answer, then close."""

    async def answer(writer: asyncio.StreamWriter, done: asyncio.Event) -> None:
        writer.write(raw)
        await writer.drain()

    return answer


async def hang_up(writer: asyncio.StreamWriter, done: asyncio.Event) -> None:
    """Close the connection without a byte of answer."""


async def reset(writer: asyncio.StreamWriter, done: asyncio.Event) -> None:
    """Abort the connection (TCP RST) half-way through the headers."""
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Ty")
    await writer.drain()
    sock = writer.get_extra_info("socket")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


async def silent(writer: asyncio.StreamWriter, done: asyncio.Event) -> None:
    """Accept the request and never answer."""
    await done.wait()


async def trickle(writer: asyncio.StreamWriter, done: asyncio.Event) -> None:
    """Headers, then one body byte at a time, each well within any read timeout, forever."""
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 1000000\r\n\r\n")
    while not done.is_set():
        writer.write(b"x")
        await writer.drain()
        await asyncio.sleep(0.05)  # the server's pace, not a test's wait


async def endless(writer: asyncio.StreamWriter, done: asyncio.Event) -> None:
    """A chunked body that never ends, sent as fast as the client reads it."""
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n")
    writer.write(b"Transfer-Encoding: chunked\r\n\r\n")
    chunk = b"[" * 65536
    frame = b"%x\r\n" % len(chunk) + chunk + b"\r\n"
    while not done.is_set():
        writer.write(frame)
        await writer.drain()


CUT_OFF = send(b'HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{"organic": [')
NOT_HTTP = send(b"SSH-2.0-OpenSSH_9.6\r\n\r\n")
BAD_CHUNK = send(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nab\r\n")
BAD_GZIP = send(b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 5\r\n\r\nplain")
BAD_DEFLATE = send(
    b"HTTP/1.1 200 OK\r\nContent-Encoding: deflate\r\nContent-Length: 5\r\n\r\nplain"
)
# Not Brotli at all, though the header says so ("plain" would be an unfinished stream, which
# aiohttp takes as an empty body).
BAD_BROTLI = send(
    b"HTTP/1.1 200 OK\r\nContent-Encoding: br\r\nContent-Length: 5\r\n\r\n\xff\xff\xff\xff\xff"
)
