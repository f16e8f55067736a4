"""The fetcher: one GET per hop, redirects followed by hand, bodies capped, hosts spared.

Every hop goes through the same steps, so a redirect cannot skip any of them: parse the URL,
resolve and validate the host (SSRF guard), wait for a politeness slot, send with the
validated addresses pinned, read at most ``fetch_max_bytes``.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING

import aiohttp
import httpx
from multidict import CIMultiDict, CIMultiDictProxy
from yarl import URL as YarlURL

from seojobs.fetch import aio, errors
from seojobs.fetch.diagnostics import Diagnostics, inspect
from seojobs.fetch.errors import FetchError, InvalidURL, RedirectLoop, TooManyRedirects
from seojobs.fetch.guard import AddressGuard, GuardPolicy, Resolver
from seojobs.fetch.politeness import HostGate
from seojobs.fetch.result import FetchResult, Headers, RedirectHop, no_headers
from seojobs.fetch.robots import RobotsCache, RobotsVerdict
from seojobs.fetch.transport import PinnedConnector, pinned
from seojobs.fetch.urls import URL, join_url, normalize_url, parse_url, without_userinfo

if TYPE_CHECKING:
    from seojobs.settings import Settings

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
# What httpx offered (and decoded) without the optional brotli/zstandard packages; aiohttp
# decodes the same two.
_ACCEPT_ENCODING = "gzip, deflate"
CHUNK = 64 * 1024


@dataclass
class _Response:
    status: int
    headers: Headers
    body: bytes = b""
    truncated: bool = False


@dataclass
class _Progress:
    """What is known so far; turned into a FetchResult however the fetch ends."""

    requested: str
    current: str
    response: _Response | None = None
    chain: list[RedirectHop] = field(default_factory=list)
    error: FetchError | None = None

    def result(self, elapsed: float) -> FetchResult:
        response = self.response
        return FetchResult(
            url=self.requested,
            final_url=self.current,
            status=response.status if response else None,
            headers=response.headers if response else no_headers(),
            redirect_chain=tuple(self.chain),
            body=response.body if response else b"",
            truncated=response.truncated if response else False,
            elapsed=elapsed,
            error_kind=self.error.kind if self.error else None,
            error=self.error.message if self.error else None,
        )


def _is_tls_failure(exc: BaseException) -> bool:
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ssl.SSLError | ssl.CertificateError):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def translate(exc: httpx.HTTPError) -> FetchError:
    """Map httpx's exception tree onto our error kinds."""
    if isinstance(exc, httpx.TimeoutException):
        kind = errors.TIMEOUT
    elif isinstance(exc, httpx.ConnectError):
        kind = errors.TLS_ERROR if _is_tls_failure(exc) else errors.CONNECT_ERROR
    elif isinstance(exc, httpx.ProtocolError | httpx.DecodingError):
        kind = errors.PROTOCOL_ERROR
    elif isinstance(exc, httpx.NetworkError):
        kind = errors.TLS_ERROR if _is_tls_failure(exc) else errors.NETWORK_ERROR
    elif isinstance(exc, httpx.UnsupportedProtocol):
        kind = errors.UNSUPPORTED_SCHEME
    else:
        kind = errors.FETCH_ERROR
    return FetchError(f"{type(exc).__name__}: {_detail(exc)}", kind=kind)


def _detail(exc: BaseException) -> str:
    """The first non-empty message down the cause chain (httpx often wraps an empty one)."""
    seen: BaseException | None = exc
    while seen is not None:
        if str(seen):
            return str(seen)
        seen = seen.__cause__ or seen.__context__
    return "no detail"


def redirect_location(status: int, headers: Headers) -> str | None:
    """The Location of a redirect response (``None``: a final response, even if 3xx)."""
    location = headers.get("location", "").strip()
    return location if status in REDIRECT_STATUSES and location else None


def _join(base: URL, location: str) -> URL:
    try:
        joined = join_url(base, location)
    except (httpx.InvalidURL, ValueError) as exc:
        shown = without_userinfo(location)
        raise InvalidURL(f"invalid redirect Location {shown!r}: {exc}") from exc
    return parse_url(joined)


async def _read_capped(content: aiohttp.StreamReader, limit: int) -> tuple[bytes, bool]:
    """Read at most ``limit`` bytes of the (decoded) body; stop as soon as it is exceeded."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in content.iter_chunked(CHUNK):
        room = limit - size
        if len(chunk) > room:
            chunks.append(chunk[:room])
            return b"".join(chunks), True
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks), False


def _decoded_headers(response: aiohttp.ClientResponse) -> Headers:
    """The response headers, decoded as httpx decoded them.

    aiohttp decodes values as UTF-8 with surrogate escapes, so a value that is not UTF-8 would
    keep lone surrogates (which JSON columns refuse). httpx read the whole header block as
    ASCII, else UTF-8, else Latin-1: the same here, when some value is not ASCII.
    """
    headers = response.headers
    if all(value.isascii() for value in headers.values()):
        return headers
    raw = response.raw_headers
    try:
        for name, value in raw:
            name.decode(), value.decode()
        encoding = "utf-8"
    except UnicodeDecodeError:
        encoding = "iso-8859-1"
    return CIMultiDictProxy(CIMultiDict((n.decode(encoding), v.decode(encoding)) for n, v in raw))


class Fetcher:
    """The one HTTP client for page work. Use as ``async with Fetcher(settings) as f``.

    Pages are fetched with aiohttp directly (httpx's client layer cost more CPU per page than
    all of our own work); errors are mapped through httpx's exception tree to our kinds, as
    before. ``resolver`` replaces DNS (tests map names to loopback); ``connector`` builds the
    network edge (tests that must prove nothing is sent, or that answer in-process). With a
    custom connector the guard still runs before it, but connections are no longer pinned,
    so production passes neither. ``hop_timeout`` bounds one hop end to end (a server that
    trickles bytes slower than the read timeout would otherwise hold a worker forever).
    """

    def __init__(
        self,
        settings: Settings,
        *,
        resolver: Resolver | None = None,
        connector: Callable[[], aiohttp.BaseConnector] | None = None,
        hop_timeout: float | None = None,
    ) -> None:
        self.user_agent = settings.user_agent
        self.max_bytes = settings.fetch_max_bytes
        self.max_redirects = settings.fetch_max_redirects
        self.hop_timeout = (
            hop_timeout or settings.fetch_connect_timeout + 2 * settings.fetch_timeout
        )
        self.guard = AddressGuard(
            GuardPolicy.from_settings(settings), resolver, lookup_timeout=self.hop_timeout
        )
        self.gate = HostGate(settings.fetch_host_concurrency, settings.fetch_host_delay)
        guard = self.guard
        self._connector = connector or (lambda: PinnedConnector(guard, limit=100))
        self._timeout = aio.client_timeout(settings.fetch_connect_timeout, settings.fetch_timeout)
        self._headers = {
            "User-Agent": settings.user_agent,
            "Accept": _ACCEPT,
            "Accept-Encoding": _ACCEPT_ENCODING,
        }
        self._session: aiohttp.ClientSession | None = None
        self.robots = RobotsCache(self)  # one robots.txt cache per fetcher (per job)

    def _open(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aio.client_session(
                self._connector(),
                auto_decompress=True,
                # Cookies a site sets are sent back within this fetcher (one job), as
                # httpx's client did; unsafe: also for IP-address hosts.
                cookie_jar=aiohttp.CookieJar(unsafe=True),
                headers=self._headers,
                timeout=self._timeout,
            )
        return self._session

    async def __aenter__(self) -> Fetcher:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def robots_verdict(self, url: str) -> RobotsVerdict:
        """robots.txt's answer for ``url`` (our user agent and Googlebot), cached per origin."""
        return await self.robots.verdict(url)

    async def inspect(self, url: str) -> Diagnostics:
        """Indexability diagnostics for ``url``: robots.txt, then the page if we may fetch it."""
        return await inspect(url, self, self.robots)

    async def fetch(self, url: str) -> FetchResult:
        """GET ``url`` following redirects; never raises for a network or policy failure."""
        started = time.monotonic()
        progress = _Progress(requested=url, current=url)
        try:
            await self._follow(parse_url(url), progress)
        except FetchError as exc:
            progress.error = exc
        return progress.result(time.monotonic() - started)

    async def _follow(self, target: URL, progress: _Progress) -> None:
        seen = {normalize_url(target)}
        while True:
            progress.current, progress.response = str(target), None
            response = await self._hop(target)
            progress.response = response
            location = redirect_location(response.status, response.headers)
            if location is None:
                return
            # The hop records Location as sent, less any credentials (never stored or shown).
            hop = RedirectHop(str(target), response.status, without_userinfo(location))
            progress.chain.append(hop)
            target = _join(target, location)
            key = normalize_url(target)
            if key in seen:
                raise RedirectLoop(f"redirect loop: {target} was already visited")
            if len(progress.chain) > self.max_redirects:
                raise TooManyRedirects(f"more than {self.max_redirects} redirects")
            seen.add(key)

    async def _hop(self, target: URL) -> _Response:
        host = target.host
        addresses = await self.guard.resolve(host)  # refused here: nothing was sent
        async with self.gate.slot(host):
            with pinned(host, addresses):
                try:
                    async with asyncio.timeout(self.hop_timeout):
                        return await self._exchange(target)
                except TimeoutError as exc:
                    raise FetchError(
                        f"no complete response within {self.hop_timeout:g}s", kind=errors.TIMEOUT
                    ) from exc
                except httpx.HTTPError as exc:
                    raise translate(exc) from exc

    async def _exchange(self, target: URL) -> _Response:
        try:
            async with self._open().get(
                YarlURL(target.text, encoded=True), allow_redirects=False
            ) as response:
                result = _Response(response.status, _decoded_headers(response))
                if redirect_location(response.status, result.headers) is not None:
                    return result  # a redirect's body is never used; closing drops it
                result.body, result.truncated = await _read_capped(response.content, self.max_bytes)
                return result
        except Exception as exc:
            error = aio.translate(exc, httpx.Request("GET", target.text))
            if error is exc:
                raise
            raise error from error.__cause__
