"""Head parsing: only what a browser would put in <head> counts, and bad markup is survived."""

from __future__ import annotations

import random

import pytest

from seojobs.fetch import html, parse_head
from seojobs.fetch.html import HeadInfo
from seojobs.fetch.result import decode_body


def test_robots_meta_canonical_and_base_are_read() -> None:
    info = parse_head(
        "<!DOCTYPE html><html><head><title>T</title>"
        '<meta name="Robots" content="noindex">'
        '<META NAME="googlebot" CONTENT="nofollow"/>'
        '<meta name="description" content="not robots">'
        '<base href="/base/"><base href="/ignored/">'
        '<link rel="alternate canonical" href=" /c ">'
        "</head><body></body></html>"
    )
    assert info.robots_meta == [("robots", "noindex"), ("googlebot", "nofollow")]
    assert info.canonicals == ["/c"]
    assert info.base_href == "/base/"


@pytest.mark.parametrize(
    "document",
    [
        '<html><head></head><body><link rel="canonical" href="/c"></body></html>',
        '<head><div>moved</div><link rel="canonical" href="/c">',  # a body element ends head
        '<head>visible text<link rel="canonical" href="/c">',
        '<html><body><meta name="robots" content="noindex"><link rel="canonical" href="/c">',
    ],
)
def test_tags_after_the_head_ends_are_ignored(document: str) -> None:
    info = parse_head(document)
    assert info.canonicals == []
    assert info.robots_meta == []


def test_scripts_titles_and_noscript_pixels_do_not_end_the_head() -> None:
    info = parse_head(
        "<head><title>a <b> title</title>"
        "<script>if (a < b) { document.write('<div>') }</script>"
        "<style>p > a {}</style>"
        '<noscript><img src="/pixel.gif"></noscript>'
        '<link rel="canonical" href="/c"></head>'
    )
    assert info.canonicals == ["/c"]


@pytest.mark.parametrize(
    "document",
    [
        "<head><script>var end = '</head>';</script><link rel=canonical href=/c></head>",
        "<head><!-- </head> --><link rel=canonical href=/c></head><body>",
        "<HEAD><link rel=canonical href=/c></HEAD ><BODY><link rel=canonical href=/x>",
        "<head><link rel=canonical href=/c>" + "<meta name=x>" * 2_000 + "</head><p>x",
    ],
    ids=["in-script", "in-comment", "uppercase", "long-head"],
)
def test_a_head_end_tag_that_is_not_the_end_of_the_head_is_read_past(document: str) -> None:
    # The parser is fed up to the first "</head>" first: where that is not the real end of the
    # head (in a script or a comment), it reads on, as if fed the whole document.
    assert parse_head(document).canonicals == ["/c"]


@pytest.mark.parametrize(
    "document",
    [
        "",
        "not html at all",
        "<<<>>><!-- unterminated",
        "<html><head><meta name=robots content=noindex><![if !IE]><title>x</ti<<tle>",
        "<head><link rel=canonical>",  # no href
        "\x00\ufffd<head>" + "<meta name='x'>" * 10_000,
    ],
)
def test_malformed_markup_never_raises(document: str) -> None:
    info = parse_head(document)
    assert info.canonicals == []


def test_unquoted_attributes_in_broken_markup_still_count() -> None:
    info = parse_head("<html><head><meta name=robots content=noindex><link rel=canonical href=/c")
    assert info.robots_meta == [("robots", "noindex")]


@pytest.mark.parametrize(
    ("body", "content_type", "text"),
    [
        ("é".encode(), "text/html; charset=utf-8", "é"),
        ("é".encode("latin-1"), "text/html; charset=ISO-8859-1", "é"),
        (
            b'<meta charset="windows-1252">\x80',
            "text/html",
            '<meta charset="windows-1252">€',
        ),
        (b"\xef\xbb\xbfhi", "text/html; charset=latin-1", "hi"),  # a BOM wins
        (b"\xff", "text/html; charset=no-such-codec", "\ufffd"),
        (b"plain", None, "plain"),
    ],
)
def test_body_decoding(body: bytes, content_type: str | None, text: str) -> None:
    assert decode_body(body, content_type) == text


# -- the plain-markup scanner against html.parser ----------------------------------------------


def _read(info: HeadInfo) -> tuple[object, ...]:
    """What diagnostics use of a head (``malformed`` only says that html.parser gave up)."""
    return info.robots_meta, info.canonicals, info.base_href


PLAIN_HEADS = [
    "<!doctype html>\n<html lang=en><head>\n<meta charset=utf-8>\n<title>Page | Site</title>\n"
    '<meta name=robots content="noindex, follow">\n<link rel=canonical href="/p/1">\n'
    "</head>\n<body><p>text</p></body></html>\n",
    '<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Strict//EN">\n<HTML><HEAD>'
    "<META NAME='ROBOTS' CONTENT='NOINDEX'/><LINK REL=\"Canonical\" HREF=\"/a?x=1&amp;y=2\" />"
    "</HEAD><BODY>",
    "<html><head><!-- a comment --><!--[if lt IE 9]><script src=x.js></script><![endif]-->"
    '<base href=\'/b/\'><link rel="alternate canonical" href=" /c "></head>',
    '<head><script type="application/ld+json">{"@type": "Thing", "a": "<b>"}</script>'
    "<style>p > a { color: red }</style><noscript><img src=/pixel.gif></noscript>"
    '<meta name="googlebot" content="nofollow"><link rel=canonical href=/c/></head>',
    "<head><title>a <b> title</title><template><meta name=robots content=noindex></template>"
    "<link rel=canonical href=/1><link rel=canonical href=/2>\n\n</head>",
    "<head><meta name=robots content=noindex><div>body starts</div><link rel=canonical href=/late>",
    "<head>\n  visible text <link rel=canonical href=/late>",
    "<head><meta name=robots><meta content=noindex name=robots data-x>"
    '<link rel="canonical" href=""><link rel=canonical href="/ok" rel=other></head>',
    "<head><script>var end = '</head>';</script><link rel=canonical href=/c></head>",
    "<head><script>document.write('</div>' + (a</b))</SCRIPT><link rel=canonical href=/c>",
    "<head><!-- </head> --><link rel=canonical href=/c></head><body>",
    "<head><link rel=canonical href=/c>" + "<meta name=x>" * 500 + "</head><p>x",
    "<head><link rel=canonical href=/c>",
    "",
    "   \n\t",
    "not html at all",
]


@pytest.mark.parametrize("document", PLAIN_HEADS)
def test_plain_heads_are_scanned_and_read_as_html_parser_reads_them(document: str) -> None:
    scanner = html._HeadParser()
    assert html.scan(document, scanner), "plain markup left to html.parser"
    assert _read(scanner.info) == _read(html._parse_with_stdlib(document))
    assert parse_head(document) == scanner.info


ODD_HEADS = [
    "<head>&nbsp;<link rel=canonical href=/c></head>",  # a reference that is whitespace
    "<head>&amp;<link rel=canonical href=/c></head>",
    "<head><meta name=robots content=a=b><link rel=canonical href=/c></head>",
    "<head><meta\vname=robots content=noindex></head>",
    "<head><meta name=robots content=noindex / ><link rel=canonical href=/c></head>",
    "<head><link rel=canonical href=/c\xa0x></head>",
    "<head><?php echo 1 ?><link rel=canonical href=/c></head>",
    "<head><!-- a -- b --><link rel=canonical href=/c></head>",
    "<head><!--><link rel=canonical href=/c></head>",
    "<head><!-- a -- ><link rel=canonical href=/c></head>",
    "<head><script><!--<script>x</script>--></script><link rel=canonical href=/c></head>",
    "<head><script>if (a</ b) {}</script><link rel=canonical href=/c></head>",
    "<head><script>x = '</ script>'; y()</script><link rel=canonical href=/c></head>",
    "<head><script></SCRIPT ><link rel=canonical href=/c></head>",
    "<head><script>never ends <link rel=canonical href=/c>",
    "<head><![CDATA[x]]><link rel=canonical href=/c></head>",
    "<head><link rel=canonical href=/c></head><![if !IE]><p>",
    "<head></ head><link rel=canonical href=/c>",
    "<head><a:b><link rel=canonical href=/c>",
    "<head><link rel=canonical href=/c",
    "<head>< link rel=canonical href=/c>",
    "<head><meta name=robots content='noindex\"'><link rel='canonical'href=/c></head>",
    "<<<>>><!-- unterminated",
]


@pytest.mark.parametrize("document", ODD_HEADS)
def test_markup_the_scanner_does_not_know_is_read_as_html_parser_reads_it(document: str) -> None:
    assert _read(parse_head(document)) == _read(html._parse_with_stdlib(document))


FRAGMENTS = [
    *(piece for document in PLAIN_HEADS + ODD_HEADS for piece in document.split("><")),
    "<",
    ">",
    " ",
    "\n",
    "&",
    "&#32;",
    "<head>",
    "</head>",
    "<title>",
    "</title>",
    "<script>",
    "</script>",
    "<noscript>",
    "</noscript>",
    "<!--",
    "-->",
    "<meta name=robots content=noindex>",
    '<link rel="canonical" href="/c">',
    "<base href=/b/>",
    "<p>",
    "x",
]


def test_any_mix_of_fragments_is_read_as_html_parser_reads_it() -> None:
    rng = random.Random(11)
    scanned = 0
    for _ in range(3000):
        document = "".join(rng.choice(FRAGMENTS) for _ in range(rng.randint(1, 12)))
        scanned += html.scan(document, html._HeadParser())
        assert _read(parse_head(document)) == _read(html._parse_with_stdlib(document)), document
    assert scanned > 300  # the mixes exercise the scanner, not only the fallback
