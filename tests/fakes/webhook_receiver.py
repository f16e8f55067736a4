"""A webhook consumer on loopback: records every delivery (headers and raw body) and answers
with the statuses it is given, in order (then 200); it counts the requests it is answering
at once, per path and in all, and can hold a path's requests until released."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from tests.fakes.server import serve


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes
    at: float = field(default_factory=time.time)  # when it arrived (for failure messages)


@dataclass
class Receiver:
    url: str = ""
    answers: list[int] = field(default_factory=list)
    received: list[Received] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    open_now: dict[str, int] = field(default_factory=dict)  # path: requests being answered
    most_open: dict[str, int] = field(default_factory=dict)  # path ("" all): the most at once

    def at(self, path: str) -> list[Received]:
        with self.lock:
            return [r for r in self.received if r.path == path]


@contextlib.contextmanager
def receiver(
    answers: list[int] | None = None,
    hold: tuple[threading.Event, threading.Event] | None = None,
    stall: dict[str, threading.Event] | None = None,
) -> Iterator[Receiver]:
    """``hold=(arrived, release)``: the first delivery sets ``arrived`` and is answered only
    once ``release`` is set (a sender killed meanwhile never reads the answer). ``stall``:
    requests to these paths are answered only once their event is set (a slow endpoint; any
    number of them waits, without holding a thread each)."""
    made = Receiver(answers=list(answers or []))

    def count(path: str, by: int) -> None:
        with made.lock:
            for key in (path, ""):
                made.open_now[key] = made.open_now.get(key, 0) + by
                made.most_open[key] = max(made.most_open.get(key, 0), made.open_now[key])

    async def hook(request: Request) -> Any:
        path = request.url.path
        count(path, 1)
        try:
            body = await request.body()
            with made.lock:
                made.received.append(Received(path, dict(request.headers), body))
                status = made.answers.pop(0) if made.answers else 200
                first = len(made.received) == 1
            if hold is not None and first:
                hold[0].set()
                await asyncio.to_thread(hold[1].wait, 60)
            if stall is not None and path in stall:
                while not stall[path].is_set():
                    await asyncio.sleep(0.01)
            return PlainTextResponse(f"answered {status}", status_code=status)
        finally:
            count(path, -1)

    app = Starlette(routes=[Route("/{path:path}", hook, methods=["POST"])])
    with serve(app) as base:
        made.url = base
        yield made
