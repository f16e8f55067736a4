"""What the client tests against a live server share: one driver for Client and AsyncClient,
injected sleeps and clocks, and transports at the client's network edge that record the
traffic or lose an answer (the server acts, the client never hears)."""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx

from seojobs.client import AsyncClient, Client
from tests.api_helpers import TLS

MODES = ["sync", "async"]


class Recording:
    """An injected sleep that records each delay and then really sleeps it (the real server's
    clock has to move for its rate limit to free up)."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.delays.append(seconds)
        threading.Event().wait(seconds)

    async def asleep(self, seconds: float) -> None:
        self.delays.append(seconds)
        await asyncio.sleep(seconds)


class NoWait(Recording):
    """Records each delay and moves the client's clock instead of waiting it out."""

    def __init__(self) -> None:
        super().__init__()
        self.now = 0.0

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.delays.append(seconds)
        self.now += seconds

    async def asleep(self, seconds: float) -> None:
        self.sleep(seconds)


class Driver:
    """Runs one scenario through Client or AsyncClient (``mode``). Scenarios are coroutines
    that ``await aw(...)`` every client call, so the same text drives both."""

    def __init__(self, mode: str, base: str, key: str, **options: Any) -> None:
        self.mode = mode
        self.base = base
        self.key = key
        self.options = options
        self.recording = Recording()

    def run(self, scenario: Callable[[Any], Any]) -> Any:
        """``scenario(client)``: a coroutine, or one client call."""
        if self.mode == "sync":
            # A transport on the suite's one TLS context, unless the test brings its own.
            options = {
                "sleep": self.recording.sleep,
                "transport": httpx.HTTPTransport(verify=TLS),
                **self.options,
            }
            with Client(self.base, self.key, **options) as client:
                return asyncio.run(aw(scenario(client)))

        async def main() -> Any:
            options = {
                "sleep": self.recording.asleep,
                "transport": httpx.AsyncHTTPTransport(verify=TLS),
                **self.options,
            }
            async with AsyncClient(self.base, self.key, **options) as client:
                return await aw(scenario(client))

        return asyncio.run(main())


async def aw(value: Any) -> Any:
    """The value of a client call, awaited if the client is the async one."""
    if inspect.isawaitable(value):
        return await value
    if inspect.isasyncgen(value):
        return [item async for item in value]
    if isinstance(value, Iterator):
        return list(value)
    return value


# -- transports ---------------------------------------------------------------------------------


@dataclass
class Exchange:
    method: str
    path: str
    headers: dict[str, str]
    status: int = 0
    response_headers: dict[str, str] = field(default_factory=dict)


class Edge:
    """What the transports below share: the exchanges seen, the answers to throw away."""

    def __init__(
        self,
        *,
        drop_first: str | None = None,
        on_request: Callable[[], None] | None = None,
        strip_prefer: bool = False,
    ) -> None:
        self.seen: list[Exchange] = []
        self.drop_first = drop_first  # lose the answer to the first request of this method
        self.dropped = 0
        self.on_request = on_request
        # A proxy that drops ``Prefer`` (the server then never holds a read): the exchanges
        # keep the header as the client sent it.
        self.strip_prefer = strip_prefer

    def record(self, request: httpx.Request) -> Exchange:
        entry = Exchange(request.method, request.url.path, dict(request.headers))
        self.seen.append(entry)
        if self.strip_prefer and "prefer" in request.headers:
            del request.headers["prefer"]
        if self.on_request is not None:
            self.on_request()
        return entry

    def answered(self, entry: Exchange, response: httpx.Response) -> bool:
        """Record the answer; True if it is to be lost."""
        entry.status = response.status_code
        entry.response_headers = {k.lower(): v for k, v in response.headers.items()}
        if entry.method == self.drop_first and not self.dropped:
            self.dropped += 1
            return True
        return False

    def requests(self, method: str, path_part: str = "") -> list[Exchange]:
        return [s for s in self.seen if s.method == method and path_part in s.path]


class EdgeTransport(httpx.BaseTransport, Edge):
    def __init__(self, **options: Any) -> None:
        Edge.__init__(self, **options)
        self.inner = httpx.HTTPTransport(verify=TLS)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        entry = self.record(request)
        response = self.inner.handle_request(request)
        if self.answered(entry, response):
            response.read()
            response.close()
            raise httpx.ReadError("connection lost after the server answered")
        return response

    def close(self) -> None:
        self.inner.close()


class AsyncEdgeTransport(httpx.AsyncBaseTransport, Edge):
    def __init__(self, **options: Any) -> None:
        Edge.__init__(self, **options)
        self.inner = httpx.AsyncHTTPTransport(verify=TLS)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        entry = self.record(request)
        response = await self.inner.handle_async_request(request)
        if self.answered(entry, response):
            await response.aread()
            await response.aclose()
            raise httpx.ReadError("connection lost after the server answered")
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


def edge(mode: str, **options: Any) -> EdgeTransport | AsyncEdgeTransport:
    return EdgeTransport(**options) if mode == "sync" else AsyncEdgeTransport(**options)
