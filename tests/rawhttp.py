"""HTTP/1.1 over a raw loopback socket, for tests that send what no HTTP client would: heads
and bodies a byte at a time, megabyte headers, bodies that stop. Every wait is bounded, and a
wait for the server is the pause between two pieces (``recv`` with a timeout), never a sleep.
"""

from __future__ import annotations

import contextlib
import json
import selectors
import socket
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

GUARD = 30.0  # no exchange here should take this long: a server that never answers fails


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@contextlib.contextmanager
def connect(base: str) -> Iterator[socket.socket]:
    """A TCP connection to the server at ``base`` (http://127.0.0.1:port), closed after."""
    parts = urlsplit(base)
    assert parts.hostname in ("127.0.0.1", "::1", "localhost"), base  # loopback only
    sock = socket.create_connection((parts.hostname, parts.port or 80), timeout=GUARD)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        yield sock
    finally:
        sock.close()


def request_head(method: str, target: str, *headers: str) -> bytes:
    lines = [f"{method} {target} HTTP/1.1", "Host: 127.0.0.1", *headers, "", ""]
    return "\r\n".join(lines).encode()


class Reader:
    """What a connection receives, kept between calls: one recv may hold two responses."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buffer = b""

    def reply(self, timeout: float = GUARD) -> Reply:
        """One response on a connection that stays open (it must have a Content-Length)."""
        self.sock.settimeout(timeout)
        while b"\r\n\r\n" not in self.buffer:
            self._more()
        head, _, self.buffer = self.buffer.partition(b"\r\n\r\n")
        reply = _head(head)
        length = int(reply.headers.get("content-length", "0"))
        while len(self.buffer) < length:
            self._more()
        reply.body, self.buffer = self.buffer[:length], self.buffer[length:]
        return reply

    def _more(self) -> None:
        chunk = self.sock.recv(65536)
        assert chunk, f"the server closed the connection; it sent {self.buffer[:300]!r}"
        self.buffer += chunk


def read_until_closed(sock: socket.socket, timeout: float = GUARD) -> bytes:
    """Everything the server sends until it closes; fails if it has not closed in ``timeout``."""
    sock.settimeout(timeout)
    received = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            return received
        except TimeoutError:
            raise AssertionError(
                f"the server kept the connection open {timeout} s; it sent {received[:300]!r}"
            ) from None
        if not chunk:
            return received
        received += chunk


def read_reply(sock: socket.socket, timeout: float = GUARD) -> Reply:
    """The one response expected next on ``sock`` (nothing may follow it yet)."""
    reader = Reader(sock)
    reply = reader.reply(timeout)
    assert not reader.buffer, f"more than one response: {reader.buffer[:300]!r}"
    return reply


def replies(raw: bytes) -> list[Reply]:
    """The responses in ``raw`` (what a connection received), in order."""
    found = []
    while raw:
        head, sep, rest = raw.partition(b"\r\n\r\n")
        assert sep, f"an incomplete response: {raw[:300]!r}"
        reply = _head(head)
        length = int(reply.headers.get("content-length", "0"))
        reply.body, raw = rest[:length], rest[length:]
        found.append(reply)
    return found


def only_reply(raw: bytes) -> Reply:
    found = replies(raw)
    assert len(found) == 1, found
    return found[0]


def _head(head: bytes) -> Reply:
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return Reply(int(status_line.split()[1]), headers, b"")


def drip(sock: socket.socket, pieces: Iterable[bytes], every: float) -> bytes | None:
    """Send ``pieces`` one by one, waiting up to ``every`` seconds for the server after each
    but the last.

    If the server answers or closes before the last piece, returns all it sent until it
    closed; None if every piece went out with no word from it.
    """
    deadline = time.monotonic() + GUARD
    queued = list(pieces)
    for index, piece in enumerate(queued):
        assert time.monotonic() < deadline, f"still sending after {GUARD} s"
        try:
            sock.sendall(piece)
        except (BrokenPipeError, ConnectionResetError):
            return read_until_closed(sock)
        if index == len(queued) - 1:
            break
        sock.settimeout(every)
        try:
            first = sock.recv(65536)
        except TimeoutError:
            continue
        except ConnectionResetError:
            return b""
        return first + read_until_closed(sock) if first else b""
    return None


def one_byte_at_a_time(data: bytes) -> Iterator[bytes]:
    return (data[i : i + 1] for i in range(len(data)))


def drip_many(
    socks: list[socket.socket], piece: bytes, every: float, timeout: float = GUARD
) -> dict[socket.socket, bytes]:
    """Send ``piece`` on each open socket, then wait ``every`` for the server, again and
    again, until the server has closed every one; returns what each received. Fails if some
    are still open after ``timeout``."""
    received = {sock: b"" for sock in socks}
    open_ = set(socks)
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as selector:
        for sock in socks:
            sock.setblocking(False)
            selector.register(sock, selectors.EVENT_READ)
        while open_:
            assert time.monotonic() < deadline, f"{len(open_)} of {len(socks)} still open"
            for sock in list(open_):
                with contextlib.suppress(BlockingIOError, BrokenPipeError, ConnectionResetError):
                    sock.send(piece)
            for key, _ in selector.select(every):
                sock = key.fileobj
                assert isinstance(sock, socket.socket)
                try:
                    chunk = sock.recv(65536)
                except BlockingIOError:
                    continue
                except ConnectionResetError:
                    chunk = b""
                if chunk:
                    received[sock] += chunk
                else:
                    open_.discard(sock)
                    selector.unregister(sock)
    return received
