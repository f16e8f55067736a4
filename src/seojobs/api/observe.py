"""Each request's id and its count (issue 26.3), as pure ASGI middleware.

``X-Request-ID``: a client's (or a proxy's) id is kept when it is a plain token of up to 128
characters (letters, digits, ``.``, ``_``, ``-``, ``:``), else a new one is made; either way it
is echoed on the response and set for the request's log lines (``seojobs.logfmt``), so one
id finds a request in the proxy's, the API's and uvicorn's logs.

Every answered request is counted by method, route template (``/v1/jobs/{job_id}``, never the
raw path; ``unmatched`` when no route took it) and status, and timed to its last byte
(``seojobs.telemetry``).

The same layer puts the request's rate-limit fields on the app's answer (``RateLimit-Policy``,
``RateLimit``, set by ``seojobs.api.deps.current_user``; a layer of their own cost every status
GET one more wrapper of ``send``), and on PostgreSQL keeps each request's database deadline
(``seojobs.api.dbgate``).
"""

from __future__ import annotations

import asyncio
import itertools
import re
import secrets
import time
from typing import TYPE_CHECKING, Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from seojobs import telemetry
from seojobs.logfmt import REQUEST_ID

if TYPE_CHECKING:
    from seojobs.api.dbgate import DatabaseDeadline

HEADER = b"x-request-id"
_TOKEN = re.compile(rb"[A-Za-z0-9._:\-]{1,128}")
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
# A new id: this process's random prefix and a counter (unique without a system call per
# request, as uuid4 would make; ids name requests, they guard nothing).
_PREFIX = secrets.token_hex(8)
_NEXT = itertools.count(1)
# Each (method, route, status)'s counter and histogram: labels() locks and checks every time.
_SERIES: dict[tuple[str, str, int], tuple[Any, Any]] = {}


def request_id(scope: Scope) -> str:
    for name, value in scope.get("headers", ()):
        if name == HEADER:
            if _TOKEN.fullmatch(value):
                return str(value.decode("ascii"))
            break
    return f"{_PREFIX}{next(_NEXT):08x}"


def _series(method: str, route: str, status: int) -> tuple[Any, Any]:
    found = _SERIES.get((method, route, status))
    if found is None:
        found = (
            telemetry.HTTP_REQUESTS.labels(method, route, str(status)),
            telemetry.HTTP_DURATION.labels(method, route),
        )
        _SERIES[(method, route, status)] = found
    return found


class Answer:
    """One request's answer as it goes out: its status, the id added to its headers, and
    for the database deadline (``seojobs.api.dbgate``) whether it has started and whether it
    was given up on (a 503 sent instead; what the handler sends after is dropped)."""

    __slots__ = (
        "abandoned",
        "downstream",
        "header",
        "receive",
        "rescuer",
        "scope",
        "started",
        "status",
    )

    def __init__(self, scope: Scope, receive: Receive, downstream: Send, header: bytes) -> None:
        self.scope = scope
        self.receive = receive
        self.downstream = downstream
        self.header = header
        self.status = 500  # what the server answers if the app raises before answering
        self.started = False
        self.abandoned = False
        self.rescuer: asyncio.Task[None] | None = None

    async def send(self, message: Message) -> None:
        """The app's ``send``: its answer gets the rate-limit fields that
        ``deps.current_user`` left in the request's state (those the answer lacks)."""
        if self.abandoned:
            return
        if message["type"] == "http.response.start":
            extra: dict[str, str] | None = self.scope.get("state", {}).get("rate_limit_headers")
            if extra:
                headers = list(message.get("headers", ()))
                present = {name.lower() for name, _value in headers}
                for name, value in extra.items():
                    key = name.lower().encode()
                    if key not in present:
                        headers.append((key, value.encode()))
                message = {**message, "headers": headers}
        await self.deliver(message)

    async def deliver(self, message: Message) -> None:
        """Send, even once abandoned (the deadline's own 503)."""
        if message["type"] == "http.response.start":
            self.started = True
            self.status = message["status"]
            message = {**message, "headers": [*message.get("headers", ()), (HEADER, self.header)]}
        await self.downstream(message)


class Observe:
    """The request id and count of every request, and with a ``deadline`` (PostgreSQL: see
    ``seojobs.api.dbgate``) its database deadline, in one ASGI layer: the deadline's 503s
    are counted and carry the id."""

    def __init__(self, app: ASGIApp, deadline: DatabaseDeadline | None = None) -> None:
        self.app = app
        self.deadline = deadline

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        rid = request_id(scope)
        token = REQUEST_ID.set(rid)
        started = time.perf_counter()
        answer = Answer(scope, receive, send, rid.encode("ascii"))
        deadline = self.deadline
        try:
            if deadline is None or scope["path"] in deadline.exempt:
                await self.app(scope, receive, answer.send)
            else:
                await deadline.watch(self.app, answer)
        finally:
            route = getattr(scope.get("route"), "path", None) or "unmatched"
            method = scope["method"] if scope["method"] in _METHODS else "other"
            count, duration = _series(method, route, answer.status)
            count.inc()
            duration.observe(time.perf_counter() - started)
            REQUEST_ID.reset(token)
