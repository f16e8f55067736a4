"""What every rule of the audit is built from: a catalogue entry and the page it looks at.

A rule answers ``None`` (nothing to report) or the evidence of what it found.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

from seojobs.fetch import FetchResult, parse_meta_robots, parse_x_robots_tag
from seojobs.fetch.errors import FetchError
from seojobs.fetch.urls import URL, join_url, parse_url
from seojobs.kinds.site_audit.guide import GUIDE
from seojobs.kinds.site_audit.page import PageFacts
from seojobs.kinds.site_audit.params import Severity, Thresholds

# A list: one finding per element (an item's each missing property), none when empty.
Evidence = dict[str, Any] | list[dict[str, Any]] | None
E: Severity = "error"
W: Severity = "warning"
N: Severity = "notice"
SAMPLE = 10  # how many URLs, links or values a finding's evidence names at most


@dataclass(frozen=True)
class Rendering:
    """What rendering a page in Chromium said (``render: "js"``): the page's ``facts`` are
    then its rendered DOM's, and ``raw`` those of the HTML as served."""

    raw: PageFacts | None
    error: str | None = None  # not rendered: the page's facts are the raw HTML's
    script_errors: tuple[str, ...] = ()
    blocked: tuple[dict[str, str], ...] = ()


def document_base(url: str, facts: PageFacts | None) -> URL:
    """The base URL of the page at ``url`` (HTML's document base URL), which every relative
    URL of its markup resolves against: links, ``rel=canonical``, hreflang alternates,
    ``rel=next/prev``, what it loads (images, scripts, styles, frames) and form actions. It
    is the first ``<base href>`` resolved against ``url``; ``url`` itself when the page has
    none, or when that href does not resolve to an http(s) URL (a browser ignores an invalid
    one, a ``javascript:`` or ``data:`` one too). HTTP ``Link:`` headers are no part of the
    document: they resolve against the response's URL, never this."""
    document = parse_url(url)
    href = facts.base_href if facts is not None else None
    if not href:
        return document
    try:
        return parse_url(join_url(document, href))
    except (FetchError, ValueError):
        return document


def site_of(url: str) -> tuple[str, int | None]:
    """The site ``url`` is on, as the crawl's scope sees it: its host (a ``www.`` twin is the
    same site) and port (None: the scheme's default, so ``http://a`` and ``https://a`` are
    one site, and ``https://a:8443`` is another)."""
    parsed = parse_url(url)
    return parsed.host.removeprefix("www."), parsed.port


def resolve(base: URL, href: str) -> str | None:
    """``href`` resolved against ``base``, normalised (the crawl's page key); None when it
    does not resolve to an http(s) URL."""
    try:
        return parse_url(join_url(base, href)).key
    except (FetchError, ValueError):
        return None


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
    internal_links: list[tuple[str, bool]] = field(default_factory=list)  # (url, nofollow)
    broken_external: list[dict[str, Any]] = field(default_factory=list)  # checked, broken
    response: FetchResult | None = None  # headers, body and hops, for the rules that read them
    rendering: Rendering | None = None  # render: "js" only

    @cached_property
    def base(self) -> URL:
        """What the URLs of the page's markup resolve against (:func:`document_base`)."""
        return document_base(self.url, self.facts)

    def resolve(self, href: str) -> str | None:
        """A URL of the page's markup made absolute (:func:`resolve`), against its base."""
        return resolve(self.base, href)

    @cached_property
    def directives(self) -> frozenset[str]:
        """The robots directives for Googlebot, from meta tags and X-Robots-Tag together;
        read once for the rules that ask (three of them)."""
        facts, response = self.facts, self.response
        names = parse_meta_robots(facts.robots_meta).names_for() if facts else frozenset()
        if response is not None:
            names |= parse_x_robots_tag(response.header_list("x-robots-tag")).names_for()
        return names

    @cached_property
    def noindex(self) -> bool:
        """Whether Googlebot is told not to index the page, by a meta tag or X-Robots-Tag."""
        return "noindex" in self.directives

    @cached_property
    def canonical(self) -> str | None:
        """The page's first ``rel=canonical``, resolved (None: none, or it does not resolve);
        once for the rules that read it."""
        href = self.facts.canonicals[0] if self.facts and self.facts.canonicals else ""
        return self.resolve(href) if href else None


@dataclass(frozen=True)
class Check:
    code: str
    severity: Severity
    description: str
    threshold: str | None = None  # the Thresholds field it reads
    scope: Literal["page", "site"] = "page"

    def as_dict(self, thresholds: Thresholds) -> dict[str, Any]:

        value = getattr(thresholds, self.threshold) if self.threshold else None
        category, fix = GUIDE[self.code]
        return {
            "code": self.code,
            "severity": self.severity,
            "scope": self.scope,
            "category": category,
            "description": self.description,
            "how_to_fix": fix,
            "threshold": None if value is None else {"name": self.threshold, "default": value},
        }


Rule = Callable[[Page, Thresholds], Evidence]
FactsRule = Callable[[PageFacts, Thresholds], Evidence]
Rules = list[tuple[Check, Rule]]


# Each html() rule's test of the facts: ``checks.page_findings`` calls it itself (skipping
# them all on a page without facts), one call per rule and page less.
FACTS_TESTS: dict[Rule, FactsRule] = {}


def html(test: FactsRule) -> Rule:
    """A rule about the markup: only 2xx HTML pages have any."""

    def rule(page: Page, t: Thresholds) -> Evidence:
        return test(page.facts, t) if page.facts is not None else None

    FACTS_TESTS[rule] = test
    return rule


def read(test: Callable[[Page, PageFacts, FetchResult], Evidence]) -> Rule:
    """A rule about what a 2xx HTML page was sent with (headers, body): the markup and
    the response together."""

    def rule(page: Page, _t: Thresholds) -> Evidence:
        if page.facts is None or page.response is None:
            return None
        return test(page, page.facts, page.response)

    return rule


def missing(name: str, value: Callable[[PageFacts], Any]) -> FactsRule:
    def test(f: PageFacts, _t: Thresholds) -> Evidence:
        return {name: None} if not value(f) else None

    return test


def listed(name: str, values: Callable[[PageFacts], list[Any]], least: int = 1) -> FactsRule:
    """Reports the values (a sample) when there are at least ``least`` of them."""

    def test(f: PageFacts, _t: Thresholds) -> Evidence:
        found = values(f)
        return {name: found[:SAMPLE]} if len(found) >= least else None

    return test
