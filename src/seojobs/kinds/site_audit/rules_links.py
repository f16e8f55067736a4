"""Page rules about links and what a page says of itself: anchors, robots directives,
canonicals, hreflang alternates and forms."""

from __future__ import annotations

import ipaddress
from collections import defaultdict

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
    site_of,
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
    """``href`` resolved against the page's URL, not its ``<base href>``: for what is no part
    of its markup (a ``Link:`` header) or no URL attribute of HTML (``og:url``)."""
    try:
        return parse_url(join_url(parse_url(page.url), href)).key
    except (FetchError, ValueError):
        return None


def _is_absolute(href: str) -> bool:
    return href.lower().startswith(("http://", "https://"))


def _directive(name: str) -> Rule:
    def rule(page: Page, _t: Thresholds) -> Evidence:
        return {name: True} if page.facts is not None and name in page.directives else None

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
    return page.canonical


def _canonical_other_host(page: Page, _t: Thresholds) -> Evidence:
    target = _canonical(page)
    elsewhere = target is not None and site_of(target) != site_of(page.url)
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
    targets = {page.resolve(href) for _code, href in page.facts.hreflang}
    return None if page.url in targets else {"alternates": sorted(filter(None, targets))[:SAMPLE]}


def _several_languages(page: Page, _t: Thresholds) -> Evidence:
    codes: dict[str, list[str]] = defaultdict(list)
    for code, href in page.facts.hreflang if page.facts else []:
        target = page.resolve(href)
        if target is not None and code != "x-default" and code not in codes[target]:
            codes[target].append(code)
    several = [{"url": url, "languages": found} for url, found in codes.items() if len(found) > 1]
    return {"alternates": several[:SAMPLE]} if several else None


def _form_on_http(page: Page, _t: Thresholds) -> Evidence:
    forms = page.facts.forms if page.facts else []
    return {"forms": len(forms)} if forms and page.url.startswith("http://") else None


def _form_insecure(page: Page, _t: Thresholds) -> Evidence:
    """Actions written http:, and on an https page those a ``<base href>`` makes http (on an
    http page every relative action is http: ``form_on_http_page`` says so). An empty action
    posts to the page's own URL, whatever the base."""
    forms = page.facts.forms if page.facts else []
    https = page.url.startswith("https:")
    insecure = [
        action
        for action in forms
        if action.lower().startswith("http://")
        or (https and action and (page.resolve(action) or "").startswith("http:"))
    ]
    return {"actions": insecure[:SAMPLE]} if insecure else None


def _host_of(url: str) -> str | None:
    try:
        return parse_url(url).host
    except (FetchError, ValueError):
        return None


def _local(host: str) -> bool:
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return address.is_loopback or address.is_private or address.is_link_local


def _local_links(page: Page, _t: Thresholds) -> Evidence:
    """Links (resolved against the page's base) to a local host other than the page's."""
    if page.facts is None:
        return None
    own = _host_of(page.url)
    # A relative link stays on the page's host, unless its <base href> names another.
    based = page.base.host != own
    hrefs = [
        link.href
        for link in page.facts.links
        if based or _is_absolute(link.href) or link.href.startswith("//")
    ]
    local = [
        url
        for href in hrefs
        if (url := page.resolve(href)) and (host := _host_of(url)) != own and host and _local(host)
    ]
    return {"links": local[:SAMPLE]} if local else None


def _whitespace(f: PageFacts, _t: Thresholds) -> Evidence:
    # An href is stripped and never empty: whitespace inside splits it (a generator over its
    # characters was the costliest per-page check under cProfile on bench/audit.py's pages).
    spaced = [link.href for link in f.links if len(link.href.split()) > 1]
    return {"hrefs": spaced[:SAMPLE]} if spaced else None


def _tracking(page: Page, _t: Thresholds) -> Evidence:
    # Only a URL with "utm_" in its query (any case) can have such a parameter: the others,
    # nearly all, are not split.
    tagged = [
        url
        for url, _nofollow in page.internal_links
        if "utm_" in (query := url.partition("?")[2]).lower()
        and any(p.lower().startswith("utm_") for p in query.split("&"))
    ]
    return {"links": tagged[:SAMPLE]} if tagged else None


def _robots_multiple(f: PageFacts, _t: Thresholds) -> Evidence:
    names = [name for name, _content in f.robots_meta]
    several = sorted({name for name in names if names.count(name) > 1})
    return {"names": several} if several else None


ROBOTS_DIRECTIVES = frozenset(
    {
        "all",
        "index",
        "follow",
        "noindex",
        "nofollow",
        "none",
        "noarchive",
        "nocache",
        "nosnippet",
        "noimageindex",
        "notranslate",
        "indexifembedded",
        "max-snippet",
        "max-image-preview",
        "max-video-preview",
        "unavailable_after",
        "noodp",
        "noydir",
    }
)


def _robots_unknown(f: PageFacts, _t: Thresholds) -> Evidence:
    unknown = [
        word.strip()
        for _name, content in f.robots_meta
        for word in content.split(",")
        if word.strip() and word.partition(":")[0].strip().lower() not in ROBOTS_DIRECTIVES
    ]
    return {"directives": unknown[:SAMPLE]} if unknown else None


def _canonical_fragment(f: PageFacts, _t: Thresholds) -> Evidence:
    href = f.canonicals[0] if f.canonicals else ""
    return {"canonical": href} if "#" in href else None


def _primary(code: str) -> str:
    return code.replace("_", "-").partition("-")[0].lower()


def _hreflang_lang(page: Page, _t: Thresholds) -> Evidence:
    f = page.facts
    if f is None or not f.lang or not f.hreflang:
        return None
    own = [c for c, href in f.hreflang if c != "x-default" and page.resolve(href) == page.url]
    if not own or _primary(f.lang) in {_primary(c) for c in own}:
        return None
    return {"lang": f.lang, "hreflang": own[:SAMPLE]}


def _hreflang_duplicate(page: Page, _t: Thresholds) -> Evidence:
    targets: dict[str, set[str]] = defaultdict(set)
    for code, href in page.facts.hreflang if page.facts else []:
        targets[code].add(page.resolve(href) or href)
    several = [
        {"language": c, "urls": sorted(u)[:SAMPLE]} for c, u in targets.items() if len(u) > 1
    ]
    return {"languages": several[:SAMPLE]} if several else None


def _hreflang_body(f: PageFacts, _t: Thresholds) -> Evidence:
    return {"links": f.hreflang_in_body} if f.hreflang_in_body else None


def _pagination_targets(page: Page) -> list[tuple[str, str]]:
    found = []
    for rel, href in page.facts.pagination if page.facts else []:
        target = page.resolve(href)
        if target is not None:
            found.append((rel, target))
    return found


def _pagination_multiple(f: PageFacts, _t: Thresholds) -> Evidence:
    rels = [rel for rel, _href in f.pagination]
    several = sorted({rel for rel in rels if rels.count(rel) > 1})
    return {"rels": several} if several else None


def _pagination_unlinked(page: Page, _t: Thresholds) -> Evidence:
    linked = {url for url, _nofollow in page.internal_links}
    unlinked = [
        {"rel": rel, "target": target}
        for rel, target in _pagination_targets(page)
        if target != page.url and site_of(target) == site_of(page.url) and target not in linked
    ]
    return {"links": unlinked[:SAMPLE]} if unlinked else None


def _pagination_self(page: Page, _t: Thresholds) -> Evidence:
    loops = [rel for rel, target in _pagination_targets(page) if target == page.url]
    return {"rels": loops} if loops else None


def _pagination_canonicalised(page: Page, _t: Thresholds) -> Evidence:
    target = _canonical(page)
    paginated = page.facts is not None and page.facts.pagination
    return {"canonical": target} if paginated and target and target != page.url else None


def _og_url(page: Page, _t: Thresholds) -> Evidence:
    written = page.facts.open_graph.get("og:url") if page.facts else None
    if not written:
        return None
    expected = _canonical(page) or page.url
    stated = _absolute(page, written)
    return None if stated == expected else {"og:url": written, "expected": expected}


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
        _form_insecure,
    ),
    (
        Check(
            "link_to_local_address",
            W,
            "Links to localhost or a private IP address: nobody else can follow them.",
        ),
        _local_links,
    ),
    (
        Check("link_href_whitespace", N, "Link URLs with spaces or other whitespace in them."),
        html(_whitespace),
    ),
    (
        Check(
            "link_tracking_parameters",
            N,
            "Links to pages of the site with utm_ tracking parameters (one page, many URLs).",
        ),
        _tracking,
    ),
    (
        Check("robots_meta_multiple", N, "More than one robots meta tag for the same crawler."),
        html(_robots_multiple),
    ),
    (
        Check("robots_directive_unknown", W, "A robots meta directive search engines do not know."),
        html(_robots_unknown),
    ),
    (
        Check("canonical_fragment", W, "The canonical URL has a #fragment."),
        html(_canonical_fragment),
    ),
    (
        Check(
            "hreflang_lang_mismatch",
            W,
            "The <html> lang is not the language the page's own hreflang gives it.",
        ),
        _hreflang_lang,
    ),
    (
        Check(
            "hreflang_duplicate_language",
            W,
            "One hreflang language names more than one URL.",
        ),
        _hreflang_duplicate,
    ),
    (
        Check("hreflang_in_body", W, "hreflang links in the <body>: search engines ignore them."),
        html(_hreflang_body),
    ),
    (
        Check("pagination_multiple", W, "More than one rel=next, or more than one rel=prev."),
        html(_pagination_multiple),
    ),
    (
        Check(
            "pagination_not_linked",
            N,
            "A rel=next/prev URL of the site that no <a href> on the page links.",
        ),
        _pagination_unlinked,
    ),
    (
        Check("pagination_to_self", W, "A rel=next or rel=prev that names the page itself."),
        _pagination_self,
    ),
    (
        Check(
            "pagination_canonicalised",
            W,
            "A paginated page names another canonical URL (page 2 canonical to page 1).",
        ),
        _pagination_canonicalised,
    ),
    (
        Check("og_url_mismatch", N, "og:url is not the page's canonical URL."),
        _og_url,
    ),
]
