"""The site audit's page reader, sitemap reader and rules on given pages: the checks the
fixture site of tests/integration/test_site_audit.py does not plant (timing thresholds too)."""

from __future__ import annotations

import gzip
import re
from dataclasses import replace

import pytest

from seojobs.kinds.site_audit.checks import CATALOGUE, Page, page_findings
from seojobs.kinds.site_audit.page import count_words, parse_page
from seojobs.kinds.site_audit.params import Thresholds
from seojobs.kinds.site_audit.sitemaps import read_sitemap
from tests.fakes.audit_site import html, words

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
                head='<link rel="canonical" href="https://a.example/"><link rel="canonical" href="https://b.example/">',
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
    assert read_sitemap(urlset, 10_000) == (False, ["https://a.example/?x=1&y=2"])
    index = b"<sitemapindex><sitemap><loc>https://a.example/s.xml</loc></sitemap></sitemapindex>"
    assert read_sitemap(gzip.compress(index), 10_000) == (True, ["https://a.example/s.xml"])


def test_a_gzipped_sitemap_is_opened_only_up_to_the_cap() -> None:
    locs = b"".join(b"<url><loc>https://a.example/%d</loc></url>" % n for n in range(1000))
    _index, urls = read_sitemap(gzip.compress(b"<urlset>" + locs + b"</urlset>"), 4096)
    assert 0 < len(urls) < 1000
    assert read_sitemap(b"\x1f\x8b not gzip at all", 4096) == (False, [])
