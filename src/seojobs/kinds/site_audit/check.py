"""What every rule of the audit is built from: a catalogue entry and the page it looks at.

A rule answers ``None`` (nothing to report) or the evidence of what it found.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from seojobs.fetch import FetchResult
from seojobs.kinds.site_audit.guide import GUIDE
from seojobs.kinds.site_audit.page import PageFacts
from seojobs.kinds.site_audit.params import Thresholds

Severity = Literal["error", "warning", "notice"]
SEVERITIES: tuple[Severity, ...] = ("error", "warning", "notice")
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
    response: FetchResult | None = None  # headers, body and hops, for the rules that read them
    rendering: Rendering | None = None  # render: "js" only


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
