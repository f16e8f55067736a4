"""robots.txt: fetched through the same guarded fetcher, parsed by protego, cached per origin.

Fetch policy (RFC 9309 and Google's documented behaviour):

* 2xx: parse the first 500 KiB;
* 4xx except 429, and redirect chains that go nowhere: no robots.txt, everything is allowed;
* 429, 5xx, or no answer at all (DNS, connect, timeout, refused by the guard): *unreachable*.
  The caller must treat that as disallow-all for the check, but it is reported as its own state
  because the fix is different (the server, not the rules).

Two user agents are evaluated on every verdict. ``state`` is for our own product token (the
first token of ``settings.user_agent``, e.g. ``seojobs``): it decides whether we may fetch the
page. ``googlebot_state`` is what indexability is about, so diagnostics report it as
``robotsTxtState``. Most sites give both the same rules.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import protego

from seojobs.fetch import errors
from seojobs.fetch.errors import FetchError
from seojobs.fetch.result import FetchResult
from seojobs.fetch.urls import origin_of, parse_url

if TYPE_CHECKING:
    from seojobs.fetch.source import PageSource

RobotsState = Literal["allowed", "disallowed", "unreachable"]
PARSE_LIMIT = 500 * 1024
GOOGLEBOT_TOKEN = "Googlebot"  # noqa: S105 (a robots.txt name, not a secret)
_ALLOW_ALL_ERRORS = frozenset({errors.REDIRECT_LOOP, errors.TOO_MANY_REDIRECTS})


def product_token(user_agent: str) -> str:
    """The robots.txt name of a user agent: ``seojobs/0.1 (+url)`` -> ``seojobs``."""
    match = re.match(r"[A-Za-z0-9_-]+", user_agent.strip())
    return match.group(0) if match else "*"


@dataclass(frozen=True)
class RobotsVerdict:
    url: str
    robots_url: str
    state: RobotsState  # for our own user agent: may we fetch the page?
    googlebot_state: RobotsState  # for Googlebot: what indexability reports
    user_agent: str  # the product token matched against User-agent lines
    status: int | None = None  # HTTP status of robots.txt (None when no response)
    error_kind: str | None = None  # why robots.txt was unreachable, if it was a fetch error
    crawl_delay: float | None = None  # for our user agent
    error: str | None = None  # the fetch error's message
    error_url: str | None = None  # the URL whose fetch failed (robots_url or a redirect target)

    @property
    def allowed(self) -> bool:
        return self.state == "allowed"

    def to_dict(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "robots_url": self.robots_url,
            "state": self.state,
            "googlebot_state": self.googlebot_state,
            "user_agent": self.user_agent,
            "status": self.status,
            "error_kind": self.error_kind,
            "crawl_delay": self.crawl_delay,
            "error": self.error,
        }


@dataclass(frozen=True)
class _Rules:
    """One origin's robots.txt outcome: parsed rules, allow-all, or unreachable."""

    robots_url: str
    expires: float
    parser: protego.Protego | None = None
    unreachable: bool = False
    status: int | None = None
    error_kind: str | None = None
    error: str | None = None
    error_url: str | None = None
    crawl_delay: float | None = None  # for our user agent, read once per robots.txt


def _classify(result: FetchResult) -> tuple[bool, protego.Protego | None]:
    """(unreachable, parser) for a robots.txt fetch; parser None with reachable = allow all."""
    if result.error_kind in _ALLOW_ALL_ERRORS:
        return False, None
    status = result.status
    if result.error_kind is not None or status is None:
        return True, None
    if 200 <= status < 300:
        text = result.body[:PARSE_LIMIT].decode("utf-8", errors="replace").lstrip("\ufeff")
        return False, protego.Protego.parse(text)
    if 300 <= status < 500 and status != 429:
        return False, None
    return True, None


class RobotsCache:
    """Per-origin robots.txt cache in front of a fetcher (:class:`PageSource`).

    Concurrent checks for one origin share a single robots.txt request. Failures are cached
    for a shorter time than rules so a server that recovers is noticed.
    """

    def __init__(
        self,
        fetcher: PageSource,
        *,
        ttl: float = 86_400.0,
        error_ttl: float = 300.0,
        max_origins: int = 4096,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._fetcher = fetcher
        self._ttl = ttl
        self._error_ttl = error_ttl
        self._max_origins = max_origins
        self._clock = clock
        self.user_agent = product_token(fetcher.user_agent)
        self._rules: OrderedDict[str, _Rules] = OrderedDict()
        self._locks: dict[str, asyncio.Lock] = {}

    async def verdict(self, url: str) -> RobotsVerdict:
        """May ``url`` be crawled? Never raises; an invalid URL is reported unreachable."""
        try:
            target = parse_url(url)
        except FetchError as exc:
            return RobotsVerdict(
                url, "", "unreachable", "unreachable", self.user_agent, error_kind=exc.kind
            )
        rules = await self._rules_for(origin_of(target), target.host)
        return self._decide(str(target), rules)

    async def sitemaps(self, url: str) -> list[str]:
        """The ``Sitemap:`` lines of the robots.txt of ``url``'s origin, as written (none
        without rules). Shares the cache: no second request for robots.txt."""
        target = parse_url(url)
        rules = await self._rules_for(origin_of(target), target.host)
        return list(rules.parser.sitemaps) if rules.parser is not None else []

    def _decide(self, url: str, rules: _Rules) -> RobotsVerdict:
        ours: RobotsState
        google: RobotsState
        delay = None
        if rules.unreachable:
            ours = google = "unreachable"
        elif rules.parser is None:
            ours = google = "allowed"
        else:
            ours = "allowed" if rules.parser.can_fetch(url, self.user_agent) else "disallowed"
            allowed = rules.parser.can_fetch(url, GOOGLEBOT_TOKEN)
            google = "allowed" if allowed else "disallowed"
            delay = rules.crawl_delay
        return RobotsVerdict(
            url,
            rules.robots_url,
            ours,
            google,
            self.user_agent,
            rules.status,
            rules.error_kind,
            delay,
            rules.error,
            rules.error_url,
        )

    async def _rules_for(self, origin: str, host: str) -> _Rules:
        cached = self._fresh(origin)
        if cached is not None:
            return cached
        lock = self._locks.setdefault(origin, asyncio.Lock())
        async with lock:
            cached = self._fresh(origin)  # another task may have fetched it meanwhile
            if cached is None:
                cached = await self._load(origin, host)
                self._store(origin, cached)
            return cached

    def _fresh(self, origin: str) -> _Rules | None:
        rules = self._rules.get(origin)
        if rules is None or rules.expires <= self._clock():
            return None
        self._rules.move_to_end(origin)
        return rules

    def _store(self, origin: str, rules: _Rules) -> None:
        self._rules[origin] = rules
        self._rules.move_to_end(origin)
        while len(self._rules) > self._max_origins:
            evicted, _ = self._rules.popitem(last=False)
            self._locks.pop(evicted, None)

    async def _load(self, origin: str, host: str) -> _Rules:
        robots_url = f"{origin}/robots.txt"
        result = await self._fetcher.fetch(robots_url)
        unreachable, parser = _classify(result)
        ttl = self._error_ttl if unreachable else self._ttl
        delay = parser.crawl_delay(self.user_agent) if parser is not None else None
        self._fetcher.gate.set_crawl_delay(host, delay)
        return _Rules(
            robots_url=robots_url,
            expires=self._clock() + ttl,
            parser=parser,
            unreachable=unreachable,
            status=result.status,
            error_kind=result.error_kind,
            error=result.error,
            error_url=result.final_url if result.error_kind else None,
            crawl_delay=delay,
        )
