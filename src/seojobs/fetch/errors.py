"""One exception tree for outbound HTTP, and the one mapping of aiohttp's errors onto it.

Each error carries the ``kind`` reported as ``FetchResult.error_kind``; :meth:`Fetcher.fetch`
never raises these, it returns them as results so a job item can store the reason. Provider
adapters get the same errors from :class:`seojobs.fetch.http.HttpClient` and turn them into
``ProviderError`` (``seojobs.providers.base``). :func:`from_transport` is the only place that
knows aiohttp's and asyncio's exceptions.
"""

from __future__ import annotations

import asyncio
import functools
import ssl
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
TOO_LARGE = "too_large"  # an answer read whole (an API's) was over the size cap
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
        TOO_LARGE,
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


class UnreadableBody(FetchError):
    """The answer came, but its body cannot be used: undecodable, or over the size cap.

    Not a transport failure, so not worth retrying (a provider adapter reports a malformed
    answer); a page fetch reports its kind like any other error.
    """

    default_kind = PROTOCOL_ERROR


def _chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and its causes (or contexts), outermost first."""
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def _detail(exc: BaseException) -> str:
    """The first non-empty message down the cause chain (wrappers often carry none)."""
    return next((str(e) for e in _chain(exc) if str(e)), "no detail")


def _is_tls_failure(exc: BaseException, https: bool) -> bool:
    import aiohttp

    if isinstance(exc, aiohttp.ClientSSLError):
        return True
    if any(isinstance(e, ssl.SSLError | ssl.CertificateError) for e in _chain(exc)):
        return True
    # The TCP connection was up and the server hung up during the TLS handshake: asyncio
    # reports that as a reset of the connection attempt.
    return (
        https
        and isinstance(exc, aiohttp.ClientConnectorError)
        and isinstance(exc.os_error, ConnectionResetError)
    )


def _is_undecodable(exc: BaseException) -> bool:
    """A body its Content-Encoding cannot decode (or an encoding aiohttp cannot decode)."""
    from aiohttp import http_exceptions

    return any(
        isinstance(e, http_exceptions.ContentEncodingError)
        or "can not decode content-encoding" in str(e).lower()
        for e in _chain(exc)
    )


@functools.cache
def _kinds() -> tuple[tuple[tuple[type[BaseException], ...], str], ...]:
    """aiohttp's and asyncio's exceptions, most specific first (a DNS failure is a connector
    error, a read timeout is a connection error). Built at the first failure to map: a process
    that only declares errors (the API's, a command's) never loads aiohttp."""
    import aiohttp

    return (
        ((asyncio.TimeoutError,), TIMEOUT),  # aiohttp's connect and read timeouts too
        ((aiohttp.ClientConnectorDNSError,), DNS_ERROR),
        # Nothing listening, unreachable, or a proxy that refused the tunnel.
        ((aiohttp.ClientConnectorError, aiohttp.ClientHttpProxyError), CONNECT_ERROR),
        ((aiohttp.NonHttpUrlClientError,), UNSUPPORTED_SCHEME),
        ((aiohttp.InvalidURL,), INVALID_URL),
        # No complete, well-formed answer: cut short, unparsable, or the server hung up.
        (
            (
                aiohttp.ClientPayloadError,
                aiohttp.ClientResponseError,
                aiohttp.ServerDisconnectedError,
            ),
            PROTOCOL_ERROR,
        ),
        # The connection broke after it was opened.
        ((aiohttp.ClientOSError, aiohttp.ClientConnectionResetError), NETWORK_ERROR),
        ((aiohttp.ClientError,), FETCH_ERROR),
    )


def _kind(exc: BaseException, https: bool) -> str | None:
    """Our kind for an aiohttp/asyncio exception; ``None`` for anything else."""
    if _is_tls_failure(exc, https):
        return TLS_ERROR
    return next((kind for types, kind in _kinds() if isinstance(exc, types)), None)


def from_transport(exc: BaseException, *, https: bool = False) -> FetchError | None:
    """Our error for what aiohttp or asyncio raised while sending or reading (``https``: the
    request was for an https URL). ``None``: not an HTTP failure; let it propagate."""
    if isinstance(exc, FetchError):
        return exc  # e.g. the guard refusing from inside the connector
    kind = _kind(exc, https)
    if kind is None:
        return None
    message = f"{type(exc).__name__}: {_detail(exc)}"
    if kind == PROTOCOL_ERROR and _is_undecodable(exc):
        return UnreadableBody(message)
    return FetchError(message, kind=kind)
