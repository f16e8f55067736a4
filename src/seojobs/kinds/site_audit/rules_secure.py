"""Rules about a page served over https: what it loads or links over http, and HSTS.

A page served over http has none of these (its own finding is the scheme: forms over http);
the rules read the page's URL after redirects, its markup and its headers.
"""

from __future__ import annotations

from seojobs.fetch import FetchResult
from seojobs.fetch.errors import FetchError
from seojobs.fetch.urls import join_url
from seojobs.kinds.site_audit.check import SAMPLE, Check, E, Evidence, Page, Rules, W, read, site_of
from seojobs.kinds.site_audit.page import PageFacts


def _https(r: FetchResult) -> bool:
    return r.final_url.lower().startswith("https:")


def _plain(page: Page, hrefs: list[str]) -> list[str]:
    """The hrefs that can resolve to http: on an https page: those written http:, or all
    of them under an http base (else relative and scheme-relative ones stay https)."""
    if page.base.scheme == "http":
        return hrefs
    return [h for h in hrefs if h.lstrip()[:5].lower() == "http:"]


def _resolved(page: Page, hrefs: list[str]) -> list[str]:
    """``hrefs`` made absolute as a browser does: against the page's base."""
    found = []
    for href in hrefs:
        try:
            found.append(join_url(page.base, href))
        except (FetchError, ValueError):
            continue
    return found


def _mixed(page: Page, f: PageFacts, r: FetchResult) -> Evidence:
    if not _https(r):
        return None
    loads = [image.src for image in f.images if image.src] + f.iframes + f.subresources
    plain = [u for u in _resolved(page, _plain(page, loads)) if u.lower().startswith("http:")]
    return {"resources": list(dict.fromkeys(plain))[:SAMPLE]} if plain else None


def _links_to_http(page: Page, f: PageFacts, r: FetchResult) -> Evidence:
    """Links to http: URLs of the page's own site as the crawl's scope sees it (host, or its
    www. twin, and port): what the audit crawls as the site's pages."""
    if not _https(r):
        return None
    hrefs = _plain(page, [link.href for link in f.links])
    if not hrefs:
        return None
    own = site_of(page.url)
    plain = []
    for url in _resolved(page, hrefs):
        if url.lower().startswith("http:"):
            try:
                if site_of(url) == own:
                    plain.append(url)
            except (FetchError, ValueError):
                continue
    return {"links": list(dict.fromkeys(plain))[:SAMPLE]} if plain else None


def _kept(header: str) -> bool:
    """Whether browsers keep a Strict-Transport-Security value (RFC 6797 6.1): it must have a
    max-age of digits, and max-age=0 forgets the host's HSTS. (Not ``int()``: a value of
    thousands of digits would raise.)"""
    for directive in header.split(";"):
        name, _eq, value = directive.partition("=")
        if name.strip().lower() == "max-age":
            value = value.strip().strip('"')
            return value.isascii() and value.isdigit() and bool(value.strip("0"))
    return False


def _no_hsts(_page: Page, _f: PageFacts, r: FetchResult) -> Evidence:
    """No header, or one browsers do not keep (a browser reads the first one only)."""
    if not _https(r):
        return None
    sent = r.header_list("strict-transport-security")
    if sent and _kept(sent[0]):
        return None
    return {"strict_transport_security": sent[0] if sent else None}


RULES: Rules = [
    (
        Check("mixed_content", E, "An https page loads images, scripts or styles over http."),
        read(_mixed),
    ),
    (
        Check(
            "https_links_to_http",
            W,
            "An https page links to http: URLs of its own site (host or www. twin, and port: "
            "the crawl's scope).",
        ),
        read(_links_to_http),
    ),
    (
        Check(
            "hsts_missing",
            W,
            "An https page without a Strict-Transport-Security header, or with one browsers "
            "ignore (no max-age, max-age=0).",
        ),
        read(_no_hsts),
    ),
]
