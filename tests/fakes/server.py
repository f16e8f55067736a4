"""Run an ASGI app (a fake provider, a fixture site) on a real loopback socket in a thread.

Fakes speak the provider's documented wire format over real HTTP, so adapters are tested at the
network edge and nothing of ours is mocked.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from collections.abc import Iterator
from typing import Any

import uvicorn


class _Server(uvicorn.Server):
    def install_signal_handlers(self) -> None:  # not the main thread
        return None

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


@contextlib.contextmanager
def serve(app: Any, host: str = "127.0.0.1", tls: tuple[str, str] | None = None) -> Iterator[str]:
    """Serve ``app`` on ``host`` (a loopback address) and yield its base URL; ``tls``:
    (certificate chain file, key file), over https."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP explicitly: asyncio sets TCP_NODELAY on accepted connections only when the
    # listening socket says TCP, and without it every answer waits for a delayed ACK (~40 ms).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, 0))
    port = sock.getsockname()[1]
    files = {"ssl_certfile": tls[0], "ssl_keyfile": tls[1]} if tls else {}
    config = uvicorn.Config(app, log_level="warning", lifespan="off", access_log=False, **files)
    server = _Server(config)
    thread = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[sock])), daemon=True)
    thread.start()
    while not server.started:
        if not thread.is_alive():
            raise RuntimeError("fake server failed to start")
        threading.Event().wait(0.01)
    try:
        shown = f"[{host}]" if ":" in host else host
        yield f"{'https' if tls else 'http'}://{shown}:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
