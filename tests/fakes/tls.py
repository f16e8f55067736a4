"""A TLS server on loopback with a certificate made in the test (trustme): it completes the
handshake, then closes. ``connections`` counts the TCP connections it accepted."""

from __future__ import annotations

import contextlib
import socketserver
import ssl
import threading
from collections.abc import Iterator
from typing import Any


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
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
