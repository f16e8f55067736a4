"""The audit's checks: a catalogue (code, severity, description, threshold) and the rules.

Page rules look at one fetched page; site rules run once the crawl is complete, over every
stored page. A rule answers ``None`` (nothing to report) or the evidence of what it found.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from seojobs.engine.context import Finding
from seojobs.kinds.site_audit.page import PageFacts
from seojobs.kinds.site_audit.params import Thresholds

Severity = Literal["error", "warning", "notice"]
SEVERITIES: tuple[Severity, ...] = ("error", "warning", "notice")
Evidence = dict[str, Any] | None


@dataclass(frozen=True)
class Page:
    """One crawled page as the page rules see it."""

    url: str
    depth: int | None  # None: only a sitemap lists the page
    status: int | None
    elapsed_ms: int
    redirects: int
    error_kind: str | None
    facts: PageFacts | None  # None unless a 2xx HTML page was read
    noindex: bool = False
    internal_links: list[tuple[str, bool]] = field(default_factory=list)  # (url, nofollow)
    broken_external: list[dict[str, Any]] = field(default_factory=list)  # checked, broken


@dataclass(frozen=True)
class Check:
    code: str
    severity: Severity
    description: str
    threshold: str | None = None  # the Thresholds field it reads
    scope: Literal["page", "site"] = "page"

    def as_dict(self, thresholds: Thresholds) -> dict[str, Any]:
        value = getattr(thresholds, self.threshold) if self.threshold else None
        return {
            "code": self.code,
            "severity": self.severity,
            "scope": self.scope,
            "description": self.description,
            "threshold": None if value is None else {"name": self.threshold, "default": value},
        }


def _status(lo: int, hi: int) -> Callable[[Page, Thresholds], Evidence]:
    def rule(page: Page, _t: Thresholds) -> Evidence:
        return {"status": page.status} if page.status and lo <= page.status < hi else None

    return rule


def _html(
    test: Callable[[PageFacts, Thresholds], Evidence],
) -> Callable[[Page, Thresholds], Evidence]:
    """A rule about the markup: only 2xx HTML pages have any."""

    def rule(page: Page, t: Thresholds) -> Evidence:
        return test(page.facts, t) if page.facts is not None else None

    return rule


def _title_long(f: PageFacts, t: Thresholds) -> Evidence:
    title = f.title
    return (
        {"title": title, "length": len(title)} if title and len(title) > t.title_max_chars else None
    )


def _title_short(f: PageFacts, t: Thresholds) -> Evidence:
    title = f.title
    short = title and len(title) < t.title_min_chars
    return {"title": title, "length": len(title or "")} if short else None


def _description_long(f: PageFacts, t: Thresholds) -> Evidence:
    text = f.description
    long = text and len(text) > t.description_max_chars
    return {"description": text, "length": len(text or "")} if long else None


def _description_short(f: PageFacts, t: Thresholds) -> Evidence:
    text = f.description
    short = text and len(text) < t.description_min_chars
    return {"description": text, "length": len(text or "")} if short else None


def _several(
    name: str, values: Callable[[PageFacts], list[str]]
) -> Callable[[PageFacts, Thresholds], Evidence]:
    def test(f: PageFacts, _t: Thresholds) -> Evidence:
        found = values(f)
        return {name: found} if len(found) > 1 else None

    return test


def _missing(
    name: str, value: Callable[[PageFacts], Any]
) -> Callable[[PageFacts, Thresholds], Evidence]:
    def test(f: PageFacts, _t: Thresholds) -> Evidence:
        return {name: None} if not value(f) else None

    return test


def _thin(f: PageFacts, t: Thresholds) -> Evidence:
    return {"words": f.words} if f.words < t.thin_content_words else None


def _alt(f: PageFacts, _t: Thresholds) -> Evidence:
    return {"images": f.images_without_alt[:10]} if f.images_without_alt else None


def _non_crawlable(f: PageFacts, _t: Thresholds) -> Evidence:
    return {"hrefs": f.non_crawlable[:10]} if f.non_crawlable else None


def _too_many_links(f: PageFacts, t: Thresholds) -> Evidence:
    return {"links": len(f.links)} if len(f.links) > t.max_links else None


def _json_ld(f: PageFacts, _t: Thresholds) -> Evidence:
    bad = f.invalid_json_ld()
    return {"blocks": bad} if bad else None


def _relative_canonical(f: PageFacts, _t: Thresholds) -> Evidence:
    href = f.canonicals[0] if f.canonicals else ""
    relative = href and not href.lower().startswith(("http://", "https://"))
    return {"canonical": href} if relative else None


def _noindex(page: Page, _t: Thresholds) -> Evidence:
    return {"noindex": True} if page.noindex else None


def _nofollow_links(page: Page, _t: Thresholds) -> Evidence:
    targets = [url for url, nofollow in page.internal_links if nofollow]
    return {"links": targets[:10]} if targets else None


def _dead_end(page: Page, _t: Thresholds) -> Evidence:
    dead = page.facts is not None and not page.internal_links
    return {"internal_links": 0} if dead else None


def _broken_external(page: Page, _t: Thresholds) -> Evidence:
    return {"links": page.broken_external[:10]} if page.broken_external else None


def _redirect_chain(page: Page, t: Thresholds) -> Evidence:
    long = page.error_kind is None and page.redirects > t.redirect_hops  # a loop is its own
    return {"hops": page.redirects} if long else None


def _error(kind: str) -> Callable[[Page, Thresholds], Evidence]:
    def rule(page: Page, _t: Thresholds) -> Evidence:
        return {"error_kind": page.error_kind} if page.error_kind == kind else None

    return rule


def _unreachable(page: Page, _t: Thresholds) -> Evidence:
    failed = page.status is None and page.error_kind is not None
    loop = page.error_kind in ("redirect_loop", "too_many_redirects")
    return {"error_kind": page.error_kind} if failed and not loop else None


def _slow(page: Page, t: Thresholds) -> Evidence:
    slow = page.status is not None and page.elapsed_ms > t.slow_response_ms
    return {"response_ms": page.elapsed_ms} if slow else None


def _deep(page: Page, t: Thresholds) -> Evidence:
    deep = page.depth is not None and page.depth > t.max_depth
    return {"depth": page.depth} if deep else None


def _url_long(page: Page, t: Thresholds) -> Evidence:
    return {"length": len(page.url)} if len(page.url) > t.url_max_chars else None


def _url_underscore(page: Page, _t: Thresholds) -> Evidence:
    path = page.url.split("://", 1)[-1].partition("/")[2].partition("?")[0]
    return {"path": "/" + path} if "_" in path else None


def _url_uppercase(page: Page, _t: Thresholds) -> Evidence:
    path = page.url.split("://", 1)[-1].partition("/")[2].partition("?")[0]
    return {"path": "/" + path} if path != path.lower() else None


_E: Severity = "error"
_W: Severity = "warning"
_N: Severity = "notice"
# code -> (check, rule): the order is the catalogue's.
PAGE_RULES: dict[str, tuple[Check, Callable[[Page, Thresholds], Evidence]]] = {
    c.code: (c, rule)
    for c, rule in [
        (Check("http_4xx", _E, "The page answered a 4xx client error."), _status(400, 500)),
        (Check("http_5xx", _E, "The page answered a 5xx server error."), _status(500, 600)),
        (
            Check("page_unreachable", _E, "No answer at all (DNS, connection, timeout, refused)."),
            _unreachable,
        ),
        (
            Check("redirect_loop", _E, "Its redirects lead back to a URL already visited."),
            _error("redirect_loop"),
        ),
        (
            Check("too_many_redirects", _E, "More redirects than the fetcher follows."),
            _error("too_many_redirects"),
        ),
        (
            Check(
                "redirect_chain",
                _W,
                "More redirect hops than the threshold before the page.",
                "redirect_hops",
            ),
            _redirect_chain,
        ),
        (
            Check("title_missing", _E, "No <title>, or an empty one."),
            _html(_missing("title", lambda f: f.title)),
        ),
        (
            Check(
                "title_too_long", _W, "The title is longer than the threshold.", "title_max_chars"
            ),
            _html(_title_long),
        ),
        (
            Check(
                "title_too_short", _N, "The title is shorter than the threshold.", "title_min_chars"
            ),
            _html(_title_short),
        ),
        (
            Check("title_multiple", _W, "More than one <title>."),
            _html(_several("titles", lambda f: f.titles)),
        ),
        (
            Check("meta_description_missing", _W, "No meta description, or an empty one."),
            _html(_missing("description", lambda f: f.description)),
        ),
        (
            Check(
                "meta_description_too_long",
                _N,
                "The meta description is longer than the threshold.",
                "description_max_chars",
            ),
            _html(_description_long),
        ),
        (
            Check(
                "meta_description_too_short",
                _N,
                "The meta description is shorter than the threshold.",
                "description_min_chars",
            ),
            _html(_description_short),
        ),
        (
            Check("meta_description_multiple", _W, "More than one meta description."),
            _html(_several("descriptions", lambda f: f.descriptions)),
        ),
        (Check("h1_missing", _W, "No <h1>."), _html(_missing("h1", lambda f: f.h1))),
        (Check("h1_multiple", _N, "More than one <h1>."), _html(_several("h1", lambda f: f.h1))),
        (Check("noindex", _W, "A robots meta tag or X-Robots-Tag header says noindex."), _noindex),
        (
            Check("canonical_multiple", _W, "More than one rel=canonical link."),
            _html(_several("canonicals", lambda f: f.canonicals)),
        ),
        (
            Check("canonical_relative", _N, "The canonical URL is relative."),
            _html(_relative_canonical),
        ),
        (Check("img_alt_missing", _W, "Images without alt text."), _html(_alt)),
        (
            Check("lang_missing", _N, "No lang attribute on <html>."),
            _html(_missing("lang", lambda f: f.lang)),
        ),
        (
            Check("viewport_missing", _W, "No meta viewport (not mobile-friendly)."),
            _html(_missing("viewport", lambda f: f.viewport)),
        ),
        (
            Check("thin_content", _N, "Fewer words than the threshold.", "thin_content_words"),
            _html(_thin),
        ),
        (Check("structured_data_invalid", _E, "A JSON-LD block does not parse."), _html(_json_ld)),
        (
            Check("internal_link_nofollow", _N, "Links to pages of the site carry rel=nofollow."),
            _nofollow_links,
        ),
        (
            Check("non_crawlable_link", _W, "Anchors without an href, or with a javascript: one."),
            _html(_non_crawlable),
        ),
        (
            Check(
                "broken_external_link",
                _E,
                "Links to another site's URL that answers 4xx or 5xx, or not at all.",
            ),
            _broken_external,
        ),
        (
            Check("too_many_links", _N, "More links than the threshold.", "max_links"),
            _html(_too_many_links),
        ),
        (Check("dead_end", _N, "The page links to no other page of the site."), _dead_end),
        (
            Check(
                "slow_response",
                _N,
                "The page took longer than the threshold to arrive.",
                "slow_response_ms",
            ),
            _slow,
        ),
        (
            Check(
                "depth_too_high",
                _N,
                "More clicks from the start URL than the threshold.",
                "max_depth",
            ),
            _deep,
        ),
        (
            Check("url_too_long", _N, "The URL is longer than the threshold.", "url_max_chars"),
            _url_long,
        ),
        (Check("url_underscore", _N, "The URL's path has underscores."), _url_underscore),
        (Check("url_uppercase", _N, "The URL's path has uppercase letters."), _url_uppercase),
    ]
}

SITE_CHECKS = (
    Check("title_duplicate", _W, "Another indexable page has the same title.", scope="site"),
    Check(
        "meta_description_duplicate",
        _N,
        "Another indexable page has the same meta description.",
        scope="site",
    ),
    Check("duplicate_content", _W, "Another indexable page has the same text.", scope="site"),
    Check(
        "broken_internal_link",
        _E,
        "Links to a page of the site that answers 4xx or 5xx.",
        scope="site",
    ),
    Check(
        "canonical_to_non_200",
        _E,
        "The canonical URL was crawled and did not answer 200.",
        scope="site",
    ),
    Check("canonical_to_redirect", _W, "The canonical URL redirects.", scope="site"),
    Check(
        "hreflang_no_return_link",
        _W,
        "An hreflang alternate of the page does not name the page back.",
        scope="site",
    ),
    Check(
        "sitemap_url_not_linked",
        _N,
        "A sitemap lists the page, but no link of the site reaches it.",
        scope="site",
    ),
    Check(
        "sitemap_url_non_200",
        _W,
        "A sitemap lists the URL, and it does not answer 200 (an error or a redirect).",
        scope="site",
    ),
    Check(
        "linked_page_blocked_by_robots",
        _N,
        "A linked page of the site is disallowed by robots.txt.",
        scope="site",
    ),
)
CATALOGUE: tuple[Check, ...] = tuple(c for c, _rule in PAGE_RULES.values()) + SITE_CHECKS
SEVERITY = {c.code: c.severity for c in CATALOGUE}


def finding(code: str, url: str, evidence: Evidence) -> Finding:
    return Finding(code, SEVERITY[code], {"url": url, "evidence": evidence})


def page_findings(page: Page, thresholds: Thresholds) -> list[Finding]:
    found = []
    for code, (_check, rule) in PAGE_RULES.items():
        evidence = rule(page, thresholds)
        if evidence is not None:
            found.append(finding(code, page.url, evidence))
    return found


def catalogue(thresholds: Thresholds | None = None) -> list[dict[str, Any]]:
    defaults = thresholds or Thresholds()
    return [check.as_dict(defaults) for check in CATALOGUE]


def codes(found: Iterable[Finding]) -> list[str]:
    return [f.code for f in found]
