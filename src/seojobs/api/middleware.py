"""Pure ASGI middleware (no BaseHTTPMiddleware: it buffers and costs throughput)."""

from __future__ import annotations

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from seojobs.api.problems import problem


class BodyLimit:
    """Refuse request bodies over ``limit`` bytes with 413, declared or streamed."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", []):
            if name == b"content-length" and value.isdigit() and int(value) > self.limit:
                await self._refuse(scope, receive, send)
                return
        seen = 0

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise _TooLarge(self.limit)
            return message

        try:
            await self.app(scope, counted, send)
        except _TooLarge:
            await self._refuse(scope, receive, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = problem(
            413,
            "Request body too large",
            f"the request body is limited to {self.limit} bytes",
            code="body_too_large",
        )
        await response(scope, receive, send)


class _TooLarge(HTTPException):
    # An HTTPException, so FastAPI's body parsing lets it through (a plain exception would be
    # reported as a 400 "error parsing the body") and the problem handler renders the 413.
    def __init__(self, limit: int) -> None:
        super().__init__(413, f"the request body is limited to {limit} bytes")
