"""Page rules about the fetch: status, redirects, timing, response headers and the URL."""

from __future__ import annotations

import re
from collections.abc import Callable

from seojobs.fetch import FetchResult
from seojobs.kinds.site_audit.check import Check, E, Evidence, N, Page, Rules, W, read
from seojobs.kinds.site_audit.page import PageFacts
from seojobs.kinds.site_audit.params import Thresholds

COMPRESS_OVER = 1024  # bytes: under this, compressing a page gains nothing worth a finding
_TEMPORARY = frozenset({302, 303, 307})
_NON_ASCII = re.compile(r"%[89a-f][0-9a-f]", re.IGNORECASE)  # an encoded byte over 0x7f
_ESCAPE = re.compile(r"%[0-9a-f]{2}", re.IGNORECASE)


def _status(lo: int, hi: int) -> Callable[[Page, Thresholds], Evidence]:
    def rule(page: Page, _t: Thresholds) -> Evidence:
        return {"status": page.status} if page.status and lo <= page.status < hi else None

    return rule


def _error(kind: str) -> Callable[[Page, Thresholds], Evidence]:
    def rule(page: Page, _t: Thresholds) -> Evidence:
        return {"error_kind": page.error_kind} if page.error_kind == kind else None

    return rule


def _unreachable(page: Page, _t: Thresholds) -> Evidence:
    failed = page.status is None and page.error_kind is not None
    loop = page.error_kind in ("redirect_loop", "too_many_redirects")
    return {"error_kind": page.error_kind} if failed and not loop else None


def _redirect_chain(page: Page, t: Thresholds) -> Evidence:
    long = page.error_kind is None and page.redirects > t.redirect_hops  # a loop is its own
    return {"hops": page.redirects} if long else None


def _redirect_temporary(page: Page, _t: Thresholds) -> Evidence:
    hops = page.response.redirect_chain if page.response else ()
    temporary = [hop.to_dict() for hop in hops if hop.status in _TEMPORARY]
    return {"hops": temporary} if temporary and page.error_kind is None else None


def _slow(page: Page, t: Thresholds) -> Evidence:
    slow = page.status is not None and page.elapsed_ms > t.slow_response_ms
    return {"response_ms": page.elapsed_ms} if slow else None


def _deep(page: Page, t: Thresholds) -> Evidence:
    deep = page.depth is not None and page.depth > t.max_depth
    return {"depth": page.depth} if deep else None


def _path(url: str) -> str:
    return "/" + url.split("://", 1)[-1].partition("/")[2].partition("?")[0]


def _query(url: str) -> str:
    return url.partition("?")[2]


def _url_long(page: Page, t: Thresholds) -> Evidence:
    return {"length": len(page.url)} if len(page.url) > t.url_max_chars else None


def _in_path(test: Callable[[str], bool]) -> Callable[[Page, Thresholds], Evidence]:
    def rule(page: Page, _t: Thresholds) -> Evidence:
        path = _path(page.url)
        return {"path": path} if test(path) else None

    return rule


def _url_params(page: Page, t: Thresholds) -> Evidence:
    params = [p for p in _query(page.url).split("&") if p]
    return {"parameters": len(params)} if len(params) > t.url_max_params else None


def _too_large(page: Page, t: Thresholds) -> Evidence:
    r = page.response
    if page.facts is None or r is None:
        return None
    size = len(r.body)
    large = r.truncated or size > t.html_max_kb * 1024
    return {"bytes": size, "truncated": r.truncated} if large else None


def _uncompressed(_page: Page, _f: PageFacts, r: FetchResult) -> Evidence:
    plain = not r.headers.get("content-encoding") and len(r.body) > COMPRESS_OVER
    return {"bytes": len(r.body)} if plain else None


def _no_validator(_page: Page, _f: PageFacts, r: FetchResult) -> Evidence:
    none = "etag" not in r.headers and "last-modified" not in r.headers
    return {"etag": None, "last_modified": None} if none else None


def _no_nosniff(_page: Page, _f: PageFacts, r: FetchResult) -> Evidence:
    value = r.headers.get("x-content-type-options")
    return {"x_content_type_options": value} if (value or "").strip().lower() != "nosniff" else None


def _no_csp(_page: Page, _f: PageFacts, r: FetchResult) -> Evidence:
    return None if "content-security-policy" in r.headers else {"content_security_policy": None}


def _no_charset(_page: Page, f: PageFacts, r: FetchResult) -> Evidence:
    declared = "charset=" in (r.headers.get("content-type") or "").lower() or f.charset
    return None if declared else {"content_type": r.headers.get("content-type")}


def _redirect_to_error(page: Page, _t: Thresholds) -> Evidence:
    broken = page.redirects and page.status is not None and page.status >= 400
    return {"redirects": page.redirects, "status": page.status} if broken else None


# "404" on its own ("Error 404", not "/canonical-to-404"), or "not found".
_NOT_FOUND = re.compile(r"(?<![\w/-])404(?![\w/-])|\bnot found\b|\bno longer available\b", re.I)


def _soft_404(page: Page, _t: Thresholds) -> Evidence:
    f = page.facts
    if f is None or page.status != 200:
        return None
    said = [text for text in (f.title, *f.h1[:1]) if text and _NOT_FOUND.search(text)]
    return {"says": said[0]} if said else None


def _segments(path: str) -> list[str]:
    return [s.lower() for s in path.split("/") if s and any(c.isalpha() for c in s)]


def _repetitive(path: str) -> bool:
    segments = _segments(path)
    return len(set(segments)) < len(segments)


def _param_names(url: str) -> list[str]:
    return [p.partition("=")[0].lower() for p in _query(url).split("&") if p]


_SEARCH_PARAMS = frozenset({"q", "s", "search", "query", "keyword", "keywords", "searchterm"})
_SESSION_PARAMS = frozenset(
    {"sid", "sessionid", "session_id", "phpsessid", "jsessionid", "aspsessionid", "cfid"}
)


def _internal_search(page: Page, _t: Thresholds) -> Evidence:
    hits = [p for p in _param_names(page.url) if p in _SEARCH_PARAMS]
    return {"parameters": hits} if hits or "search" in _segments(_path(page.url)) else None


def _session_id(page: Page, _t: Thresholds) -> Evidence:
    hits = [p for p in _param_names(page.url) if p in _SESSION_PARAMS]
    in_path = ";jsessionid=" in page.url.lower()
    return {"parameters": hits or ["jsessionid"]} if hits or in_path else None


def _no_frame_options(_page: Page, _f: PageFacts, r: FetchResult) -> Evidence:
    policy = (r.headers.get("content-security-policy") or "").lower()
    framed = "x-frame-options" in r.headers or "frame-ancestors" in policy
    return None if framed else {"x_frame_options": None}


_UNSAFE_REFERRER = frozenset({"", "unsafe-url", "no-referrer-when-downgrade"})


def _referrer(_page: Page, _f: PageFacts, r: FetchResult) -> Evidence:
    value = r.headers.get("referrer-policy")
    policies = [p.strip().lower() for p in (value or "").split(",")]
    return {"referrer_policy": value} if policies[-1] in _UNSAFE_REFERRER else None


def _refresh_header(_page: Page, _f: PageFacts, r: FetchResult) -> Evidence:
    value = r.headers.get("refresh")
    return {"refresh": value} if value is not None else None


RULES: Rules = [
    (Check("http_4xx", E, "The page answered a 4xx client error."), _status(400, 500)),
    (Check("http_5xx", E, "The page answered a 5xx server error."), _status(500, 600)),
    (
        Check("page_unreachable", E, "No answer at all (DNS, connection, timeout, refused)."),
        _unreachable,
    ),
    (
        Check("redirect_loop", E, "Its redirects lead back to a URL already visited."),
        _error("redirect_loop"),
    ),
    (
        Check("too_many_redirects", E, "More redirects than the fetcher follows."),
        _error("too_many_redirects"),
    ),
    (
        Check(
            "redirect_chain",
            W,
            "More redirect hops than the threshold before the page.",
            "redirect_hops",
        ),
        _redirect_chain,
    ),
    (
        Check(
            "redirect_temporary",
            N,
            "It redirects with a temporary status (302, 303, 307): search engines keep "
            "the old URL.",
        ),
        _redirect_temporary,
    ),
    (
        Check(
            "slow_response",
            N,
            "The page took longer than the threshold to arrive.",
            "slow_response_ms",
        ),
        _slow,
    ),
    (
        Check("html_too_large", W, "The HTML is larger than the threshold (KB).", "html_max_kb"),
        _too_large,
    ),
    (
        Check(
            "compression_missing",
            N,
            f"HTML over {COMPRESS_OVER} bytes sent without Content-Encoding (gzip, br).",
        ),
        read(_uncompressed),
    ),
    (
        Check(
            "cache_validator_missing",
            N,
            "Neither ETag nor Last-Modified: crawlers cannot ask whether the page changed.",
        ),
        read(_no_validator),
    ),
    (
        Check("charset_missing", N, "No charset, neither in Content-Type nor in a meta tag."),
        read(_no_charset),
    ),
    (
        Check("x_content_type_options_missing", N, "No X-Content-Type-Options: nosniff header."),
        read(_no_nosniff),
    ),
    (
        Check("csp_missing", N, "No Content-Security-Policy header."),
        read(_no_csp),
    ),
    (
        Check(
            "depth_too_high",
            N,
            "More clicks from the start URL than the threshold.",
            "max_depth",
        ),
        _deep,
    ),
    (
        Check("url_too_long", N, "The URL is longer than the threshold.", "url_max_chars"),
        _url_long,
    ),
    (Check("url_underscore", N, "The URL's path has underscores."), _in_path(lambda p: "_" in p)),
    (
        Check("url_uppercase", N, "The URL's path has uppercase letters."),
        _in_path(lambda p: (bare := _ESCAPE.sub("", p)) != bare.lower()),  # %C3 is no letter
    ),
    (Check("url_space", W, "The URL's path has spaces."), _in_path(lambda p: "%20" in p)),
    (
        Check("url_non_ascii", N, "The URL's path has non-ASCII characters."),
        _in_path(lambda p: bool(_NON_ASCII.search(p))),
    ),
    (
        Check("url_multiple_slashes", N, "The URL's path has consecutive slashes."),
        _in_path(lambda p: "//" in p),
    ),
    (
        Check(
            "url_too_many_parameters",
            N,
            "More query parameters than the threshold.",
            "url_max_params",
        ),
        _url_params,
    ),
    (
        Check("redirect_to_error", E, "The URL redirects to a page that answers 4xx or 5xx."),
        _redirect_to_error,
    ),
    (
        Check("soft_404", W, 'A page that answers 200 but says "not found" in its title or <h1>.'),
        _soft_404,
    ),
    (
        Check("url_repetitive_path", N, "A segment of the URL's path is repeated."),
        _in_path(_repetitive),
    ),
    (
        Check("url_internal_search", N, "The URL is an internal search (search parameters)."),
        _internal_search,
    ),
    (
        Check("url_session_id", W, "The URL carries a session ID (one page, many URLs)."),
        _session_id,
    ),
    (
        Check(
            "x_frame_options_missing",
            N,
            "Neither X-Frame-Options nor CSP frame-ancestors: other sites may frame the page.",
        ),
        read(_no_frame_options),
    ),
    (
        Check(
            "referrer_policy_missing",
            N,
            "No Referrer-Policy header, or an unsafe one (unsafe-url, no-referrer-when-downgrade).",
        ),
        read(_referrer),
    ),
    (
        Check("refresh_header", W, "A Refresh response header (a redirect or a reload)."),
        read(_refresh_header),
    ),
]
