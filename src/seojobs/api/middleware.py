"""Pure ASGI middleware (no BaseHTTPMiddleware: it buffers and costs throughput)."""

from __future__ import annotations

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from seojobs.api.problems import problem


class RateLimitHeaders:
    """Copy the rate-limit fields computed during the request onto the response."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                extra: dict[str, str] | None = scope.get("state", {}).get("rate_limit_headers")
                if extra:
                    headers = list(message.get("headers", []))
                    present = {k.lower() for k, _v in headers}
                    for name, value in extra.items():
                        if name.lower().encode() not in present:
                            headers.append((name.lower().encode(), value.encode()))
                    message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_headers)


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
