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

# How often a socketserver fake (DNS, TLS) looks whether it is asked to stop: ``shutdown()``
# waits up to that long (0.5 s by default: the DNS fake's two servers took 1 s to stop, the TLS
# fake's 0.5 s, in every test of a domain lookup).
STOP_WITHIN = 0.05


class ThreadServer(uvicorn.Server):
    """uvicorn's server run in a test's thread: no signal handlers (not the main thread), and
    ``stop()`` ends it at once. uvicorn's main loop looks at ``should_exit`` every 0.1 s; the
    thousands of fakes and apps a run stops each waited for that tick (with the shutdown's own
    0.1 s, a fake took 0.2 s to stop), while the test held its xdist worker."""

    _loop: asyncio.AbstractEventLoop | None = None
    _wake: asyncio.Event | None = None

    def install_signal_handlers(self) -> None:
        return None

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield

    async def main_loop(self) -> None:
        """uvicorn's (its ticks keep the Date header and the limits), woken by ``stop()``."""
        self._wake = asyncio.Event()
        self._loop = asyncio.get_running_loop()
        counter = 0
        should_exit = await self.on_tick(counter)
        while not should_exit:
            counter = (counter + 1) % 864000
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(0.1):
                    await self._wake.wait()
            should_exit = await self.on_tick(counter)

    def stop(self) -> None:
        """Thread-safe: shut down now (before the main loop runs: at its first look)."""
        self.should_exit = True
        loop, wake = self._loop, self._wake
        if loop is not None and wake is not None:
            with contextlib.suppress(RuntimeError):  # its loop already closed
                loop.call_soon_threadsafe(wake.set)


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
    server = ThreadServer(config)
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
        server.stop()
        thread.join(timeout=10)
        sock.close()
