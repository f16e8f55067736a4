"""The audit's checks: a catalogue (code, severity, description, threshold) and the rules.

Page rules look at one fetched page (``rules_fetch``: status, redirects, headers, URL;
``rules_content``: title, headings, text, images, metadata; ``rules_links``: anchors,
directives, canonicals, hreflang, forms); site rules (``sitewide``) run once the crawl is
complete, over every stored page. A rule answers ``None`` or the evidence of what it found.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from seojobs.engine.context import Finding
from seojobs.kinds.site_audit import (
    rules_content,
    rules_fetch,
    rules_links,
    rules_markup,
    rules_render,
    rules_secure,
    rules_structured,
)
from seojobs.kinds.site_audit.check import (
    FACTS_TESTS,
    Check,
    E,
    Evidence,
    FactsRule,
    N,
    Page,
    Rule,
    W,
)
from seojobs.kinds.site_audit.params import SEVERITIES, CrawlRules, Severity, Thresholds

__all__ = ["CATALOGUE", "PAGE_RULES", "SEVERITIES", "SEVERITY", "Check", "Page", "Severity"]

# code -> (check, rule): the order is the catalogue's.
PAGE_RULES: dict[str, tuple[Check, Rule]] = {
    check.code: (check, rule)
    for check, rule in [
        *rules_fetch.RULES,
        *rules_content.RULES,
        *rules_structured.RULES,
        *rules_links.RULES,
        *rules_markup.RULES,
        *rules_secure.RULES,
        *rules_render.RULES,
    ]
}


def _site(code: str, severity: Severity, description: str) -> Check:
    return Check(code, severity, description, scope="site")


SITE_CHECKS = (
    _site("title_duplicate", W, "Another indexable page has the same title."),
    _site("meta_description_duplicate", N, "Another indexable page has the same description."),
    _site("h1_duplicate", N, "Another indexable page has the same <h1>."),
    _site("duplicate_content", W, "Another indexable page has the same text."),
    _site(
        "url_trailing_slash_duplicate",
        W,
        "The same URL with or without a trailing slash also answers 200.",
    ),
    _site("url_case_duplicate", W, "The same URL in other letter case also answers 200."),
    _site("broken_internal_link", E, "Links to a page of the site that answers 4xx or 5xx."),
    _site("internal_link_to_redirect", W, "Links to a page of the site that redirects."),
    _site(
        "internal_link_redirect_chain",
        W,
        "Links to a page of the site that redirects more than once before it answers.",
    ),
    _site(
        "pagination_inconsistent",
        W,
        "A rel=next/prev target does not answer 200, or does not name the page back.",
    ),
    _site("canonical_to_non_200", E, "The canonical URL was crawled and did not answer 200."),
    _site("canonical_to_redirect", W, "The canonical URL redirects."),
    _site(
        "canonical_to_non_indexable",
        W,
        "The canonical URL answers 200 but is not indexable (noindex, or canonical elsewhere).",
    ),
    _site(
        "hreflang_no_return_link",
        W,
        "An hreflang alternate of the page does not name the page back.",
    ),
    _site(
        "hreflang_cluster_inconsistent",
        W,
        "An hreflang alternate names the page back, but with other alternates than the page's.",
    ),
    _site("hreflang_to_non_200", W, "An hreflang alternate redirects or does not answer 200."),
    _site("hreflang_to_non_canonical", W, "An hreflang alternate names another canonical URL."),
    _site("sitemap_missing", N, "No sitemap lists a page of the site (robots.txt, /sitemap.xml)."),
    _site(
        "sitemap_too_large",
        W,
        "A sitemap file is over the protocol's limits (50,000 URLs, 50 MB uncompressed): "
        "what is past them may be ignored.",
    ),
    _site(
        "sitemap_url_not_linked", N, "A sitemap lists the page, but no link of the site reaches it."
    ),
    _site(
        "sitemap_url_non_200",
        W,
        "A sitemap lists the URL, and it does not answer 200 (an error or a redirect).",
    ),
    _site(
        "sitemap_url_redirect_chain",
        W,
        "A sitemap lists the URL, and it redirects more than once before it answers.",
    ),
    _site("sitemap_url_noindex", W, "A sitemap lists the URL, and it says noindex."),
    _site("sitemap_url_blocked", W, "A sitemap lists the URL, and robots.txt disallows it."),
    _site(
        "sitemap_url_canonicalised",
        N,
        "A sitemap lists the URL, and it names another canonical URL.",
    ),
    _site(
        "indexable_not_in_sitemap",
        N,
        "An indexable page the crawl reached that the site's sitemaps do not list.",
    ),
    _site(
        "linked_page_blocked_by_robots", N, "A linked page of the site is disallowed by robots.txt."
    ),
    _site("robots_txt_missing", N, "robots.txt answers 4xx: the site has none."),
    _site(
        "orphan_page",
        W,
        "A page the previous audit crawled still answers, but no crawled page links to it "
        "and no sitemap lists it.",
    ),
    Check(
        "page_weight_high",
        W,
        "The page's HTML and the subresources of the site it loads that the crawl fetched "
        "weigh more than the threshold.",
        threshold="page_max_kb",
        scope="site",
    ),
    _site(
        "single_inlink",
        N,
        "An indexable page that only one other page of the site links to.",
    ),
    _site(
        "internal_resource_broken",
        E,
        "The page loads an image, script or style of the site that answers 4xx or 5xx "
        "(of those the crawl fetched).",
    ),
    _site(
        "img_too_large",
        W,
        "The page shows an image of the site over 100 KB (of those the crawl fetched).",
    ),
    _site(
        "internal_resource_redirect",
        N,
        "The page loads an image, script or style of the site through a redirect "
        "(of those the crawl fetched).",
    ),
)
CATALOGUE: tuple[Check, ...] = tuple(c for c, _rule in PAGE_RULES.values()) + SITE_CHECKS
SEVERITY = {c.code: c.severity for c in CATALOGUE}


def finding(code: str, url: str, evidence: Evidence) -> Finding:
    return Finding(code, SEVERITY[code], {"url": url, "evidence": evidence})


@dataclass(frozen=True)
class Reporting:
    """What an audit reports (its params' ``severities`` and ``disabled_checks``, a project's
    settings merged in): every code's severity, and the codes not run."""

    severity: dict[str, Severity] = field(default_factory=lambda: dict(SEVERITY))
    disabled: frozenset[str] = frozenset()
    # The page rules run, in order: (code, rule, its test of the facts if an html() rule).
    rules: tuple[tuple[str, Rule, FactsRule | None], ...] = field(
        init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        rules = tuple(
            (code, rule, FACTS_TESTS.get(rule))
            for code, (_check, rule) in PAGE_RULES.items()
            if code not in self.disabled
        )
        object.__setattr__(self, "rules", rules)

    @classmethod
    def of(cls, rules: CrawlRules) -> Reporting:
        severity: dict[str, Severity] = {**SEVERITY, **rules.severities}
        return cls(severity, frozenset(rules.disabled_checks))

    def apply(self, found: Iterable[Finding]) -> Iterator[Finding]:
        """``found`` without the disabled checks' findings, each with its code's severity
        (as they come: site findings are written a chunk at a time)."""
        return (
            f
            if f.severity == self.severity[f.code]
            else Finding(f.code, self.severity[f.code], f.data)
            for f in found
            if f.code not in self.disabled
        )


DEFAULT_REPORTING = Reporting()


def page_findings(
    page: Page, thresholds: Thresholds, reporting: Reporting = DEFAULT_REPORTING
) -> list[Finding]:
    found = []
    facts = page.facts
    for code, rule, test in reporting.rules:
        if test is None:
            evidence = rule(page, thresholds)
        elif facts is None:
            continue  # an html() rule: only 2xx HTML pages have markup
        else:
            evidence = test(facts, thresholds)
        if evidence is None:
            continue
        for each in evidence if isinstance(evidence, list) else (evidence,):
            found.append(
                Finding(code, reporting.severity[code], {"url": page.url, "evidence": each})
            )
    return found


def catalogue(thresholds: Thresholds | None = None) -> list[dict[str, Any]]:
    defaults = thresholds or Thresholds()
    return [check.as_dict(defaults) for check in CATALOGUE]


def codes(found: Iterable[Finding]) -> list[str]:
    return [f.code for f in found]
