"""A loopback TCP port standing in for a storage server that fails: refused, hung, or healthy.

``Endpoint`` binds a port on 127.0.0.1 and starts it in one of three states, which a test can
change while the app under test keeps the same URL:

- ``refuse``: the port is bound but not listening, so connecting is refused (ECONNREFUSED);
- ``hang``: connections are accepted and never answered (a stuck server, a black-holing
  firewall), held open until the endpoint closes;
- ``forward``: bytes are piped both ways to a real server (``target``, e.g. the test Redis).

It closes itself after ``lifetime`` seconds whatever the test does, so a hung client in a
failing test is released instead of hanging the run.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator
from typing import Literal
from urllib.parse import urlsplit, urlunsplit

Mode = Literal["refuse", "hang", "forward"]


class Endpoint:
    def __init__(self, target: tuple[str, int] | None = None, lifetime: float = 60.0) -> None:
        self.target = target
        self.accepted = 0  # connections taken (hang and forward modes)
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.bind(("127.0.0.1", 0))
        self.port: int = self._sock.getsockname()[1]
        self._mode: Mode = "refuse"
        self._listening = False
        self._held: list[socket.socket] = []
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._timer = threading.Timer(lifetime, self.close)
        self._timer.daemon = True
        self._timer.start()

    def redis_url(self, like: str) -> str:
        """``like`` (a Redis URL) with this endpoint's address in place of the server's."""
        parts = urlsplit(like)
        return urlunsplit(parts._replace(netloc=f"127.0.0.1:{self.port}"))

    def set(self, mode: Mode) -> None:
        """Switch state. From ``refuse`` the port starts listening; it cannot go back."""
        if mode == "refuse":
            raise ValueError("an endpoint refuses only before it first listens")
        if mode == "forward" and self.target is None:
            raise ValueError("forward needs a target")
        with self._lock:
            self._mode = mode
            if mode == "hang":
                self._drop_held()  # forwarded connections stop too: the server went quiet
            if not self._listening:
                self._listening = True
                self._sock.listen(128)
                threading.Thread(target=self._accept, daemon=True, name="fake-tcp").start()

    def close(self) -> None:
        if self._closed.is_set():
            return
        self._closed.set()
        self._timer.cancel()
        with self._lock:
            self._drop_held()
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)
        self._sock.close()

    def _drop_held(self) -> None:
        for held in self._held:
            with contextlib.suppress(OSError):
                held.shutdown(socket.SHUT_RDWR)
            held.close()
        self._held.clear()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return  # closed
            with self._lock:
                self.accepted += 1
                self._held.append(conn)
                mode = self._mode
            if mode == "forward":
                self._forward(conn)
            # hang: keep the connection open, read nothing, answer nothing

    def _forward(self, conn: socket.socket) -> None:
        assert self.target is not None
        self._pipe(conn, self.target)

    def _pipe(self, conn: socket.socket, target: tuple[str, int]) -> None:
        """Pipe ``conn`` to a new connection to ``target``, both ways."""
        upstream = socket.create_connection(target, timeout=5)
        upstream.settimeout(None)
        with self._lock:
            self._held.append(upstream)
        for source, sink in ((conn, upstream), (upstream, conn)):
            threading.Thread(target=pump, args=(source, sink), daemon=True).start()


def pump(source: socket.socket, sink: socket.socket) -> None:
    try:
        while chunk := source.recv(65536):
            sink.sendall(chunk)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)


def address_of(url: str) -> tuple[str, int]:
    """(host, port) of a server URL, e.g. the test Redis's."""
    parts = urlsplit(url)
    return parts.hostname or "127.0.0.1", parts.port or 6379


@contextlib.contextmanager
def endpoint(
    mode: Mode = "refuse", target: tuple[str, int] | None = None, lifetime: float = 60.0
) -> Iterator[Endpoint]:
    made = Endpoint(target, lifetime)
    try:
        if mode != "refuse":
            made.set(mode)
        yield made
    finally:
        made.close()
