"""The audit's page reader: the facts of a page as a browser's parser (Lexbor, WHATWG HTML,
scripting on) builds its DOM, a few of them as the markup was written, and bounds on hostile
pages."""

from __future__ import annotations

import random
import re

import pytest
from bench.lib.auditsite import page_html

from seojobs.kinds.site_audit.page import MAX_TEXT, count_words, parse_page
from tests.fakes.audit_site import HOME, PAGES
from tests.unit.test_fetch_html import FRAGMENTS as HEAD_FRAGMENTS


def test_a_bench_page_is_read_whole() -> None:
    document = page_html(1234, 5000).decode()
    facts = parse_page(document)
    assert facts.titles == ["Page 1234 of the bench site"] and facts.doctype
    assert facts.canonicals == ["/p/1234"] and facts.lang == "en" and facts.viewport
    assert facts.charsets == ["utf-8"] and facts.h1 == ["Page 1234"]
    assert (facts.heads, facts.bodies, facts.head_invalid, facts.head_in_body) == (1, 1, [], [])
    hrefs = re.findall(r'<a href="([^"]+)">', document)
    assert [link.href for link in facts.links] == hrefs and len(hrefs) == 21
    assert facts.links[0].text == "Home" and facts.links[1].text.endswith("of the bench site")
    assert [image.alt for image in facts.images] == [f"Figure {i} of page 1234" for i in (0, 4, 8)]
    # Every element is written with its start tag here (no implied ones).
    assert facts.elements == len(re.findall(r"<[a-z]", document))
    # The visible text is the body's, tags taken out.
    body = document.split("<body>")[1]
    assert facts.words == count_words(re.sub(r"<[^>]+>", " ", body))
    assert facts.html_chars == len(document)


@pytest.mark.parametrize("path", ["/", *PAGES])
def test_every_fixture_page_reads_its_head_and_body_tags_and_links(path: str) -> None:
    written = HOME if path == "/" else PAGES[path]
    document = written.replace("{base}", "http://h").replace("{elsewhere}", "http://x")
    facts = parse_page(document)
    assert facts.heads == (2 if path == "/head-multiple" else 1)
    assert facts.bodies == (2 if path == "/body-multiple" else 1)
    hrefs = [h.strip() for h in re.findall(r'<a\b[^>]*\bhref="([^"]*)"', document)]
    followed = [
        h
        for h in hrefs
        if h and not h.lower().startswith(("javascript:", "#", "mailto:", "tel:", "data:"))
    ]
    assert [link.href for link in facts.links] == followed


# Where a browser's parser and a tokenizer that reads tags as written (html.parser, which
# read pages before) disagree, the reader has the browser's answer: what Googlebot's Chromium
# builds is what search engines read.
@pytest.mark.parametrize(
    ("document", "facts"),
    [
        # Scripting is on: a <noscript> holds text, so a tracking pixel in one in the head ends
        # nothing, and is no image of the page.
        (
            '<head><noscript><img src="/px.gif"></noscript><link rel="canonical" href="/a">'
            "</head><body><p>x</p></body>",
            {"canonicals": ["/a"], "head_in_body": [], "head_invalid": [], "images": []},
        ),
        # A <title> holds text, never elements: its tags are part of it.
        ("<title>A <b>b</b> c</title>", {"titles": ["A <b>b</b> c"]}),
        # A heading's start tag closes a heading left open (html.parser read no h1 at all).
        ("<h1>One<h2>Two</h2><p>x</p>", {"h1": ["One"], "h2_texts": ["Two"]}),
        # <html>, <head> and <body> are in every DOM, written or not.
        ("<p>x</p>", {"elements": 4, "heads": 0, "bodies": 0}),
        # A doctype after content is ignored (the page renders in quirks mode).
        ("<p>x</p><!doctype html>", {"doctype": False}),
        ("<!-- first --><!DOCTYPE html><p>x</p>", {"doctype": True}),
        # What a <template> holds is no part of the page.
        ('<template><a href="/t">t</a></template><p>x</p>', {"links": [], "words": 1}),
        # An omitted </head> is valid HTML: nothing ended the head early.
        ("<html><head><title>t</title><body><p>x</p>", {"head_invalid": []}),
        # A <div> ends the (implied) head: the description after it is the body's.
        (
            '<title>t</title><div>x</div><meta name="description" content="d">',
            {"head_in_body": ["meta description"], "descriptions": ["d"]},
        ),
        # A script in the implied head blocks rendering as one in a written <head>.
        ('<script src="/a.js"></script><p>x</p>', {"blocking_scripts": ["/a.js"]}),
        # NUL is dropped from the body's text, U+FFFD in a title and in attribute values.
        (
            '<title>a\x00b</title><h1>c\x00d</h1><img src="/i" alt="e\x00f">',
            {"titles": ["a\ufffdb"], "h1": ["cd"], "images_without_alt": []},
        ),
    ],
)
def test_where_a_browser_and_a_tag_tokenizer_differ_the_reader_is_the_browser(
    document: str, facts: dict[str, object]
) -> None:
    read = parse_page(document)
    assert {name: getattr(read, name) for name in facts} == facts


def test_links_left_open_are_closed_and_reopened_where_a_browser_does() -> None:
    facts = parse_page('<p><a href="/a">open <b>bold</b></p><p>after</p>')
    # The link ends with its paragraph, and a browser opens it again in the next one (an <a>
    # left open is a formatting element): "after" is a link too. html.parser read one link,
    # never closed, without text.
    texts = [(link.href, link.text) for link in facts.links]
    assert texts == [("/a", "open bold"), ("/a", "after")]


def test_images_inside_a_link_speak_for_it_in_their_place() -> None:
    facts = parse_page(
        '<a href="/a" title="Label">before <span><img src="/i" alt="Pic"></span> after</a>'
        '<a href="#top"><img src="/j" alt="Top"></a><a href="/b">plain</a>'
    )
    assert [link.text for link in facts.links] == ["Label before Pic after", "plain"]


@pytest.mark.parametrize(
    ("document", "heads", "bodies"),
    [
        ("<head></head><head></head><body></body>", 2, 1),
        ("<HEAD></HEAD><Body><body class=x>", 1, 2),
        # A browser reads these as text: no tag.
        ('<!--[if IE]><body class="ie"><![endif]--><body>', 0, 1),
        ("<head><script>document.write('<body>')</script></head><body><body>", 1, 2),
        ("<header><p>x</p></header><body>", 0, 1),
    ],
)
def test_head_and_body_tags_are_counted_as_written(document: str, heads: int, bodies: int) -> None:
    facts = parse_page(document)
    assert (facts.heads, facts.bodies) == (heads, bodies)


@pytest.mark.parametrize(
    ("head", "invalid"),
    [
        ('<title>t</title><img src="/p.gif"><meta name="x" content="y">', ["img"]),
        ("<title>t</title><div>x</div>", ["div"]),
        ("<title>t</title><noscript><img src=/p.gif></noscript>", []),
        ("<title>t</title><!-- <div> --><script>'<div>'</script>", []),
        ("<template><div>x</div></template><title>t</title>", []),
    ],
)
def test_the_element_that_ends_the_head_early_is_named(head: str, invalid: list[str]) -> None:
    assert parse_page(f"<html><head>{head}</head><body><p>x</p></body>").head_invalid == invalid


# The head reader's fragments, and the body's elements the page reader reads.
FRAGMENTS = [
    *HEAD_FRAGMENTS,
    *(piece for document in PAGES.values() for piece in document.split("><")[:40]),
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
    "<svg>",
    "<title>",
    "<table><td>",
    "<template>",
]


def test_any_mix_of_fragments_is_read_into_consistent_facts() -> None:
    rng = random.Random(13)
    for _ in range(1000):
        document = "".join(rng.choice(FRAGMENTS) for _ in range(rng.randint(1, 14)))
        facts = parse_page(document)
        assert facts.elements >= 3 and facts.html_chars == len(document), document
        assert all(link.href and link.text is not None for link in facts.links), document
        assert facts.text_chars >= facts.words and len(facts.text_hash) == 32, document


# Hostile pages (the fetcher caps a page at 2 MB): each is read in bounded time and memory.
M = 2_000_000


@pytest.mark.parametrize(
    "document",
    [
        "<div>" * (M // 5) + "x",
        "<ul><li>" * (M // 8),
        '<a href="/a">x<table><tr><td>' * (M // 30),
        "<h1>x<table><tr><td>" * (M // 21),
        "<b><i>" * (M // 6),
        '<a href="/a">' + "<div>" * 2000 + '<span><img src="/i" alt="a"></span>' * 50_000,
        "<body>" + "<div>" * 4000 + "<title>t</title>" * 2000,
    ],
    ids=[
        "divs",
        "lists",
        "links-in-tables",
        "headings-in-tables",
        "formatting",
        "images",
        "titles",
    ],
)
def test_deeply_nested_pages_are_read_up_to_a_bound(document: str) -> None:
    facts = parse_page(document)
    assert 3 <= facts.elements <= 200_000
    assert all(
        len(text) <= MAX_TEXT for text in facts.h1 + [link.text or "" for link in facts.links]
    )


def test_a_huge_attribute_is_read() -> None:
    href = "/" + "x" * M
    facts = parse_page(f'<a href="{href}" title="{"t" * M}">t</a><img alt="{"a" * M}">')
    assert [link.href for link in facts.links] == [href]
    assert len(facts.links[0].text or "") == MAX_TEXT and len(facts.images) == 1
