"""A webhook consumer on loopback: records every delivery (headers and raw body) and answers
with the statuses it is given, in order (then 200)."""

from __future__ import annotations

import asyncio
import contextlib
import threading
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


@dataclass
class Receiver:
    url: str = ""
    answers: list[int] = field(default_factory=list)
    received: list[Received] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def at(self, path: str) -> list[Received]:
        with self.lock:
            return [r for r in self.received if r.path == path]


@contextlib.contextmanager
def receiver(
    answers: list[int] | None = None,
    hold: tuple[threading.Event, threading.Event] | None = None,
) -> Iterator[Receiver]:
    """``hold=(arrived, release)``: the first delivery sets ``arrived`` and is answered only
    once ``release`` is set (a sender killed meanwhile never reads the answer)."""
    made = Receiver(answers=list(answers or []))

    async def hook(request: Request) -> Any:
        body = await request.body()
        with made.lock:
            made.received.append(Received(request.url.path, dict(request.headers), body))
            status = made.answers.pop(0) if made.answers else 200
            first = len(made.received) == 1
        if hold is not None and first:
            hold[0].set()
            await asyncio.to_thread(hold[1].wait, 60)
        return PlainTextResponse(f"answered {status}", status_code=status)

    app = Starlette(routes=[Route("/{path:path}", hook, methods=["POST"])])
    with serve(app) as base:
        made.url = base
        yield made
