"""The site audit's page reader, sitemap reader and rules on given pages: the checks the
fixture site of tests/integration/test_site_audit.py does not plant (timing thresholds too)."""

from __future__ import annotations

import gzip
import re
from dataclasses import replace

import pytest

from seojobs.fetch.result import FetchResult, RedirectHop, make_headers
from seojobs.kinds.site_audit.checks import (
    CATALOGUE,
    SITE_CHECKS,
    Page,
    catalogue,
    page_findings,
)
from seojobs.kinds.site_audit.guide import CATEGORIES, GUIDE
from seojobs.kinds.site_audit.languages import valid_language
from seojobs.kinds.site_audit.page import count_words, parse_page
from seojobs.kinds.site_audit.params import Thresholds
from seojobs.kinds.site_audit.sitemaps import PROTOCOL_BYTES, read_sitemap
from tests.fakes.audit_site import PLANTED, html, words
from tests.fakes.render_site import PLANTED as RENDER_PLANTED
from tests.fakes.tls_site import HTTPS_ONLY
from tests.fakes.tls_site import PLANTED as TLS_PLANTED

URL = "https://example.com/garden/care"


def _page(document: str, **overrides: object) -> Page:
    page = Page(
        url=URL,
        depth=1,
        status=200,
        elapsed_ms=100,
        redirects=0,
        error_kind=None,
        facts=parse_page(document),
        internal_links=[("https://example.com/", False)],
    )
    return replace(page, **overrides)  # type: ignore[arg-type]


def _codes(page: Page, thresholds: Thresholds | None = None) -> set[str]:
    return {f.code for f in page_findings(page, thresholds or Thresholds())}


def test_a_clean_page_has_nothing_to_report() -> None:
    assert _codes(_page(html("clean"))) == set()


def test_the_reader_finds_what_the_checks_need() -> None:
    facts = parse_page(
        '<html lang="de"><head><title> A  title </title><title>Second</title>'
        '<meta name="description" content="Words"><meta name="viewport" content="x">'
        '<link rel="canonical" href="/c"><meta name="robots" content="noindex">'
        '<script type="application/ld+json">{"ok": true}</script>'
        '<script type="application/ld+json">{"broken": </script></head><body>'
        "<h1>One <b>bold</b> heading</h1><script>var hidden = 'not words';</script>"
        '<a href="/a">A</a><a href="/b" rel="external nofollow">B</a><a>no href</a>'
        '<a href="javascript:go()">js</a><a href="#top">top</a><a href="mailto:x@y">m</a>'
        '<img src="/i.png"><img src="/j.png" alt="J"><p>three more words</p></body></html>'
    )
    assert facts.titles == ["A title", "Second"]
    assert (facts.description, facts.viewport, facts.lang) == ("Words", True, "de")
    assert facts.canonicals == ["/c"] and facts.robots_meta == [("robots", "noindex")]
    assert facts.h1 == ["One bold heading"]
    assert [(link.href, link.nofollow) for link in facts.links] == [("/a", False), ("/b", True)]
    assert facts.non_crawlable == ["(no href)", "javascript:go()"]
    assert facts.images_without_alt == ["/i.png"]
    assert facts.invalid_json_ld() == ['{"broken":']
    # Visible text only: the heading, the anchors' text and the paragraph; no script.
    assert facts.words == 3 + 7 + 3


def test_the_same_text_hashes_the_same_whatever_the_markup_around_it() -> None:
    one = parse_page(f"<title>One</title><p>{words('x')}</p>")
    other = parse_page(f"<title>Other</title><div>{words('x')}</div>")
    assert one.text_hash == other.text_hash != parse_page(f"<p>{words('y')}</p>").text_hash


@pytest.mark.parametrize(
    "text",
    [
        "",
        "one",
        "snake_case and kebab-case, 3.14 & x2: (a)[b]{c}",
        "__ _ - -- 'quoted' \"double\" tab\there\nnew\x00line\x7f~end",
        "caf\u00e9 na\u00efve \u65e5\u672c\u8a9e word\u00a0word",  # not ASCII: the regex
    ],
)
def test_words_are_the_runs_of_word_characters(text: str) -> None:
    assert count_words(text) == len(re.findall(r"\w+", text))


@pytest.mark.parametrize(
    ("overrides", "code"),
    [
        ({"elapsed_ms": 801}, "slow_response"),
        ({"depth": 5}, "depth_too_high"),
        ({"redirects": 2}, "redirect_chain"),
        ({"status": None, "error_kind": "timeout", "facts": None}, "page_unreachable"),
        ({"status": 301, "error_kind": "too_many_redirects", "facts": None}, "too_many_redirects"),
        ({"internal_links": []}, "dead_end"),
        ({"url": "https://example.com/garden_care"}, "url_underscore"),
        ({"url": "https://example.com/Garden"}, "url_uppercase"),
        ({"url": "https://example.com/" + "a" * 120}, "url_too_long"),
        ({"status": 404, "facts": None}, "http_4xx"),
    ],
)
def test_page_rules_on_their_thresholds(overrides: dict[str, object], code: str) -> None:
    assert _codes(_page(html("clean"), **overrides)) == {code}


def test_a_threshold_at_its_limit_reports_nothing() -> None:
    assert _codes(_page(html("clean"), elapsed_ms=800, depth=4, redirects=1)) == set()
    relaxed = Thresholds(slow_response_ms=2000, max_depth=6)
    assert _codes(_page(html("clean"), elapsed_ms=1500, depth=6), relaxed) == set()


@pytest.mark.parametrize(
    ("document", "code"),
    [
        (html("p", title="Too short"), "title_too_short"),
        (html("p", description="Short."), "meta_description_too_short"),
        (html("p", description="Far too long a description. " * 8), "meta_description_too_long"),
        (html("p", head="<title>Another title, longer still</title>"), "title_multiple"),
        (
            html("p", head='<meta name="description" content="x' + "y" * 90 + '">'),
            "meta_description_multiple",
        ),
        (
            html(
                "p",
                head='<link rel="canonical" href="https://example.com/garden/care">'
                '<link rel="canonical" href="https://example.com/garden/other">',
            ),
            "canonical_multiple",
        ),
        (html("p", head='<link rel="canonical" href="/garden/care">'), "canonical_relative"),
        (html("p", links=tuple(f"/l/{n}" for n in range(101))), "too_many_links"),
    ],
)
def test_markup_rules(document: str, code: str) -> None:
    assert _codes(_page(document)) == {code}


def test_the_catalogue_has_one_entry_per_code_and_real_thresholds() -> None:
    codes = [check.code for check in CATALOGUE]
    assert len(codes) == len(set(codes))
    fields = set(Thresholds.model_fields)
    assert {c.threshold for c in CATALOGUE if c.threshold} <= fields


def test_a_sitemap_lists_its_locs_and_says_whether_it_is_an_index() -> None:
    urlset = b"<urlset><url><loc> https://a.example/?x=1&amp;y=2 </loc></url></urlset>"
    read = read_sitemap(urlset, 10_000)
    assert (read.index, read.urls, read.cut) == (False, ["https://a.example/?x=1&y=2"], False)
    index = b"<sitemapindex><sitemap><loc>https://a.example/s.xml</loc></sitemap></sitemapindex>"
    read = read_sitemap(gzip.compress(index), 10_000)
    assert (read.index, read.urls, read.size) == (True, ["https://a.example/s.xml"], len(index))


def test_a_gzipped_sitemap_is_opened_only_up_to_the_cap() -> None:
    locs = b"".join(b"<url><loc>https://a.example/%d</loc></url>" % n for n in range(1000))
    read = read_sitemap(gzip.compress(b"<urlset>" + locs + b"</urlset>"), 4096)
    assert 0 < len(read.urls) < 1000 and read.cut and read.size == 4096
    assert read.over_limits(4096) == {"urls": len(read.urls), "bytes": 4096, "cut_at_bytes": 4096}
    damaged = read_sitemap(b"\x1f\x8b not gzip at all", 4096)
    assert (damaged.index, damaged.urls) == (False, [])


def test_a_sitemap_of_50001_urls_is_read_across_chunks_and_over_the_protocols_limit() -> None:
    """Some 2.7 MB: every <loc> kept, those cut by the 1 MB chunks too, and reported."""
    locs = b"".join(b"<url><loc>https://a.example/p/%08d</loc></url>" % n for n in range(50_001))
    body = b"<urlset>" + locs + b"</urlset>"
    for sent in (body, gzip.compress(body, 1)):
        read = read_sitemap(sent, PROTOCOL_BYTES)
        assert read.urls == [f"https://a.example/p/{n:08d}" for n in range(50_001)]
        assert not read.cut and read.size == len(body)
        assert read.over_limits(PROTOCOL_BYTES) == {
            "urls": 50_001,
            "bytes": len(body),
            "cut_at_bytes": None,
        }
    assert read_sitemap(body[:-2000] + b"</urlset>", PROTOCOL_BYTES).over_limits(1) is None


def test_the_catalogue_is_ahead_of_seonaut() -> None:
    """Issue 13: at least 80 checks (SEOnaut lists about 75); issue 30.5: 180 or more (Ahrefs
    lists 170+), each with a one-line description."""
    assert len(CATALOGUE) >= 180
    assert all(c.description and "\n" not in c.description for c in CATALOGUE)
    assert {c.scope for c in SITE_CHECKS} == {"site"}


def test_the_reader_finds_headings_heads_and_anchor_texts() -> None:
    facts = parse_page(
        '<!DOCTYPE html><html lang="fr"><head><meta charset="utf-8"><link rel="icon" href="/i">'
        '<meta property="og:title" content="t"><meta name="twitter:card" content="summary">'
        '<meta name="viewport" content="a"><meta name="viewport" content="b">'
        '<meta http-equiv="refresh" content="5; url=/x"><meta name="keywords" content="k">'
        "</head><body><svg><title>An icon</title></svg><h1>Top</h1><h3>Skipped</h3><h2>Two</h2>"
        '<a href="/a"><img src="/i.png" alt="Pictured"></a><a href="/b">Read more »</a>'
        '<a href="/c" aria-label="Labelled"></a><a href="/d"></a><a href="/e">open '
        '<a href="/f">next</a><meta name="robots" content="noindex"><center>c</center>'
        '<form action="http://x.example/s"></form><iframe src="/frame"></iframe><embed src="/e">'
        '<img src="/sized.png" width="1" height="2" alt=""><p>Lorem ipsum dolor</p></body></html>'
    )
    assert facts.titles == []  # an SVG's title names the drawing, not the page
    assert (facts.doctype, facts.charset, facts.favicon) == (True,) * 3
    assert facts.twitter_card == "summary" and facts.viewports == 2
    assert set(facts.open_graph) == {"og:title"}
    assert (facts.meta_refresh, facts.meta_keywords) == ("5; url=/x", True)
    assert facts.h1 == ["Top"] and facts.h2 == 1 and facts.heading_skips == [(1, 3)]
    texts = [(link.href, link.text) for link in facts.links]
    # An <a> opened inside another one closes it, as browsers do.
    assert texts == [
        ("/a", "Pictured"),
        ("/b", "Read more »"),
        ("/c", "Labelled"),
        ("/d", ""),
        ("/e", "open"),
        ("/f", "next"),
    ]
    assert facts.head_in_body == ["meta robots"]
    assert facts.deprecated == ["center"] and facts.plugins == ["embed"]
    assert facts.forms == ["http://x.example/s"] and facts.iframes == ["/frame"]
    assert [(i.src, i.sized) for i in facts.images] == [("/i.png", False), ("/sized.png", True)]
    assert facts.images_without_alt == ["/sized.png"] and facts.placeholder


def test_language_codes() -> None:
    for good in ("en", "en-GB", "zh-Hant-TW", "es-419", "fil", "de-de"):
        assert valid_language(good), good
    for bad in ("en-uk", "jp", "en_us", "english", "x-default", ""):
        assert not valid_language(bad), bad
    assert valid_language("x-default", x_default=True)


def _response(*headers: tuple[str, str], body: bytes = b"x" * 2000, **kw: object) -> FetchResult:
    return FetchResult(URL, URL, 200, headers=make_headers(headers), body=body, **kw)  # type: ignore[arg-type]


DRESSED = (
    ("content-type", "text/html; charset=utf-8"),
    ("content-encoding", "gzip"),
    ("etag", '"1"'),
    ("x-content-type-options", "nosniff"),
    ("content-security-policy", "default-src 'self'"),
    ("strict-transport-security", "max-age=31536000"),
    ("x-frame-options", "DENY"),
    ("referrer-policy", "no-referrer"),
)


# Strict-Transport-Security values browsers ignore (RFC 6797 6.1: max-age is required, 0
# forgets the host) or keep.
_HSTS_IGNORED = [
    (sent, "hsts_missing")
    for sent in (
        "max-age=0",
        "includeSubDomains; preload",
        "max-age=",
        "max-age=-1",
        "max-age=1e6",
        "max-age=00",
    )
]
_HSTS_KEPT = (
    'max-age="31536000"',
    " Max-Age = 600 ; includeSubDomains",
    "preload; max-age=1",
    "max-age=" + "9" * 5000,
)


def test_a_well_served_page_has_nothing_to_report() -> None:
    assert _codes(_page(html("clean"), response=_response(*DRESSED))) == set()
    for sent in _HSTS_KEPT:
        served = _response(*DRESSED[:5], ("strict-transport-security", sent), *DRESSED[6:])
        assert _codes(_page(html("clean"), response=served)) == set(), sent
    # Only the first header counts (what browsers do).
    twice = _response(*DRESSED, ("strict-transport-security", "max-age=0"))
    assert _codes(_page(html("clean"), response=twice)) == set()
    zero_first = _response(*DRESSED[:5], ("strict-transport-security", "max-age=0"), *DRESSED[5:])
    assert _codes(_page(html("clean"), response=zero_first)) == {"hsts_missing"}


@pytest.mark.parametrize(
    ("response", "code"),
    [
        (_response(*DRESSED[:1], *DRESSED[2:]), "compression_missing"),
        (_response(*DRESSED[:2], *DRESSED[3:]), "cache_validator_missing"),
        (_response(*DRESSED[:3], *DRESSED[4:]), "x_content_type_options_missing"),
        (_response(*DRESSED[:4], *DRESSED[5:]), "csp_missing"),
        (_response(*DRESSED[:5], *DRESSED[6:]), "hsts_missing"),
        *(
            (_response(*DRESSED[:5], ("strict-transport-security", sent), *DRESSED[6:]), code)
            for sent, code in _HSTS_IGNORED
        ),
        (_response(*DRESSED[:6], *DRESSED[7:]), "x_frame_options_missing"),
        (_response(*DRESSED[:7]), "referrer_policy_missing"),
        (_response(*DRESSED[:7], ("referrer-policy", "unsafe-url")), "referrer_policy_missing"),
        (_response(*DRESSED, ("refresh", "0; url=/elsewhere")), "refresh_header"),
        (_response(("content-type", "text/html"), *DRESSED[1:]), "charset_missing"),
        (_response(*DRESSED, ("x-robots-tag", "googlebot: nofollow")), "nofollow_page"),
        (_response(*DRESSED, ("x-robots-tag", "nosnippet")), "nosnippet"),
        (_response(*DRESSED, body=b"x" * (1024 * 1024 + 1)), "html_too_large"),
        (_response(*DRESSED, truncated=True), "html_too_large"),
        (
            _response(*DRESSED, ("link", '<https://example.com/other>; rel="canonical"')),
            "canonical_header_mismatch",
        ),
    ],
)
def test_response_rules(response: FetchResult, code: str) -> None:
    document = html("p", head=f'<link rel="canonical" href="{URL}">')
    assert _codes(_page(document, response=response)) == {code}


@pytest.mark.parametrize(
    ("body", "code", "evidence"),
    [
        (
            '<img src="http://example.com/a.png" alt="A" width="1" height="1">'
            '<script src="http://cdn.example.net/x.js"></script>'
            '<link rel="stylesheet" href="http://example.com/s.css">'
            '<img src="//example.com/b.png" alt="B" width="1" height="1">',
            "mixed_content",
            {
                "resources": [
                    "http://example.com/a.png",
                    "http://example.com/s.css",
                    "http://cdn.example.net/x.js",
                ]
            },
        ),
        (
            '<a href="http://www.example.com/old">Old</a><a href="http://other.test/">Other</a>'
            '<a href="/fine">Fine</a>',
            "https_links_to_http",
            {"links": ["http://www.example.com/old"]},
        ),
    ],
)
def test_https_pages_loading_or_linking_over_http(
    body: str, code: str, evidence: dict[str, list[str]]
) -> None:
    page = _page(html("p", body=words("p") + body), response=_response(*DRESSED))
    [found] = [f for f in page_findings(page, Thresholds()) if f.code == code]
    assert sorted(found.data["evidence"][next(iter(evidence))]) == sorted(
        next(iter(evidence.values()))
    )
    # A scheme-relative URL stays https here, but is its own (notice) finding.
    relative = {"protocol_relative_resource"} if "//example.com/b.png" in body else set()
    assert _codes(page) == {code} | relative
    # The same page served over http: its scheme is its finding, not these.
    plain = "http://example.com/garden/care"
    served = FetchResult(plain, plain, 200, headers=make_headers(DRESSED[:4]), body=b"x" * 2000)
    assert code not in _codes(replace(page, url=plain, response=served))
    assert "hsts_missing" not in _codes(replace(page, url=plain, response=served))


def test_relative_urls_under_a_base_href_resolve_against_it() -> None:
    body = words("p") + '<img src="a.png" alt="A" width="1" height="1"><a href="old">Old</a>'
    based = _page(
        html("p", head='<base href="http://example.com/">', body=body), response=_response(*DRESSED)
    )
    evidence = {f.code: f.data["evidence"] for f in page_findings(based, Thresholds())}
    assert evidence == {  # the page's own /logo.png and link to / too
        "mixed_content": {"resources": ["http://example.com/a.png", "http://example.com/logo.png"]},
        "https_links_to_http": {"links": ["http://example.com/old", "http://example.com/"]},
    }
    secure = '<base href="https://example.com/x/">'
    assert _codes(_page(html("p", head=secure, body=body), response=_response(*DRESSED))) == set()


@pytest.mark.parametrize(
    ("head", "body", "code"),
    [
        # The page's own alternate is another URL under the base.
        ('<link rel="alternate" hreflang="en" href="care">', "", "hreflang_missing_self"),
        ('<link rel="canonical" href="care">', "", "canonical_other_host"),
        ('<link rel="canonical" href="./">', "", "canonical_to_root"),
        ("", '<a href="admin">Admin</a>', "link_to_local_address"),
        ("", '<form action="search"><input name="q"></form>', "form_insecure_action"),
    ],
)
def test_every_relative_url_of_the_markup_resolves_against_the_base(
    head: str, body: str, code: str
) -> None:
    """Each rule that resolves a URL of the markup reads it against the page's base: the
    page without it has no such finding; with a base it has, and an ignored base (a
    javascript: one, an invalid one) changes nothing."""
    bases = {
        "hreflang_missing_self": "/other/",
        "canonical_other_host": "https://elsewhere.example/",
        "canonical_to_root": "/",
        "link_to_local_address": "http://192.168.1.1/",
        "form_insecure_action": "http://example.com/",
    }
    served = _response(*DRESSED)

    def codes(base: str) -> set[str]:
        written = f'<base href="{base}">' if base else ""
        page = _page(html("p", head=written + head, body=words("p") + body), response=served)
        return _codes(page)

    assert code not in codes("")
    assert code in codes(bases[code])
    for ignored in ("javascript:void(0)", "https://example.com:99999/"):
        assert code not in codes(ignored)
    # An empty action posts to the page's own (https) URL, whatever the base.
    if code == "form_insecure_action":
        empty = html("p", head=f'<base href="{bases[code]}">', body='<form action=""></form>')
        assert code not in _codes(_page(empty, response=served))


def test_a_link_header_resolves_against_the_pages_url_not_its_base() -> None:
    """The Link header is no part of the document: its canonical is read against the
    response's URL, the HTML's against the base."""
    header = ("link", '<care>; rel="canonical"')  # /garden/care: the page itself

    def codes(head: str) -> set[str]:
        document = html("p", head='<base href="/other/">' + head, body=words("p"))
        return _codes(_page(document, response=_response(*DRESSED, header)))

    assert "canonical_header_mismatch" in codes('<link rel="canonical" href="care">')
    assert "canonical_header_mismatch" not in codes(f'<link rel="canonical" href="{URL}">')


def test_a_small_page_need_not_be_compressed_and_a_temporary_redirect_is_named() -> None:
    small = _response(*DRESSED[:1], *DRESSED[2:], body=b"x" * 1024)
    assert _codes(_page(html("clean"), response=small)) == set()
    hop = RedirectHop("https://example.com/old", 302, "/garden/care")
    moved = _page(html("clean"), redirects=1, response=_response(*DRESSED, redirect_chain=(hop,)))
    assert _codes(moved) == {"redirect_temporary"}


@pytest.mark.parametrize(
    ("url", "code"),
    [
        ("https://example.com/a%20b", "url_space"),
        ("https://example.com/caf%C3%A9", "url_non_ascii"),  # and no uppercase letter in it
        ("https://example.com/a//b", "url_multiple_slashes"),
        ("https://example.com/a?w=1&x=2&y=3&z=4", "url_too_many_parameters"),
    ],
)
def test_url_rules(url: str, code: str) -> None:
    assert _codes(_page(html("clean"), url=url)) == {code}


def _alternates(*pairs: tuple[str, str]) -> str:
    return "".join(f'<link rel="alternate" hreflang="{c}" href="{h}">' for c, h in pairs)


@pytest.mark.parametrize(
    ("head", "code"),
    [
        ('<link rel="canonical" href="https://example.com/">', "canonical_to_root"),
        ('<link rel="canonical" href="https://other.example/garden/care">', "canonical_other_host"),
        ('<link rel="canonical" href="">', "canonical_empty"),
        (_alternates(("en-UK", URL), ("x-default", URL)), "hreflang_invalid_code"),
        (_alternates(("en", URL)), "hreflang_missing_x_default"),
        (
            _alternates(("en", "https://example.com/en"), ("x-default", "https://example.com/en")),
            "hreflang_missing_self",
        ),
        (_alternates(("en", URL), ("de", URL), ("x-default", URL)), "hreflang_multiple_languages"),
        (_alternates(("en", "/garden/care"), ("x-default", URL)), "hreflang_relative"),
        (
            '<script type="application/ld+json">{"@context": "https://schema.org", '
            '"@graph": [{"@type": "Thing"}, {"name": "no type"}]}</script>',
            "structured_data_incomplete",
        ),
        ('<meta name="robots" content="noimageindex">', "noimageindex"),
    ],
)
def test_head_rules(head: str, code: str) -> None:
    assert _codes(_page(html("p", head=head))) == {code}


def test_complete_json_ld_and_a_www_canonical_are_fine() -> None:
    graph = (
        '<script type="application/ld+json">[{"@context": "https://schema.org", "@type": "Thing"},'
        '{"@context": "https://schema.org", "@graph": [{"@type": "Organization", '
        '"name": "Gardens", "url": "https://example.com/", "logo": "/logo.png"}]}]</script>'
    )
    www = '<link rel="canonical" href="https://www.example.com/garden/care">'
    assert _codes(_page(html("p", head=graph + www))) == set()


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ('<a href="/x">Click here!</a>', "link_text_generic"),
        ('<a href="/x"><img src="/i.png" width="1" height="1"></a>', "link_text_empty"),
        ('<form action="/s"></form>', "form_on_http_page"),
        ("<h4>Down two</h4>", "headings_out_of_order"),  # after the <h2>,
    ],
)
def test_body_rules(body: str, code: str) -> None:
    page = _page(html("p", body=words("p") + body), url="http://example.com/p")
    found = _codes(page)
    assert code in found and found <= {code, "img_alt_missing"}


def test_thresholds_of_the_new_checks() -> None:
    document = html("p", h1=("h" * 71,), body=words("p") + "<br>" * 1500)
    assert _codes(_page(document)) == {"h1_too_long", "dom_too_large"}
    relaxed = Thresholds(h1_max_chars=71, dom_max_nodes=2000)
    assert _codes(_page(document), relaxed) == set()


# Checks the fixture site does not plant, tested on given pages above: timings and limits a
# loopback site cannot show without slowing every test, and those older than the rule.
UNPLANTED = {
    "page_unreachable",
    "too_many_redirects",
    "slow_response",
    "title_too_short",
    "title_multiple",
    "meta_description_too_long",
    "meta_description_multiple",
    "canonical_multiple",
    "canonical_relative",
    "too_many_links",
    "dead_end",
    "url_too_long",
    "url_underscore",
}
# Planted by a site of their own (tests/integration/test_site_audit.py): the fixture site
# has a robots.txt and sitemaps.
SITE_FILES = {"robots_txt_missing", "sitemap_missing"}
# Planted by a site of its own (tests/integration/test_site_audit_sitemaps.py): a sitemap file
# over the protocol's limits.
SITEMAP_FILES = {"sitemap_too_large"}
# Planted by the rendering fixture site (tests/fakes/render_site.py, render "js" only).
RENDERED = {code for code, _path in RENDER_PLANTED}
# HTTPS_ONLY: planted by the https fixture site (tests/fakes/tls_site.py), the fixture site
# being http.
# Planted by a site of their own over several audits (tests/integration/
# test_site_audit_structure.py): an orphan needs a previous audit, a heavy page a low threshold.
STRUCTURE = {"orphan_page", "page_weight_high"}


def test_every_other_check_is_planted_in_the_fixture_site() -> None:
    planted = {code for code, _path in PLANTED}
    unplanted = UNPLANTED | SITE_FILES | SITEMAP_FILES | STRUCTURE | RENDERED | HTTPS_ONLY
    assert {c.code for c in CATALOGUE} - unplanted == planted
    assert not RENDERED & planted  # the rendering checks are found only on a rendered audit
    assert not HTTPS_ONLY & planted  # and these only on https pages
    assert {code for code, _path in TLS_PLANTED} >= HTTPS_ONLY


def test_every_check_has_a_category_and_a_fix() -> None:
    served = catalogue()
    assert [c["code"] for c in served] == [c.code for c in CATALOGUE]
    assert set(GUIDE) == {c.code for c in CATALOGUE}
    for check in served:
        assert check["category"] in CATEGORIES, check
        fix = check["how_to_fix"]
        assert fix and "\n" not in fix and len(fix) <= 100, check


@pytest.mark.parametrize(
    ("head", "code"),
    [
        ('<img src="/p.gif" alt="Pixel" width="1" height="1">', "head_invalid_element"),
        ('<script src="/app.js"></script>', "render_blocking_script"),
        ('<meta name="robots" content="index, nofolow">', "robots_directive_unknown"),
        (
            '<meta name="viewport" content="width=device-width, maximum-scale=1">',
            "viewport_zoom_disabled",
        ),
        ('<meta name="viewport" content="initial-scale=1">', "viewport_not_device_width"),
        ('<meta charset="windows-1252">', "charset_not_utf8"),
    ],
)
def test_head_markup_rules(head: str, code: str) -> None:
    assert _codes(_page(html("p", viewport="viewport" not in head, head=head))) == {code}


def test_what_a_browser_keeps_in_the_head_is_no_finding() -> None:
    """A tracking pixel inside <noscript>, async, deferred and module scripts, JSON-LD."""
    head = (
        '<noscript><img src="/px.gif" alt="px" width="1" height="1"></noscript>'
        '<script async src="/a.js"></script><script defer src="/d.js"></script>'
        '<script type="module" src="/m.js"></script><script>var small = 1;</script>'
        '<meta name="robots" content="max-image-preview:large, unavailable_after: 2030-01-01">'
    )
    assert _codes(_page(html("p", head=head))) == set()
