"""The fetcher: one GET per hop, redirects followed by hand, bodies capped, hosts spared.

Every hop goes through the same steps, so a redirect cannot skip any of them: parse the URL,
resolve and validate the host (SSRF guard), wait for a politeness slot, send with the
validated addresses pinned, read at most ``fetch_max_bytes``.
"""

from __future__ import annotations

import functools
import ssl
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from yarl import URL as YarlURL

from seojobs.fetch.closing import Closing
from seojobs.fetch.diagnostics import Diagnostics, fetch_checked, inspect
from seojobs.fetch.errors import FetchError, InvalidURL, RedirectLoop, TooManyRedirects
from seojobs.fetch.guard import AddressGuard, GuardPolicy, Resolver
from seojobs.fetch.http import ACCEPT_ENCODING, Connector, HttpClient, Response
from seojobs.fetch.politeness import HostGate
from seojobs.fetch.result import FetchResult, Headers, RedirectHop, no_headers
from seojobs.fetch.robots import RobotsCache, RobotsVerdict
from seojobs.fetch.transport import PinnedConnector, pinned
from seojobs.fetch.urls import URL, join_url, normalize_url, parse_url, without_userinfo

if TYPE_CHECKING:
    from seojobs.settings import Settings

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"


@functools.cache
def _trusting(ca_file: str) -> ssl.SSLContext:
    """A verifying TLS context that trusts ``ca_file``'s CAs besides the system's; made once
    per file and process (loading the system's CAs is slow blocking work)."""
    context = ssl.create_default_context()
    context.load_verify_locations(cafile=ca_file)
    return context


@dataclass
class _Progress:
    """What is known so far; turned into a FetchResult however the fetch ends."""

    requested: str
    current: str
    response: Response | None = None
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


def redirect_location(status: int, headers: Headers) -> str | None:
    """The Location of a redirect response (``None``: a final response, even if 3xx)."""
    location = headers.get("location", "").strip()
    return location if status in REDIRECT_STATUSES and location else None


def _final(status: int, headers: Headers) -> bool:
    """Whether an answer is the fetch's last (its body is read) rather than a redirect."""
    return redirect_location(status, headers) is None


def _join(base: URL, location: str) -> URL:
    try:
        joined = join_url(base, location)
    except ValueError as exc:
        shown = without_userinfo(location)
        raise InvalidURL(f"invalid redirect Location {shown!r}: {exc}") from exc
    return parse_url(joined)


class Fetcher(Closing):
    """The one HTTP client for page work. Use as ``async with Fetcher(settings) as f``.

    Each hop is one GET of the shared :class:`~seojobs.fetch.http.HttpClient`, without any
    proxy (the guard must see the address connected to), with cookies kept for the fetcher's
    life (one job). ``resolver`` replaces DNS (tests map names to loopback); ``connector``
    builds the network edge (tests that must prove nothing is sent, or that answer
    in-process). With a custom connector the guard still runs before it, but connections are
    no longer pinned, so production passes neither. ``hop_timeout`` bounds one hop end to end
    (a server that trickles bytes slower than the read timeout would otherwise hold a worker
    forever).
    """

    def __init__(
        self,
        settings: Settings,
        *,
        resolver: Resolver | None = None,
        connector: Connector | None = None,
        hop_timeout: float | None = None,
    ) -> None:
        self.user_agent = settings.user_agent
        self.max_bytes = settings.fetch_max_bytes
        self.max_redirects = settings.fetch_max_redirects
        self.hop_timeout = (
            hop_timeout or settings.fetch_connect_timeout + 2 * settings.fetch_timeout
        )
        self.guard = AddressGuard(
            GuardPolicy.from_settings(settings),
            resolver,
            lookup_timeout=self.hop_timeout,
            dns_ttl=settings.fetch_dns_ttl,
        )
        self.gate = HostGate(settings.fetch_host_concurrency, settings.fetch_host_delay)
        guard = self.guard
        tls = _trusting(settings.fetch_ca_file) if settings.fetch_ca_file else None
        self.http = HttpClient(
            headers={
                "User-Agent": settings.user_agent,
                "Accept": _ACCEPT,
                "Accept-Encoding": ACCEPT_ENCODING,
            },
            connect_timeout=settings.fetch_connect_timeout,
            read_timeout=settings.fetch_timeout,
            deadline=self.hop_timeout,
            max_bytes=self.max_bytes,
            connector=connector or (lambda: PinnedConnector(guard, limit=100, tls=tls)),
            cookies=True,
            env_proxies=False,  # never: see seojobs.fetch.http
        )
        self.robots = RobotsCache(self)  # one robots.txt cache per fetcher (per job)

    async def aclose(self) -> None:
        await self.http.aclose()

    async def robots_verdict(self, url: str) -> RobotsVerdict:
        """robots.txt's answer for ``url`` (our user agent and Googlebot), cached per origin."""
        return await self.robots.verdict(url)

    async def inspect(self, url: str) -> Diagnostics:
        """Indexability diagnostics for ``url``: robots.txt, then the page if we may fetch it."""
        return await inspect(url, self, self.robots)

    async def fetch_checked(self, url: str) -> tuple[FetchResult, RobotsVerdict | None]:
        """robots.txt, then ``url`` if our user agent may fetch it: the page to read and what
        :func:`~seojobs.fetch.diagnostics.diagnose` needs (see ``fetch_checked`` there)."""
        return await fetch_checked(url, self, self.robots)

    async def fetch(
        self, url: str, *, method: str = "GET", max_bytes: int | None = None
    ) -> FetchResult:
        """GET ``url`` following redirects; never raises for a network or policy failure.
        ``method="HEAD"`` asks for the status alone (a link check). ``max_bytes``: this
        fetch's body cap instead of ``fetch_max_bytes`` (a sitemap's 50 MB)."""
        started = time.monotonic()
        progress = _Progress(requested=url, current=url)
        try:
            await self._follow(parse_url(url), progress, method, max_bytes)
        except FetchError as exc:
            progress.error = exc
        return progress.result(time.monotonic() - started)

    async def _follow(
        self, target: URL, progress: _Progress, method: str, max_bytes: int | None
    ) -> None:
        seen = {normalize_url(target)}
        while True:
            progress.current, progress.response = str(target), None
            response = await self._hop(target, method, max_bytes)
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

    async def _hop(self, target: URL, method: str, max_bytes: int | None) -> Response:
        host = target.host
        addresses = await self.guard.resolve(host)  # refused here: nothing was sent
        async with self.gate.slot(host):
            with pinned(host, addresses):
                return await self.http.request(
                    method,
                    # As parse_url spelled it, not re-encoded by yarl.
                    YarlURL(target.text, encoded=True),
                    truncate=True,
                    read_body=_final,
                    max_bytes=max_bytes,  # a redirect's body is never used
                )
