"""The audit's page reader reads plain markup with the scanner of ``seojobs.fetch.html`` and
anything else with html.parser, and the facts are the same either way."""

from __future__ import annotations

import random

import pytest
from bench.lib.auditsite import page_html

from seojobs.kinds.site_audit import page
from seojobs.kinds.site_audit.page import parse_page
from tests.fakes.audit_site import HOME, PAGES
from tests.unit.test_fetch_html import FRAGMENTS as HEAD_FRAGMENTS


def _filled(document: str) -> str:
    return document.replace("{base}", "http://127.0.0.1:1").replace("{elsewhere}", "http://x")


PLAIN_PAGES = [
    page_html(1234, 5000).decode(),  # bench/audit.py's pages
    page_html(7, 5000).decode(),
    _filled(HOME),
    *(_filled(document) for document in PAGES.values()),
    '<html lang="de"><head><title>T &amp; more</title><script type="application/ld+json">'
    '{"a": "<b>", "c": "&amp;"}</script><style>p > a {}</style></head><body>'
    "<h1>A&nbsp;heading</h1><p>caf&eacute; &lt;tag&gt; &#32;x</p>"
    '<a href="/a?x=1&amp;y=2" rel="NoFollow">a</a><a href=javascript:go()>j</a><a>no</a>'
    "<img src=/i.png alt=''><img src=/j.png alt=J><br/><!-- c --></body></html>",
    # Whitespace between elements is text: "One bold heading", not "One boldheading".
    "<title>A\n<b>b</b> c</title><h1>One <b>bold</b> heading</h1><p>x</p> <p>y</p>",
]


@pytest.mark.parametrize("document", PLAIN_PAGES)
def test_plain_pages_are_scanned_and_read_as_html_parser_reads_them(document: str) -> None:
    scanned = page._scanned(document)
    assert scanned is not None, "plain markup left to html.parser"
    assert scanned == page._parse_with_stdlib(document) == parse_page(document)


# The head reader's fragments, and the body's elements the page reader reads.
FRAGMENTS = [
    *HEAD_FRAGMENTS,
    *(piece for document in PLAIN_PAGES[2:] for piece in document.split("><")[:40]),
    "&nbsp;",
    "&notin",
    "<h1>",
    "</h1>",
    '<script type="application/ld+json">',
    "<style>",
    "</style>",
    "<a href=/x>",
    '<a href="/y" rel="nofollow">',
    "<a>",
    "</a>",
    "<img src=/i.png>",
    '<img alt="" src=/k.png/>',
    '<html lang="fr">',
    '<link rel=alternate hreflang=de href="/de">',
    "<b>",
    "</b>",
    " <i>",
    "x y",
    '{"k": 1}',
]


def test_any_mix_of_fragments_is_read_as_html_parser_reads_it() -> None:
    rng = random.Random(13)
    scanned = 0
    for _ in range(3000):
        document = "".join(rng.choice(FRAGMENTS) for _ in range(rng.randint(1, 14)))
        scanned += page._scanned(document) is not None
        assert parse_page(document) == page._parse_with_stdlib(document), document
    assert scanned > 300  # the mixes exercise the scanner, not only the fallback
