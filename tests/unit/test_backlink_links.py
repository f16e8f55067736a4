"""A donor's links: <a> and <area> with rel tokens, text or image alt, resolved against the
page or its <base href>; plain markup scanned, anything else read by html.parser, the same
links either way."""

from __future__ import annotations

import pytest

from seojobs.kinds.backlink_refresh import links as links_module
from seojobs.kinds.backlink_refresh.links import parse_links, rel_tokens, resolve

PAGE = "https://donor.test/blog/post"


def _summary(html: str) -> list[tuple[str, tuple[str, ...], str, bool]]:
    return [(k.href, k.rel, k.anchor_text, k.is_image_link) for k in parse_links(html).links]


def test_rel_tokens_split_on_whitespace_lowercased_each_once() -> None:
    assert rel_tokens(" NoFollow\tSPONSORED  ugc nofollow ") == ("nofollow", "sponsored", "ugc")
    assert rel_tokens("") == ()


@pytest.mark.parametrize(
    ("rel", "tokens"),
    [
        ("nofollow", ("nofollow",)),
        ("sponsored", ("sponsored",)),
        ("ugc", ("ugc",)),
        ("nofollow sponsored", ("nofollow", "sponsored")),
        ("UGC NoFollow", ("ugc", "nofollow")),
        ("noopener noreferrer", ("noopener", "noreferrer")),
    ],
)
def test_rel_combinations_are_kept_as_tokens(rel: str, tokens: tuple[str, ...]) -> None:
    [link] = parse_links(f'<a href="https://t.test/" rel="{rel}">x</a>').links
    assert link.rel == tokens


def test_text_image_and_area_links() -> None:
    html = (
        "<p><a href='/one'>Read <b>our</b>\n  review</a>"
        '<a href="https://t.test/"><img src="/logo.png" alt=" Target  logo "></a>'
        '<a href="https://t.test/x"><img src="/i.png" alt="ignored"> Words</a>'
        '<a href="https://t.test/y"><img src="/i.png"></a>'
        '<map><area href="https://t.test/map" alt="Map spot"></map>'
        '<a href="#top">top</a><a href="mailto:a@b.c">m</a><a href="javascript:go()">j</a>'
        "<a>no href</a></p>"
    )
    assert _summary(html) == [
        ("/one", (), "Read our review", False),
        ("https://t.test/", (), "Target logo", True),  # the img alt is its anchor text
        ("https://t.test/x", (), "Words", False),  # text beside the image: a text link
        ("https://t.test/y", (), "", True),  # an image without alt
        ("https://t.test/map", (), "Map spot", True),
    ]


def test_an_anchor_inside_an_open_one_closes_it_and_scripts_are_not_text() -> None:
    html = "<a href=/a>first<a href=/b>second<script>var x = '<b>';</script></a>"
    assert _summary(html) == [("/a", (), "first", False), ("/b", (), "second", False)]


def test_character_references_in_hrefs_and_text() -> None:
    [link] = parse_links('<a href="/a?x=1&amp;utm_source=y">Tom &amp; Jerry</a>').links
    assert (link.href, link.anchor_text) == ("/a?x=1&utm_source=y", "Tom & Jerry")


@pytest.mark.parametrize(
    ("base", "href", "resolved"),
    [
        (None, "/x", "https://donor.test/x"),
        (None, "other", "https://donor.test/blog/other"),
        (None, "../up", "https://donor.test/up"),
        (None, "//t.test/p", "https://t.test/p"),
        (None, "HTTPS://T.TEST:443/p#frag", "https://t.test/p"),
        ("/base/dir/", "rel", "https://donor.test/base/dir/rel"),
        ("https://cdn.test/a/", "rel", "https://cdn.test/a/rel"),
        ("https://cdn.test/a/", "/abs", "https://cdn.test/abs"),
        (None, "ftp://t.test/", None),
        (None, "http://a.test:99999/", None),
        (None, "http://user:pw@t.test/p", "http://t.test/p"),
    ],
)
def test_hrefs_resolve_against_the_base_href_or_the_page(
    base: str | None, href: str, resolved: str | None
) -> None:
    assert resolve(PAGE, base, href) == resolved


def test_the_first_base_href_counts() -> None:
    html = '<head><base href="/one/"><base href="/two/"></head><a href="x">x</a>'
    found = parse_links(html)
    assert found.base_href == "/one/"
    assert resolve(PAGE, found.base_href, found.links[0].href) == "https://donor.test/one/x"


PAGES = [
    '<html><head><base href="/b/"></head><body><a href=x rel="nofollow ugc">A <i>b</i></a>'
    '<a href="https://t.test/"><img alt=Logo src=/l.png></a><area href=/m alt=M></body></html>',
    "<a href=/a>first<a href=/b>second</a><p>caf&eacute; <a href='/c?x=1&amp;y=2'>c</a>",
]


@pytest.mark.parametrize("document", PAGES)
def test_plain_markup_is_scanned_and_read_as_html_parser_reads_it(document: str) -> None:
    scanned = links_module._LinkParser()
    assert links_module.scan(document, scanned, links_module._WITH_ATTRIBUTES)
    scanned._close()
    stdlib = links_module._LinkParser()
    stdlib.feed(document)
    stdlib.close()
    stdlib._close()
    assert scanned.found == stdlib.found == parse_links(document)


def test_markup_the_scanner_gives_up_on_is_read_by_html_parser() -> None:
    odd = "<a href=/x rel=nofollow>x<![if !IE]> y</a><a href = '/z' >z</a>"
    assert [(k.href, k.rel) for k in parse_links(odd).links] == [
        ("/x", ("nofollow",)),
        ("/z", ()),
    ]
