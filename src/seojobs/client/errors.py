"""One exception tree for every client failure, carrying the problem+json fields."""

from __future__ import annotations

from typing import Any


class SeojobsError(Exception):
    """Base of every error the client raises."""


class TransportError(SeojobsError):
    """The server could not be reached, or the connection broke."""


class APIError(SeojobsError):
    """The server answered with an error (RFC 9457 problem+json when it could).

    ``type``, ``title``, ``status``, ``detail`` and ``instance`` are the RFC 9457 members;
    ``code`` is the short name of the problem (the ``code`` member, else the last segment of
    ``type``); ``errors`` lists field errors; ``extensions`` holds any other members (e.g.
    ``violated_policies``); ``retry_after`` is the Retry-After in seconds, if sent.
    """

    def __init__(
        self,
        status: int,
        title: str,
        detail: str | None = None,
        *,
        type: str = "about:blank",
        instance: str | None = None,
        code: str | None = None,
        errors: list[dict[str, Any]] | None = None,
        extensions: dict[str, Any] | None = None,
        retry_after: float | None = None,
        body: Any = None,
    ) -> None:
        message = f"{status} {title}" + (f": {detail}" if detail else "")
        super().__init__(message)
        self.status = status
        self.title = title
        self.detail = detail
        self.type = type
        self.instance = instance
        self.code = code if code is not None else _code_of(type)
        self.errors = errors or []
        self.extensions = extensions or {}
        self.retry_after = retry_after
        self.body = body


def _code_of(type_uri: str) -> str | None:
    if not type_uri or type_uri == "about:blank":
        return None
    tail = type_uri.rstrip("/").rpartition("/")[2]
    return tail.rpartition("#")[2] or None


class AuthenticationError(APIError):
    """401: the API key is missing or wrong."""


class NotFoundError(APIError):
    """404: no such job, or not yours."""


class ConflictError(APIError):
    """409: e.g. a request with the same Idempotency-Key is still in flight."""


class InvalidRequestError(APIError):
    """400/413/422: the request itself must change; ``errors`` name the fields."""


class RateLimitedError(APIError):
    """429: over the per-user budget; wait ``retry_after`` seconds."""


class ServerError(APIError):
    """5xx: the server failed; usually worth retrying later."""


class WaitTimeout(SeojobsError):
    """A wait ran past its deadline. ``last`` is the last state seen (None if never seen)."""

    def __init__(self, message: str, last: Any = None) -> None:
        super().__init__(message)
        self.last = last


def error_class(status: int) -> type[APIError]:
    if status == 401:
        return AuthenticationError
    if status == 404:
        return NotFoundError
    if status == 409:
        return ConflictError
    if status == 429:
        return RateLimitedError
    if status >= 500:
        return ServerError
    if status in (400, 413, 422):
        return InvalidRequestError
    return APIError
