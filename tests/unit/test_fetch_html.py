"""Head parsing: only what a browser would put in <head> counts, and bad markup is survived."""

from __future__ import annotations

import pytest

from seojobs.fetch import parse_head
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
