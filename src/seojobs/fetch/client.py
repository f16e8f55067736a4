"""The fetcher: one GET per hop, redirects followed by hand, bodies capped, hosts spared.

Every hop goes through the same steps, so a redirect cannot skip any of them: parse the URL,
resolve and validate the host (SSRF guard), wait for a politeness slot, send with the
validated addresses pinned, read at most ``fetch_max_bytes``.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING

import httpx

from seojobs.fetch import errors
from seojobs.fetch.diagnostics import Diagnostics, inspect
from seojobs.fetch.errors import FetchError, InvalidURL, RedirectLoop, TooManyRedirects
from seojobs.fetch.guard import AddressGuard, GuardPolicy, Resolver
from seojobs.fetch.politeness import HostGate
from seojobs.fetch.result import FetchResult, RedirectHop
from seojobs.fetch.robots import RobotsCache, RobotsVerdict
from seojobs.fetch.transport import pinned, pinned_transport
from seojobs.fetch.urls import URL, join_url, normalize_url, parse_url

if TYPE_CHECKING:
    from seojobs.settings import Settings

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"


@dataclass
class _Response:
    status: int
    headers: httpx.Headers
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
            headers=response.headers if response else httpx.Headers(),
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


def redirect_location(status: int, headers: httpx.Headers) -> str | None:
    """The Location of a redirect response (``None``: a final response, even if 3xx)."""
    location = headers.get("location", "").strip()
    return location if status in REDIRECT_STATUSES and location else None


def _join(base: URL, location: str) -> URL:
    try:
        joined = join_url(base, location)
    except (httpx.InvalidURL, ValueError) as exc:
        raise InvalidURL(f"invalid redirect Location {location!r}: {exc}") from exc
    return parse_url(joined)


async def _read_capped(response: httpx.Response, limit: int) -> tuple[bytes, bool]:
    """Read at most ``limit`` bytes of the (decoded) body; stop as soon as it is exceeded."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        room = limit - size
        if len(chunk) > room:
            chunks.append(chunk[:room])
            return b"".join(chunks), True
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks), False


class Fetcher:
    """The one HTTP client for page work. Use as ``async with Fetcher(settings) as f``.

    ``resolver`` replaces DNS (tests map names to loopback); ``transport`` replaces the network
    edge entirely (tests that must prove nothing is sent). With a custom transport the guard
    still runs before it, but connections are no longer pinned, so production passes neither.
    ``hop_timeout`` bounds one hop end to end (a server that trickles bytes slower than the
    read timeout would otherwise hold a worker forever).
    """

    def __init__(
        self,
        settings: Settings,
        *,
        resolver: Resolver | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        hop_timeout: float | None = None,
    ) -> None:
        self.user_agent = settings.user_agent
        self.max_bytes = settings.fetch_max_bytes
        self.max_redirects = settings.fetch_max_redirects
        self.guard = AddressGuard(GuardPolicy.from_settings(settings), resolver)
        self.gate = HostGate(settings.fetch_host_concurrency, settings.fetch_host_delay)
        self.hop_timeout = (
            hop_timeout or settings.fetch_connect_timeout + 2 * settings.fetch_timeout
        )
        if transport is None:
            transport = pinned_transport(self.guard, limit=100)
        self._client = httpx.AsyncClient(
            transport=transport,
            timeout=httpx.Timeout(settings.fetch_timeout, connect=settings.fetch_connect_timeout),
            follow_redirects=False,
            trust_env=False,
            headers={"User-Agent": settings.user_agent, "Accept": _ACCEPT},
        )
        self.robots = RobotsCache(self)  # one robots.txt cache per fetcher (per job)

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
        await self._client.aclose()

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
            progress.chain.append(RedirectHop(str(target), response.status, location))
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
        request = self._client.build_request("GET", target.text)
        response = await self._client.send(request, stream=True)
        try:
            result = _Response(response.status_code, response.headers)
            if redirect_location(response.status_code, response.headers) is not None:
                return result  # a redirect's body is never used; closing drops it
            result.body, result.truncated = await _read_capped(response, self.max_bytes)
            return result
        finally:
            await response.aclose()
