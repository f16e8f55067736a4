"""Indexability pre-check of one URL, named after Search Console's URL Inspection.

``page_fetch_state``, ``robots_txt_state`` and ``indexing_state`` use the enum names of the
URL Inspection API (``IndexStatusInspectionResult``) so our answer and Google's can be put side
by side. Mapping choices where Google has no exact name:

* transport failures (DNS, connect, timeout, TLS, protocol) and a refusal by our network guard
  are ``INTERNAL_CRAWL_ERROR``; ``fetch_error_kind`` says which. The enum has no DNS state, and
  ``SERVER_ERROR`` would claim the server answered. A host that fails this way while robots.txt
  is asked for is reported the same (the page would fail alike), not as blocked by robots.txt;
* robots.txt unreachable (5xx, 429, no answer) counts as disallow-all, as Google does, so it is
  ``DISALLOWED`` / ``BLOCKED_ROBOTS_TXT``; ``robots_txt.googlebot_state`` says ``unreachable``;
* when robots.txt lets Googlebot in but not our own user agent, we do not fetch the page and
  the fetch and indexing states are ``*_UNSPECIFIED``.

Soft-404 detection needs content heuristics and is not attempted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from seojobs.fetch import errors
from seojobs.fetch.directives import (
    RobotsDirectives,
    link_header_canonicals,
    parse_meta_robots,
    parse_x_robots_tag,
)
from seojobs.fetch.errors import FetchError
from seojobs.fetch.html import parse_head
from seojobs.fetch.result import HTML_TYPES, FetchResult, RedirectHop
from seojobs.fetch.urls import join_url, normalize_url, parse_url

if TYPE_CHECKING:
    from seojobs.fetch.robots import RobotsCache, RobotsVerdict
    from seojobs.fetch.source import PageSource

# Media types a search engine indexes as documents (others, e.g. JSON, are not pages).
INDEXABLE_TYPES = HTML_TYPES | {"application/pdf", "text/plain"}
_STATUS_FETCH_STATES = {
    401: "ACCESS_DENIED",
    403: "ACCESS_FORBIDDEN",
    404: "NOT_FOUND",
    410: "NOT_FOUND",
}
# Fetch errors of robots.txt's own host that the page would meet too.
_HOST_FAILURES = frozenset({errors.DNS_ERROR, errors.SSRF_REFUSED})
_ERROR_FETCH_STATES = {
    errors.INVALID_URL: "INVALID_URL",
    errors.UNSUPPORTED_SCHEME: "INVALID_URL",
    errors.REDIRECT_LOOP: "REDIRECT_ERROR",
    errors.TOO_MANY_REDIRECTS: "REDIRECT_ERROR",
}


@dataclass(frozen=True)
class Canonical:
    url: str | None  # the user-declared canonical, absolute
    state: str  # self | other | missing | multiple | invalid
    html: tuple[str, ...] = ()  # <link rel=canonical> hrefs, resolved
    header: tuple[str, ...] = ()  # Link: rel="canonical" targets, resolved


@dataclass(frozen=True)
class Diagnostics:
    requested_url: str
    final_url: str
    redirect_chain: tuple[RedirectHop, ...]
    http_status: int | None
    content_type: str | None
    page_fetch_state: str
    robots_txt_state: str
    robots_txt: RobotsVerdict | None
    indexing_state: str
    meta_robots: RobotsDirectives
    x_robots_tag: RobotsDirectives
    canonical: Canonical
    indexable: bool
    verdict_reason: str
    fetch_error_kind: str | None
    fetch_error: str | None
    truncated: bool
    elapsed_ms: int

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON types only: report rows store this as it is."""
        return {
            "requested_url": self.requested_url,
            "final_url": self.final_url,
            "redirect_chain": [hop.to_dict() for hop in self.redirect_chain],
            "http_status": self.http_status,
            "content_type": self.content_type,
            "page_fetch_state": self.page_fetch_state,
            "robots_txt_state": self.robots_txt_state,
            "robots_txt": self.robots_txt.to_dict() if self.robots_txt else None,
            "indexing_state": self.indexing_state,
            "meta_robots": self.meta_robots.to_dict(),
            "x_robots_tag": self.x_robots_tag.to_dict(),
            "canonical": self.canonical.url,
            "canonical_state": self.canonical.state,
            "canonical_html": list(self.canonical.html),
            "canonical_header": list(self.canonical.header),
            "indexable": self.indexable,
            "verdict_reason": self.verdict_reason,
            "fetch_error_kind": self.fetch_error_kind,
            "fetch_error": self.fetch_error,
            "truncated": self.truncated,
            "elapsed_ms": self.elapsed_ms,
        }


def _resolve(base: str, href: str) -> str | None:
    try:
        return normalize_url(parse_url(join_url(parse_url(base), href)))
    except (FetchError, ValueError):
        return None


def _canonical(final_url: str, html: list[str], header: list[str], base: str | None) -> Canonical:
    html_base = (_resolve(final_url, base) if base else None) or final_url
    html_urls = [_resolve(html_base, href) for href in html]
    header_urls = [_resolve(final_url, href) for href in header]
    declared = [*html_urls, *header_urls]
    resolved = tuple(dict.fromkeys(u for u in declared if u is not None))
    html_t = tuple(u for u in html_urls if u)
    header_t = tuple(u for u in header_urls if u)
    if not declared:
        return Canonical(None, "missing")
    if not resolved:
        return Canonical(None, "invalid", html_t, header_t)
    if len(resolved) > 1:
        return Canonical(None, "multiple", html_t, header_t)  # Google ignores conflicting hints
    state = "self" if resolved[0] == normalize_url(final_url) else "other"
    return Canonical(resolved[0], state, html_t, header_t)


def _fetched(result: FetchResult) -> bool:
    return result.status is not None and result.error_kind is None


def _page_fetch_state(result: FetchResult, google_blocked: bool) -> str:
    if result.error_kind is not None:
        state = _ERROR_FETCH_STATES.get(result.error_kind, "INTERNAL_CRAWL_ERROR")
        return "REDIRECT_ERROR" if state == "INVALID_URL" and result.redirect_chain else state
    if google_blocked:
        return "BLOCKED_ROBOTS_TXT"
    status = result.status
    if status is None:
        return "PAGE_FETCH_STATE_UNSPECIFIED"  # not fetched: robots.txt excludes us only
    if 200 <= status < 300:
        return "SUCCESSFUL"
    if status in _STATUS_FETCH_STATES:
        return _STATUS_FETCH_STATES[status]
    if 300 <= status < 400:
        return "REDIRECT_ERROR"
    if 400 <= status < 500:
        return "BLOCKED_4XX"
    return "SERVER_ERROR" if status >= 500 else "INTERNAL_CRAWL_ERROR"


def _indexing_state(
    result: FetchResult, google_blocked: bool, meta: RobotsDirectives, header: RobotsDirectives
) -> str:
    if google_blocked:
        return "BLOCKED_BY_ROBOTS_TXT"
    if not _fetched(result):
        return "INDEXING_STATE_UNSPECIFIED"
    if header.noindex():
        return "BLOCKED_BY_HTTP_HEADER"
    if meta.noindex():
        return "BLOCKED_BY_META_TAG"
    return "INDEXING_ALLOWED"


def _error_reason(result: FetchResult) -> str | None:
    kind = result.error_kind
    if kind is None:
        return None
    if kind == errors.SSRF_REFUSED:
        return f"Refused by the private-network guard: {result.error}"
    if kind in (errors.REDIRECT_LOOP, errors.TOO_MANY_REDIRECTS) or result.redirect_chain:
        return f"Redirect error: {result.error}"
    if kind in (errors.INVALID_URL, errors.UNSUPPORTED_SCHEME):
        return f"Invalid URL: {result.error}"
    return f"Fetch failed ({kind}): {result.error}"


def _robots_reason(robots: RobotsVerdict | None, result: FetchResult) -> str | None:
    if robots is None:
        return None
    if robots.googlebot_state == "unreachable":
        shown = f"HTTP {robots.status}" if robots.status else robots.error_kind or "no answer"
        return f"robots.txt unreachable ({shown}): treated as disallow-all"
    if robots.googlebot_state == "disallowed":
        return "Blocked by robots.txt"
    if not _fetched(result):
        return f"robots.txt disallows {robots.user_agent}; page not fetched"
    return None


def _status_reason(result: FetchResult) -> str | None:
    status = result.status or 0
    if result.redirect_chain:
        hops = len(result.redirect_chain)
        return f"Redirected to {result.final_url} ({hops} hop{'s' if hops > 1 else ''})"
    if 300 <= status < 400:
        return f"Redirect without a usable Location (HTTP {status})"
    if 400 <= status < 500:
        return f"Client error (HTTP {status})"
    if status >= 500:
        return f"Server error (HTTP {status})"
    return None


def _content_reason(
    result: FetchResult, meta: RobotsDirectives, header: RobotsDirectives, canonical: Canonical
) -> str | None:
    if header.noindex():
        return "noindex in the X-Robots-Tag header"
    if meta.noindex():
        return "noindex in the robots meta tag"
    if result.content_type is not None and result.content_type not in INDEXABLE_TYPES:
        return f"Not a document type search engines index ({result.content_type})"
    if canonical.state == "other":
        return f"Canonicalised to {canonical.url}"
    return None


def _verdict(
    result: FetchResult,
    robots: RobotsVerdict | None,
    meta: RobotsDirectives,
    header: RobotsDirectives,
    canonical: Canonical,
) -> tuple[bool, str]:
    reason = (
        _error_reason(result)
        or _robots_reason(robots, result)
        or _status_reason(result)
        or _content_reason(result, meta, header, canonical)
    )
    if reason is not None:
        return False, reason
    if canonical.state == "multiple":
        return True, "Indexable; its canonical declarations conflict, so Google ignores them"
    return True, "Indexable"


def diagnose(result: FetchResult, robots: RobotsVerdict | None = None) -> Diagnostics:
    """Diagnostics for a fetch (pure). A result without status or error means: not fetched."""
    google_blocked = robots is not None and robots.googlebot_state != "allowed"
    head = parse_head(result.text) if _fetched(result) and result.is_html else None
    meta = parse_meta_robots(head.robots_meta if head else [])
    header = parse_x_robots_tag(result.header_list("x-robots-tag"))
    canonical = _canonical(
        result.final_url,
        head.canonicals if head else [],
        link_header_canonicals(result.header_list("link")) if _fetched(result) else [],
        head.base_href if head else None,
    )
    indexable, reason = _verdict(result, robots, meta, header, canonical)
    robots_state = "ROBOTS_TXT_STATE_UNSPECIFIED"
    if robots is not None:
        robots_state = "DISALLOWED" if google_blocked else "ALLOWED"
    return Diagnostics(
        requested_url=result.url,
        final_url=result.final_url,
        redirect_chain=result.redirect_chain,
        http_status=result.status,
        content_type=result.content_type,
        page_fetch_state=_page_fetch_state(result, google_blocked),
        robots_txt_state=robots_state,
        robots_txt=robots,
        indexing_state=_indexing_state(result, google_blocked, meta, header),
        meta_robots=meta,
        x_robots_tag=header,
        canonical=canonical,
        indexable=indexable,
        verdict_reason=reason,
        fetch_error_kind=result.error_kind,
        fetch_error=result.error,
        truncated=result.truncated,
        elapsed_ms=round(result.elapsed * 1000),
    )


async def fetch_checked(
    url: str, fetcher: PageSource, robots: RobotsCache
) -> tuple[FetchResult, RobotsVerdict | None]:
    """Check robots.txt, then fetch ``url`` if our user agent may: the fetch (a result without
    status or error when robots.txt kept us out) and robots.txt's verdict, as :func:`diagnose`
    takes them. For kinds that read the page as well as diagnose it (a backlink check).

    robots.txt is checked for the requested URL; redirect targets are not checked again.
    """
    try:
        parse_url(url)
    except FetchError as exc:
        return FetchResult(url, url, None, error_kind=exc.kind, error=exc.message), None
    verdict = await robots.verdict(url)
    if verdict.error_kind in _HOST_FAILURES and verdict.error_url == verdict.robots_url:
        # The page's own host failed before robots.txt could be asked for: its name does not
        # resolve, or the guard refuses it. The page would fail the same way, so it is reported
        # as that fetch error (not as blocked by robots.txt) without asking DNS again.
        return FetchResult(url, url, None, error_kind=verdict.error_kind, error=verdict.error), None
    if verdict.allowed:
        return await fetcher.fetch(url), verdict
    return FetchResult(url, url, None), verdict


async def inspect(url: str, fetcher: PageSource, robots: RobotsCache) -> Diagnostics:
    """Check robots.txt, then fetch ``url`` if our user agent may, then diagnose."""
    return diagnose(*await fetch_checked(url, fetcher, robots))
