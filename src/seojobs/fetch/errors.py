"""One exception tree for the fetcher.

Each error carries the ``kind`` reported as ``FetchResult.error_kind``; :meth:`Fetcher.fetch`
never raises these, it returns them as results so a job item can store the reason.
"""

from __future__ import annotations

from typing import ClassVar

# The error kinds a FetchResult may carry (stable strings: reports store them).
SSRF_REFUSED = "ssrf_refused"
DNS_ERROR = "dns_error"
CONNECT_ERROR = "connect_error"
NETWORK_ERROR = "network_error"  # the connection broke after it was opened
TIMEOUT = "timeout"
TLS_ERROR = "tls_error"
PROTOCOL_ERROR = "protocol_error"
INVALID_URL = "invalid_url"
UNSUPPORTED_SCHEME = "unsupported_scheme"
REDIRECT_LOOP = "redirect_loop"
TOO_MANY_REDIRECTS = "too_many_redirects"
FETCH_ERROR = "fetch_error"  # anything else the HTTP stack raised

ERROR_KINDS = frozenset(
    {
        SSRF_REFUSED,
        DNS_ERROR,
        CONNECT_ERROR,
        NETWORK_ERROR,
        TIMEOUT,
        TLS_ERROR,
        PROTOCOL_ERROR,
        INVALID_URL,
        UNSUPPORTED_SCHEME,
        REDIRECT_LOOP,
        TOO_MANY_REDIRECTS,
        FETCH_ERROR,
    }
)


class FetchError(Exception):
    """A fetch could not produce a usable response."""

    default_kind: ClassVar[str] = FETCH_ERROR

    def __init__(self, message: str, *, kind: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        # Transport failures are translated into one class with a per-instance kind.
        self.kind: str = kind or self.default_kind


class SSRFRefused(FetchError):
    """The target (or an address it resolves to) is not allowed by the network guard."""

    default_kind = SSRF_REFUSED


class DNSError(FetchError):
    default_kind = DNS_ERROR


class InvalidURL(FetchError):
    default_kind = INVALID_URL


class UnsupportedScheme(FetchError):
    default_kind = UNSUPPORTED_SCHEME


class RedirectLoop(FetchError):
    default_kind = REDIRECT_LOOP


class TooManyRedirects(FetchError):
    default_kind = TOO_MANY_REDIRECTS
