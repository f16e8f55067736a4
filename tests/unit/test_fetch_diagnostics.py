"""diagnose(): a FetchResult and a robots verdict in, URL-Inspection-style fields out."""

from __future__ import annotations

import json

import pytest

from seojobs.fetch import FetchResult, RedirectHop, RobotsVerdict, diagnose
from seojobs.fetch.result import make_headers
from seojobs.fetch.robots import RobotsState

URL = "https://site.test/page"


def response(
    status: int = 200,
    html: str = "<html><head></head><body>x</body></html>",
    *,
    content_type: str = "text/html; charset=utf-8",
    headers: list[tuple[str, str]] | None = None,
    url: str = URL,
    final_url: str | None = None,
    chain: tuple[RedirectHop, ...] = (),
) -> FetchResult:
    return FetchResult(
        url=url,
        final_url=final_url or url,
        status=status,
        headers=make_headers([("content-type", content_type), *(headers or [])]),
        redirect_chain=chain,
        body=html.encode(),
        elapsed=0.25,
    )


def failed(kind: str, chain: tuple[RedirectHop, ...] = ()) -> FetchResult:
    return FetchResult(URL, URL, None, redirect_chain=chain, error_kind=kind, error="boom")


def robots(
    google: RobotsState = "allowed", ours: RobotsState | None = None, status: int | None = 200
) -> RobotsVerdict:
    return RobotsVerdict(
        URL, "https://site.test/robots.txt", ours or google, google, "seojobs", status
    )


def head(inner: str) -> str:
    return f"<html><head>{inner}</head><body>x</body></html>"


@pytest.mark.parametrize(
    ("status", "state"),
    [
        (200, "SUCCESSFUL"),
        (204, "SUCCESSFUL"),
        (304, "REDIRECT_ERROR"),
        (401, "ACCESS_DENIED"),
        (403, "ACCESS_FORBIDDEN"),
        (404, "NOT_FOUND"),
        (410, "NOT_FOUND"),
        (418, "BLOCKED_4XX"),
        (429, "BLOCKED_4XX"),
        (500, "SERVER_ERROR"),
        (503, "SERVER_ERROR"),
    ],
)
def test_page_fetch_state_follows_the_status(status: int, state: str) -> None:
    result = diagnose(response(status), robots())
    assert result.page_fetch_state == state
    assert result.http_status == status
    assert result.indexable is (state == "SUCCESSFUL")


@pytest.mark.parametrize(
    ("kind", "state"),
    [
        ("invalid_url", "INVALID_URL"),
        ("unsupported_scheme", "INVALID_URL"),
        ("redirect_loop", "REDIRECT_ERROR"),
        ("too_many_redirects", "REDIRECT_ERROR"),
        ("ssrf_refused", "INTERNAL_CRAWL_ERROR"),
        ("dns_error", "INTERNAL_CRAWL_ERROR"),
        ("timeout", "INTERNAL_CRAWL_ERROR"),
        ("tls_error", "INTERNAL_CRAWL_ERROR"),
    ],
)
def test_fetch_errors_map_to_fetch_states(kind: str, state: str) -> None:
    result = diagnose(failed(kind), robots())
    assert (result.page_fetch_state, result.fetch_error_kind) == (state, kind)
    assert result.indexing_state == "INDEXING_STATE_UNSPECIFIED"
    assert not result.indexable


def test_an_invalid_redirect_target_is_a_redirect_error() -> None:
    chain = (RedirectHop(URL, 301, "ftp://x/"),)
    result = diagnose(failed("unsupported_scheme", chain), robots())
    assert result.page_fetch_state == "REDIRECT_ERROR"
    assert result.verdict_reason.startswith("Redirect error")


def test_an_indexable_page() -> None:
    result = diagnose(response(html=head('<link rel="canonical" href="/page">')), robots())
    assert result.indexable
    assert result.verdict_reason == "Indexable"
    assert (result.robots_txt_state, result.indexing_state) == ("ALLOWED", "INDEXING_ALLOWED")
    assert (result.canonical.state, result.canonical.url) == ("self", URL)


def test_robots_txt_blocks_before_anything_the_page_says() -> None:
    page = response(html=head('<meta name="robots" content="noindex">'))
    result = diagnose(page, robots(google="disallowed", ours="allowed"))
    assert result.robots_txt_state == "DISALLOWED"
    assert result.page_fetch_state == "BLOCKED_ROBOTS_TXT"
    assert result.indexing_state == "BLOCKED_BY_ROBOTS_TXT"
    assert result.verdict_reason == "Blocked by robots.txt"
    assert result.meta_robots.noindex()  # still reported, as we did fetch it


def test_unreachable_robots_txt_is_disallow_all_but_reported_as_such() -> None:
    not_fetched = FetchResult(URL, URL, None)
    result = diagnose(not_fetched, robots(google="unreachable", status=503))
    assert result.robots_txt_state == "DISALLOWED"
    assert result.page_fetch_state == "BLOCKED_ROBOTS_TXT"
    assert result.indexing_state == "BLOCKED_BY_ROBOTS_TXT"
    assert "unreachable" in result.verdict_reason
    assert "503" in result.verdict_reason
    assert result.to_dict()["robots_txt"]["googlebot_state"] == "unreachable"


def test_a_page_only_our_agent_may_not_fetch_is_not_judged() -> None:
    result = diagnose(FetchResult(URL, URL, None), robots(google="allowed", ours="disallowed"))
    assert result.robots_txt_state == "ALLOWED"
    assert result.page_fetch_state == "PAGE_FETCH_STATE_UNSPECIFIED"
    assert result.indexing_state == "INDEXING_STATE_UNSPECIFIED"
    assert not result.indexable
    assert "seojobs" in result.verdict_reason


@pytest.mark.parametrize(
    ("page", "state", "reason"),
    [
        (
            response(headers=[("X-Robots-Tag", "googlebot: noindex")]),
            "BLOCKED_BY_HTTP_HEADER",
            "X-Robots-Tag",
        ),
        (
            response(html=head('<meta name="robots" content="noindex">')),
            "BLOCKED_BY_META_TAG",
            "meta",
        ),
        (
            response(
                html=head('<meta name="googlebot" content="none">'),
                headers=[("X-Robots-Tag", "noindex")],
            ),
            "BLOCKED_BY_HTTP_HEADER",  # the header is seen first
            "X-Robots-Tag",
        ),
        (
            response(
                html="%PDF-1.4",
                content_type="application/pdf",
                headers=[("X-Robots-Tag", "noindex")],
            ),
            "BLOCKED_BY_HTTP_HEADER",
            "X-Robots-Tag",
        ),
    ],
)
def test_noindex_blocks_indexing(page: FetchResult, state: str, reason: str) -> None:
    result = diagnose(page, robots())
    assert result.indexing_state == state
    assert not result.indexable
    assert reason in result.verdict_reason


def test_other_agents_noindex_does_not_block() -> None:
    page = response(
        html=head('<meta name="bingbot" content="noindex">'),
        headers=[("X-Robots-Tag", "bingbot: noindex")],
    )
    result = diagnose(page, robots())
    assert result.indexing_state == "INDEXING_ALLOWED"
    assert result.indexable


def test_meta_in_a_non_html_body_is_not_parsed() -> None:
    page = response(html=head('<meta name="robots" content="noindex">'), content_type="text/plain")
    result = diagnose(page, robots())
    assert result.indexing_state == "INDEXING_ALLOWED"


@pytest.mark.parametrize(
    ("page", "state", "canonical"),
    [
        (response(), "missing", None),
        (response(html=head('<link rel="canonical" href="https://SITE.test:443/page#x">')),
         "self", URL),
        (response(html=head('<link rel="canonical" href="/other">')),
         "other", "https://site.test/other"),
        (response(html=head('<base href="/dir/"><link rel="canonical" href="x">')),
         "other", "https://site.test/dir/x"),
        (response(headers=[("Link", '</other>; rel="canonical"')]),
         "other", "https://site.test/other"),
        (response(html=head('<link rel="canonical" href="/a">'),
                  headers=[("Link", '</b>; rel="canonical"')]), "multiple", None),
        (response(html=head('<link rel="canonical" href="/a"><link rel="canonical" href="/a">')),
         "other", "https://site.test/a"),
        (response(html=head('<link rel="canonical" href="mailto:x@y">')), "invalid", None),
    ],
)  # fmt: skip
def test_canonical_state(page: FetchResult, state: str, canonical: str | None) -> None:
    result = diagnose(page, robots())
    assert (result.canonical.state, result.canonical.url) == (state, canonical)
    assert result.indexable is (state != "other")  # invalid or conflicting hints are ignored


def test_a_canonicalised_page_is_not_indexable() -> None:
    result = diagnose(response(html=head('<link rel="canonical" href="/other">')), robots())
    assert not result.indexable
    assert result.verdict_reason == "Canonicalised to https://site.test/other"


def test_a_redirected_url_is_not_indexable_and_its_chain_is_reported() -> None:
    chain = (
        RedirectHop("https://site.test/old", 301, "/mid"),
        RedirectHop("https://site.test/mid", 302, "/page"),
    )
    page = response(url="https://site.test/old", final_url=URL, chain=chain)
    result = diagnose(page, robots())
    assert result.requested_url == "https://site.test/old"
    assert result.final_url == URL
    assert result.page_fetch_state == "SUCCESSFUL"
    assert not result.indexable
    assert result.verdict_reason == f"Redirected to {URL} (2 hops)"
    assert result.to_dict()["redirect_chain"] == [
        {"url": "https://site.test/old", "status": 301, "location": "/mid"},
        {"url": "https://site.test/mid", "status": 302, "location": "/page"},
    ]


def test_json_is_not_an_indexable_document() -> None:
    result = diagnose(response(html='{"a": 1}', content_type="application/json"), robots())
    assert result.content_type == "application/json"
    assert result.indexing_state == "INDEXING_ALLOWED"
    assert not result.indexable


def test_to_dict_is_plain_json() -> None:
    page = response(
        html=head('<meta name="robots" content="nofollow"><link rel="canonical" href="/x">'),
        headers=[("X-Robots-Tag", "googlebot: noarchive")],
    )
    data = diagnose(page, robots()).to_dict()
    assert json.loads(json.dumps(data)) == data
    assert data["meta_robots"]["nofollow"] is True
    assert data["x_robots_tag"]["directives"] == {"googlebot": ["noarchive"]}
    assert data["canonical"] == "https://site.test/x"
    assert data["elapsed_ms"] == 250
    assert set(data) >= {
        "requested_url", "final_url", "redirect_chain", "http_status", "content_type",
        "page_fetch_state", "robots_txt_state", "indexing_state", "canonical_state",
        "indexable", "verdict_reason", "fetch_error_kind", "truncated",
    }  # fmt: skip


def test_without_a_robots_verdict_the_robots_state_is_unspecified() -> None:
    result = diagnose(response())
    assert result.robots_txt_state == "ROBOTS_TXT_STATE_UNSPECIFIED"
    assert result.to_dict()["robots_txt"] is None
