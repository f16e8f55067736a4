"""aiohttp, our HTTP stack: shared session settings, httpx's exception tree, an httpx transport.

The fetcher (page GETs) and ``providers.base.ProviderClient`` (Serper) use aiohttp sessions
directly, built by :func:`client_session`; their aiohttp errors are raised as httpx's by
:func:`translate`, so callers that catch httpx errors (and look for an ``ssl`` error down the
cause chain) need no change. The other provider adapters are written against httpx
(requests, responses, headers, test transports): :class:`AiohttpTransport` keeps every httpx
object and swaps only the layer that moves bytes (httpcore over anyio cost 1-2 ms of CPU per
request on loopback in ``bench/check.py``; this transport 0.36 ms; aiohttp alone 0.17 ms).

Under httpx, what stays httpx's: redirects (never followed here), ``Content-Encoding``
decoding (aiohttp hands over the raw bytes), cookies, auth, timeouts' meaning. Exceptions
that are not aiohttp's (the SSRF guard's refusals) pass through untouched.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator, Callable
from typing import NoReturn

import aiohttp
import httpx
from yarl import URL

CHUNK = 64 * 1024
MAX_HEADER_LINE = 64 * 1024


def _timeout(request: httpx.Request) -> aiohttp.ClientTimeout:
    timeouts = request.extensions.get("timeout") or {}
    pool, connect = timeouts.get("pool"), timeouts.get("connect")
    return aiohttp.ClientTimeout(
        total=None,
        # aiohttp's ``connect`` covers waiting for a pooled connection and opening a new one.
        connect=None if pool is None or connect is None else pool + connect,
        sock_connect=connect,
        sock_read=timeouts.get("read"),
    )


def translate(exc: BaseException, request: httpx.Request) -> BaseException:
    """The httpx exception for an aiohttp one (anything else is returned as it is)."""
    mapped: type[httpx.TransportError]
    cause: BaseException = exc
    if isinstance(exc, aiohttp.ConnectionTimeoutError):
        mapped = httpx.ConnectTimeout
    elif isinstance(exc, aiohttp.ServerTimeoutError | asyncio.TimeoutError):
        mapped = httpx.ReadTimeout
    elif isinstance(exc, aiohttp.ClientConnectorCertificateError):
        mapped, cause = httpx.ConnectError, exc.certificate_error
    elif isinstance(exc, aiohttp.ClientConnectorError):
        mapped, cause = httpx.ConnectError, exc.os_error
        if request.url.scheme == "https" and isinstance(cause, ConnectionResetError):
            # The TCP connection was up and the server hung up during the TLS handshake
            # (asyncio reports that as a reset; httpcore as the SSL error it is).
            cause = ssl.SSLEOFError(8, f"connection closed during the TLS handshake: {cause!r}")
    elif isinstance(exc, aiohttp.NonHttpUrlClientError):
        mapped = httpx.UnsupportedProtocol
    elif isinstance(exc, aiohttp.InvalidURL):
        return httpx.InvalidURL(str(exc))
    elif isinstance(
        exc,
        aiohttp.ServerDisconnectedError | aiohttp.ClientPayloadError | aiohttp.ClientResponseError,
    ):
        mapped = httpx.RemoteProtocolError
    elif isinstance(exc, aiohttp.ClientOSError):
        mapped, cause = httpx.ReadError, exc
    elif isinstance(exc, aiohttp.ClientError):
        mapped = httpx.TransportError
    else:
        return exc
    error = mapped(str(exc) or type(exc).__name__, request=request)
    error.__cause__ = cause
    return error


def _reraise(exc: Exception, request: httpx.Request) -> NoReturn:
    error = translate(exc, request)
    if error is exc:
        raise exc
    raise error from error.__cause__  # the cause translate chose (e.g. the ssl error)


class _Body(httpx.AsyncByteStream):
    """The response body as aiohttp reads it, released back to the pool when closed."""

    def __init__(self, response: aiohttp.ClientResponse, request: httpx.Request) -> None:
        self._response = response
        self._request = request

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._response.content.iter_chunked(CHUNK):
                yield chunk
        except Exception as exc:
            _reraise(exc, self._request)

    async def aclose(self) -> None:
        # A fully read body returns the connection to the pool; a partly read one closes it.
        self._response.release()


def client_timeout(connect: float, read: float) -> aiohttp.ClientTimeout:
    """What ``httpx.Timeout(read, connect=connect)`` means, in aiohttp's terms."""
    # aiohttp's ``connect`` covers waiting for a pooled connection and opening a new one.
    return aiohttp.ClientTimeout(
        total=None, connect=read + connect, sock_connect=connect, sock_read=read
    )


def client_session(
    connector: aiohttp.BaseConnector,
    *,
    auto_decompress: bool,
    cookie_jar: aiohttp.abc.AbstractCookieJar | None = None,
    headers: dict[str, str] | None = None,
    timeout: aiohttp.ClientTimeout | None = None,
    trust_env: bool = False,
) -> aiohttp.ClientSession:
    """An aiohttp session as all of ours are: long header lines, no automatic headers, and
    environment proxies only when asked (never for pages: the guard checks the peer)."""
    return aiohttp.ClientSession(
        connector=connector,
        auto_decompress=auto_decompress,
        trust_env=trust_env,
        cookie_jar=aiohttp.DummyCookieJar() if cookie_jar is None else cookie_jar,
        headers=headers,
        skip_auto_headers=("User-Agent", "Accept", "Accept-Encoding"),
        timeout=timeout or aiohttp.client.DEFAULT_TIMEOUT,
        # aiohttp's default is 8 KiB per header line; real sites send longer ones
        # (cookies, CSP). 64 KiB, as generous as browsers.
        max_line_size=MAX_HEADER_LINE,
        max_field_size=MAX_HEADER_LINE,
    )


class AiohttpTransport(httpx.AsyncBaseTransport):
    """An httpx transport over one ``aiohttp.ClientSession``, opened on first use.

    ``connector`` builds the session's connector (the fetcher's pins every connection to
    validated addresses); by default a plain ``TCPConnector`` with ``limit`` connections.
    Environment proxies are never used.
    """

    def __init__(
        self,
        *,
        connector: Callable[[], aiohttp.BaseConnector] | None = None,
        limit: int = 100,
    ) -> None:
        self._connector = connector or (lambda: aiohttp.TCPConnector(limit=limit))
        self._session: aiohttp.ClientSession | None = None

    def _open(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            # httpx decodes Content-Encoding itself and keeps the cookies.
            self._session = client_session(self._connector(), auto_decompress=False)
        return self._session

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        session = self._open()
        body = await request.aread()
        headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in request.headers.raw]
        try:
            response = await session.request(
                request.method,
                URL(str(request.url), encoded=True),  # as httpx encoded it, not re-encoded
                headers=headers,
                data=body or None,
                allow_redirects=False,
                timeout=_timeout(request),
            )
        except Exception as exc:
            _reraise(exc, request)
        version = response.version
        return httpx.Response(
            response.status,
            headers=list(response.raw_headers),
            stream=_Body(response, request),
            extensions={
                "http_version": (
                    f"HTTP/{version.major}.{version.minor}" if version else "HTTP/1.1"
                ).encode(),
                "reason_phrase": (response.reason or "").encode("latin-1", "replace"),
            },
        )

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
