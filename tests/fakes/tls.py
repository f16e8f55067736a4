"""TLS on loopback with certificates made in the test (trustme).

``TlsServer`` completes the handshake, then closes; ``connections`` counts the TCP
connections it accepted. ``EitherScheme`` puts an http and an https server on one port.
"""

from __future__ import annotations

import contextlib
import socket
import socketserver
import ssl
import threading
from collections.abc import Iterator
from typing import Any

from tests.fakes.server import STOP_WITHIN
from tests.fakes.tcp import Endpoint


class _Handler(socketserver.BaseRequestHandler):
    server: Any

    def handle(self) -> None:
        with self.server.lock:
            self.server.connections += 1
        try:
            with self.server.context.wrap_socket(self.request, server_side=True) as tls:
                tls.settimeout(5)
                with contextlib.suppress(OSError):
                    tls.recv(1)  # until the client closes
        except (ssl.SSLError, OSError):
            pass  # a client that refused our certificate


class TlsServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, context: ssl.SSLContext) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.context = context
        self.connections = 0
        self.lock = threading.Lock()

    @property
    def port(self) -> int:
        return int(self.server_address[1])


@contextlib.contextmanager
def serve_tls(context: ssl.SSLContext) -> Iterator[TlsServer]:
    server = TlsServer(context)
    threading.Thread(target=server.serve_forever, args=(STOP_WITHIN,), daemon=True).start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


class EitherScheme(Endpoint):
    """One loopback port that answers http and https, as a site's host does on 80 and 443:
    each connection is piped, byte for byte, to the https server when its first byte opens a
    TLS handshake (0x16), else to the http one. A site served so has one origin per scheme
    on the same host and port, so an audit of its https pages sees its http URLs as its own
    (as it would on the default ports)."""

    def __init__(self, plain: tuple[str, int], secure: tuple[str, int]) -> None:
        super().__init__(plain, lifetime=600)
        self.secure = secure

    def _forward(self, conn: socket.socket) -> None:
        # Not in the accept loop: the first byte may take a while.
        threading.Thread(target=self._sniffed, args=(conn,), daemon=True).start()

    def _sniffed(self, conn: socket.socket) -> None:
        assert self.target is not None
        with contextlib.suppress(OSError):
            first = conn.recv(1, socket.MSG_PEEK)
            if first:
                self._pipe(conn, self.secure if first == b"\x16" else self.target)


@contextlib.contextmanager
def either_scheme(plain: tuple[str, int], secure: tuple[str, int]) -> Iterator[EitherScheme]:
    made = EitherScheme(plain, secure)
    try:
        made.set("forward")
        yield made
    finally:
        made.close()
