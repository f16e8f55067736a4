"""Rules about a page served over https: what it loads or links over http, and HSTS.

A page served over http has none of these (its own finding is the scheme: forms over http);
the rules read the page's URL after redirects, its markup and its headers.
"""

from __future__ import annotations

import contextlib

from seojobs.fetch import FetchResult
from seojobs.fetch.errors import FetchError
from seojobs.fetch.urls import join_url, parse_url
from seojobs.kinds.site_audit.check import SAMPLE, Check, E, Evidence, Page, Rules, W, read
from seojobs.kinds.site_audit.page import PageFacts


def _https(r: FetchResult) -> bool:
    return r.final_url.lower().startswith("https:")


def _plain(f: PageFacts, hrefs: list[str]) -> list[str]:
    """The hrefs that can resolve to http: on an https page: those written http:, or all
    of them under a ``<base href>`` (else relative and scheme-relative ones stay https)."""
    if f.base_href:
        return hrefs
    return [h for h in hrefs if h.lstrip()[:5].lower() == "http:"]


def _resolved(f: PageFacts, r: FetchResult, hrefs: list[str]) -> list[str]:
    """``hrefs`` made absolute as a browser does: against the ``<base href>`` if any."""
    base = parse_url(r.final_url)
    if f.base_href:
        with contextlib.suppress(FetchError, ValueError):
            base = parse_url(join_url(base, f.base_href))
    found = []
    for href in hrefs:
        try:
            found.append(join_url(base, href))
        except (FetchError, ValueError):
            continue
    return found


def _mixed(_page: Page, f: PageFacts, r: FetchResult) -> Evidence:
    if not _https(r):
        return None
    loads = [image.src for image in f.images if image.src] + f.iframes + f.subresources
    plain = [u for u in _resolved(f, r, _plain(f, loads)) if u.lower().startswith("http:")]
    return {"resources": list(dict.fromkeys(plain))[:SAMPLE]} if plain else None


def _site_host(url: str) -> str:
    return parse_url(url).host.removeprefix("www.")


def _links_to_http(_page: Page, f: PageFacts, r: FetchResult) -> Evidence:
    if not _https(r):
        return None
    own = _site_host(r.final_url)
    hrefs = _plain(f, [link.href for link in f.links])
    if not hrefs:
        return None
    plain = [
        u for u in _resolved(f, r, hrefs) if u.lower().startswith("http:") and _site_host(u) == own
    ]
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
        Check("https_links_to_http", W, "An https page links to http: URLs of its own site."),
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
