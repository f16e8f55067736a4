"""Page rules about links and what a page says of itself: anchors, robots directives,
canonicals, hreflang alternates and forms."""

from __future__ import annotations

from collections import defaultdict

from seojobs.fetch import parse_meta_robots, parse_x_robots_tag
from seojobs.fetch.directives import link_header_canonicals
from seojobs.fetch.errors import FetchError
from seojobs.fetch.urls import join_url, parse_url
from seojobs.kinds.site_audit.check import (
    SAMPLE,
    Check,
    E,
    Evidence,
    N,
    Page,
    Rule,
    Rules,
    W,
    html,
    listed,
)
from seojobs.kinds.site_audit.languages import valid_language
from seojobs.kinds.site_audit.page import PageFacts
from seojobs.kinds.site_audit.params import Thresholds

_PUNCTUATION = " .,!?:;>\u00bb\u203a\u2192"  # marks after the words ("more" + an arrow)
# Anchor texts that say nothing of the target (Lighthouse's link-text audit has its own).
GENERIC_TEXT = frozenset(
    {
        "click",
        "click here",
        "click this",
        "here",
        "go",
        "link",
        "this link",
        "more",
        "read more",
        "learn more",
        "more info",
        "more information",
        "details",
        "continue",
        "start",
        "this",
        "right here",
    }
)


def _absolute(page: Page, href: str) -> str | None:
    try:
        return parse_url(join_url(parse_url(page.url), href)).key
    except (FetchError, ValueError):
        return None


def _is_absolute(href: str) -> bool:
    return href.lower().startswith(("http://", "https://"))


def _site(url: str) -> tuple[str, int | None]:
    """Host and port, as the crawl's scope sees them (a ``www.`` twin is the same site)."""
    parsed = parse_url(url)
    return parsed.host.removeprefix("www."), parsed.port


def _directives(page: Page) -> frozenset[str]:
    """The robots directives for Googlebot, from meta tags and X-Robots-Tag together."""
    names = parse_meta_robots(page.facts.robots_meta).names_for() if page.facts else frozenset()
    if page.response is not None:
        names |= parse_x_robots_tag(page.response.header_list("x-robots-tag")).names_for()
    return names


def _directive(name: str) -> Rule:
    def rule(page: Page, _t: Thresholds) -> Evidence:
        return {name: True} if page.facts is not None and name in _directives(page) else None

    return rule


def _noindex(page: Page, _t: Thresholds) -> Evidence:
    return {"noindex": True} if page.noindex else None


def _nofollow_links(page: Page, _t: Thresholds) -> Evidence:
    targets = [url for url, nofollow in page.internal_links if nofollow]
    return {"links": targets[:SAMPLE]} if targets else None


def _dead_end(page: Page, _t: Thresholds) -> Evidence:
    dead = page.facts is not None and not page.internal_links
    return {"internal_links": 0} if dead else None


def _broken_external(page: Page, _t: Thresholds) -> Evidence:
    return {"links": page.broken_external[:SAMPLE]} if page.broken_external else None


def _too_many_links(f: PageFacts, t: Thresholds) -> Evidence:
    return {"links": len(f.links)} if len(f.links) > t.max_links else None


def _text_empty(f: PageFacts, _t: Thresholds) -> Evidence:
    empty = [link.href for link in f.links if link.text == ""]
    return {"links": empty[:SAMPLE]} if empty else None


def _text_generic(f: PageFacts, _t: Thresholds) -> Evidence:
    generic = [
        {"href": link.href, "text": link.text}
        for link in f.links
        if link.text and link.text.strip(_PUNCTUATION).casefold() in GENERIC_TEXT
    ]
    return {"links": generic[:SAMPLE]} if generic else None


def _canonical_relative(f: PageFacts, _t: Thresholds) -> Evidence:
    href = f.canonicals[0] if f.canonicals else ""
    return {"canonical": href} if href and not _is_absolute(href) else None


def _canonical(page: Page) -> str | None:
    href = page.facts.canonicals[0] if page.facts and page.facts.canonicals else ""
    return _absolute(page, href) if href else None


def _canonical_other_host(page: Page, _t: Thresholds) -> Evidence:
    target = _canonical(page)
    elsewhere = target is not None and _site(target) != _site(page.url)
    return {"canonical": target} if elsewhere else None


def _canonical_root(page: Page, _t: Thresholds) -> Evidence:
    target = _canonical(page)
    if target is None or parse_url(target).target != "/":
        return None
    return None if parse_url(page.url).target == "/" else {"canonical": target}


def _canonical_header(page: Page, _t: Thresholds) -> Evidence:
    in_html = _canonical(page)
    header = page.response.header_list("link") if page.response else []
    in_header = [_absolute(page, href) for href in link_header_canonicals(header)]
    differ = in_html is not None and in_header and in_header[0] != in_html
    return {"html": in_html, "header": in_header[0]} if differ else None


def _hreflang_codes(f: PageFacts, _t: Thresholds) -> Evidence:
    bad = [code for code, _href in f.hreflang if not valid_language(code, x_default=True)]
    return {"codes": bad[:SAMPLE]} if bad else None


def _hreflang_relative(f: PageFacts, _t: Thresholds) -> Evidence:
    relative = [href for _code, href in f.hreflang if not _is_absolute(href)]
    return {"hrefs": relative[:SAMPLE]} if relative else None


def _no_x_default(f: PageFacts, _t: Thresholds) -> Evidence:
    codes = [code for code, _href in f.hreflang]
    return {"languages": codes[:SAMPLE]} if codes and "x-default" not in codes else None


def _no_self(page: Page, _t: Thresholds) -> Evidence:
    if page.facts is None or not page.facts.hreflang:
        return None
    targets = {_absolute(page, href) for _code, href in page.facts.hreflang}
    return None if page.url in targets else {"alternates": sorted(filter(None, targets))[:SAMPLE]}


def _several_languages(page: Page, _t: Thresholds) -> Evidence:
    codes: dict[str, list[str]] = defaultdict(list)
    for code, href in page.facts.hreflang if page.facts else []:
        target = _absolute(page, href)
        if target is not None and code != "x-default" and code not in codes[target]:
            codes[target].append(code)
    several = [{"url": url, "languages": found} for url, found in codes.items() if len(found) > 1]
    return {"alternates": several[:SAMPLE]} if several else None


def _form_on_http(page: Page, _t: Thresholds) -> Evidence:
    forms = page.facts.forms if page.facts else []
    return {"forms": len(forms)} if forms and page.url.startswith("http://") else None


def _form_insecure(f: PageFacts, _t: Thresholds) -> Evidence:
    insecure = [action for action in f.forms if action.lower().startswith("http://")]
    return {"actions": insecure[:SAMPLE]} if insecure else None


RULES: Rules = [
    (Check("noindex", W, "A robots meta tag or X-Robots-Tag header says noindex."), _noindex),
    (
        Check(
            "nofollow_page", W, "Robots meta or X-Robots-Tag says nofollow: no link is followed."
        ),
        _directive("nofollow"),
    ),
    (
        Check("nosnippet", N, "Robots meta or X-Robots-Tag says nosnippet: no text in results."),
        _directive("nosnippet"),
    ),
    (
        Check("noimageindex", N, "Robots meta or X-Robots-Tag says noimageindex."),
        _directive("noimageindex"),
    ),
    (
        Check("internal_link_nofollow", N, "Links to pages of the site carry rel=nofollow."),
        _nofollow_links,
    ),
    (
        Check("non_crawlable_link", W, "Anchors without an href, or with a javascript: one."),
        html(listed("hrefs", lambda f: f.non_crawlable)),
    ),
    (
        Check(
            "broken_external_link",
            E,
            "Links to another site's URL that answers 4xx or 5xx, or not at all.",
        ),
        _broken_external,
    ),
    (
        Check("too_many_links", N, "More links than the threshold.", "max_links"),
        html(_too_many_links),
    ),
    (Check("dead_end", N, "The page links to no other page of the site."), _dead_end),
    (
        Check("link_text_empty", W, "Links without text, image alt or aria-label."),
        html(_text_empty),
    ),
    (
        Check("link_text_generic", N, 'Links whose text says nothing ("click here", "more").'),
        html(_text_generic),
    ),
    (
        Check("canonical_multiple", W, "More than one rel=canonical link."),
        html(listed("canonicals", lambda f: f.canonicals, 2)),
    ),
    (
        Check("canonical_empty", W, "A rel=canonical link without an href."),
        html(listed("canonicals", lambda f: [c for c in f.canonicals if not c])),
    ),
    (
        Check("canonical_relative", N, "The canonical URL is relative."),
        html(_canonical_relative),
    ),
    (
        Check("canonical_other_host", N, "The canonical URL is on another site (host or port)."),
        _canonical_other_host,
    ),
    (
        Check("canonical_to_root", W, "A page other than the home page names it as canonical."),
        _canonical_root,
    ),
    (
        Check(
            "canonical_header_mismatch",
            W,
            "The Link header and the HTML name different canonical URLs.",
        ),
        _canonical_header,
    ),
    (
        Check("hreflang_invalid_code", W, "An hreflang value that is not a language code."),
        html(_hreflang_codes),
    ),
    (
        Check("hreflang_relative", N, "An hreflang URL that is relative (must be absolute)."),
        html(_hreflang_relative),
    ),
    (
        Check("hreflang_missing_x_default", N, "hreflang alternates without an x-default."),
        html(_no_x_default),
    ),
    (
        Check("hreflang_missing_self", W, "hreflang alternates that do not include the page."),
        _no_self,
    ),
    (
        Check(
            "hreflang_multiple_languages",
            W,
            "One alternate URL under more than one hreflang language.",
        ),
        _several_languages,
    ),
    (
        Check("form_on_http_page", W, "A form on a page served over http (sent in clear)."),
        _form_on_http,
    ),
    (
        Check("form_insecure_action", W, "A form posts to an http: URL."),
        html(_form_insecure),
    ),
]
