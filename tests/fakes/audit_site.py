"""A website for the site-audit tests: clean pages next to pages that each plant one issue.

``PLANTED`` says which (code, path) pairs an audit must report, and nothing else may be
reported: the clean pages and the home page are clean by every check's default threshold.
The site counts requests per path, so a test can prove a page was fetched once.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from urllib.parse import urlsplit
from xml.sax.saxutils import escape

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from tests.fakes.server import serve

ROBOTS = "User-agent: *\nDisallow: /private/\n"
_WORDS = [
    "garden",
    "soil",
    "water",
    "light",
    "seed",
    "root",
    "leaf",
    "stem",
    "flower",
    "fruit",
    "tree",
    "shrub",
    "grass",
    "moss",
    "fern",
    "compost",
    "mulch",
    "spade",
    "rake",
    "hoe",
    "shears",
    "hose",
    "barrow",
    "trowel",
    "fork",
    "pot",
    "tray",
    "frame",
    "bed",
    "border",
]


def words(seed: str, n: int = 240) -> str:
    """``n`` words of text that differ from any other seed's (duplicate checks hash it)."""
    offset = sum(map(ord, seed))
    return seed + " " + " ".join(_WORDS[(offset + i * i) % len(_WORDS)] for i in range(n))


def html(
    slug: str,
    *,
    title: str | None = None,
    description: str | None = None,
    h1: tuple[str, ...] | None = None,
    h2: bool = True,
    lang: str | None = "en",
    viewport: bool = True,
    doctype: bool = True,
    favicon: bool = True,
    social: tuple[bool, bool] = (True, True),  # (Open Graph, Twitter card)
    head: str = "",
    body: str | None = None,
    image: str = '<img src="/logo.png" alt="Fixture logo" width="120" height="40">',
    links: tuple[str, ...] = ("/",),
) -> str:
    """A page clean by every check, unless an argument plants something."""
    title = f"Fixture page {slug} on garden care" if title is None else title
    description = (
        f"This fixture page, {slug}, explains one part of garden care in enough words to be "
        "a useful description."
        if description is None
        else description
    )
    h1 = (f"Garden care: {slug}",) if h1 is None else h1
    open_graph, twitter = social
    parts = [
        "<!doctype html>" if doctype else "",
        f'<html lang="{lang}">' if lang else "<html>",
        "<head>",
        f"<title>{title}</title>" if title else "",
        f'<meta name="description" content="{description}">' if description else "",
        '<meta name="viewport" content="width=device-width">' if viewport else "",
        '<link rel="icon" href="/favicon.ico">' if favicon else "",
        (
            f'<meta property="og:title" content="{slug}">'
            f'<meta property="og:description" content="About {slug}">'
            '<meta property="og:image" content="https://images.example/og.png">'
            if open_graph
            else ""
        ),
        '<meta name="twitter:card" content="summary">' if twitter else "",
        head,
        "</head><body>",
        *(f"<h1>{text}</h1>" for text in h1),
        "<h2>Planting and care</h2>" if h2 else "",
        f"<p>{words(slug) if body is None else body}</p>",
        image,
        *(f'<a href="{href}">Read about {href}</a>' for href in links),
        "</body></html>",
    ]
    return "".join(parts)


BASE = "{base}"  # the site's own base URL, filled in when a page is served
ELSEWHERE = "{elsewhere}"  # another site's (the same app on another port)


def _canonical(path: str) -> str:
    return f'<link rel="canonical" href="{BASE}{path}">'


def _alternates(*pairs: tuple[str, str]) -> str:
    return "".join(
        f'<link rel="alternate" hreflang="{language}" href="{BASE}{path}">'
        for language, path in pairs
    )


def _self_alternates(path: str, *languages: str) -> str:
    return _alternates(*((language, path) for language in languages))


def _with(slug: str, body: str) -> str:
    """A clean page's body with something planted after its text."""
    return html(slug, body=words(slug) + body)


SAME_TEXT = words("twin text")
RICH_PRODUCT = {
    "@type": "Product",
    "name": "A spade",
    "image": "/spade.png",
    "description": "A garden spade.",
    "brand": {"@type": "Brand", "name": "Gardens"},
    "offers": {
        "@type": "Offer",
        "price": "20.00",
        "priceCurrency": "EUR",
        "availability": "InStock",
    },
}
RICH_EVENT = {
    "@type": "Event",
    "name": "Pruning day",
    "location": "The garden",
    "endDate": "2026-05-01",
    "description": "Pruning the roses.",
    "image": "/roses.png",
    "offers": "free",
    "eventStatus": "EventScheduled",
    "organizer": "The gardeners",
    "performer": "The gardeners",
}
# What Google requires, and all it recommends but recipeInstructions.
RICH_RECIPE = {
    "@type": "Recipe",
    "name": "Compost",
    "image": "/compost.png",
    "author": "The gardeners",
    "recipeIngredient": ["leaves", "grass"],
}
# Microdata: a Product with all Google recommends, but neither offers, review nor rating.
MICRODATA_PRODUCT = (
    '<div itemscope itemtype="https://schema.org/Product"><h2 itemprop="name">A rake</h2>'
    '<img itemprop="image" src="/rake.png" alt="A rake" width="20" height="20">'
    '<p itemprop="description">Rakes.</p>'
    '<div itemprop="brand" itemscope itemtype="https://schema.org/Brand">'
    '<span itemprop="name">Gardens</span></div></div>'
)
# RDFa Lite: a Person with a property schema.org does not define for people.
RDFA_PERSON = (
    '<div vocab="https://schema.org/" typeof="Person"><span property="name">Ann</span>'
    '<span property="colour">green</span></div>'
)


def _json_ld(item: dict[str, object]) -> str:
    block = json.dumps({"@context": "https://schema.org", **item})
    return f'<script type="application/ld+json">{block}</script>'


# path -> the page's HTML (200), for every HTML page but the home page.
PAGES: dict[str, str] = {
    "/clean/1": html("clean-1", head=_canonical("/clean/1")),
    "/clean/2": html("clean-2", links=("/", "/clean/1")),
    # Links to another site that answer, one only to GET (HEAD is refused).
    "/clean/3": html("clean-3", links=("/clean/2", f"{ELSEWHERE}/ext/ok", f"{ELSEWHERE}/ext/get")),
    "/links-external-broken": html("links-external-broken", links=("/", f"{ELSEWHERE}/ext/gone")),
    "/links-broken": html(
        "links-broken", links=("/", "/gone", "/server-error", "/redirect-to-gone")
    ),
    "/no-title": html("no-title", title=""),
    "/long-title": html("long-title", title="A title far too long for search results " * 3),
    "/no-description": html("no-description", description=""),
    "/no-h1": html("no-h1", h1=()),
    "/two-h1": html("two-h1", h1=("First heading", "Second heading")),
    "/noindex": html("noindex", head='<meta name="robots" content="noindex">'),
    "/no-alt": _with("no-alt", '<img src="/photo.jpg" width="10" height="10">'),
    "/no-lang": html("no-lang", lang=None),
    "/no-viewport": html("no-viewport", viewport=False),
    "/thin": html("thin", body="Few words."),
    "/nofollow-links": _with("nofollow-links", '<a href="/clean/1" rel="nofollow">Clean one</a>'),
    "/js-link": _with("js-link", '<a href="javascript:void(0)">menu</a>'),
    "/dup-title-a": html("dup-title-a", title="The same title on two pages of it"),
    "/dup-title-b": html("dup-title-b", title="The same title on two pages of it"),
    "/dup-desc-a": html("dup-desc-a", description="One description shared by two pages " * 3),
    "/dup-desc-b": html("dup-desc-b", description="One description shared by two pages " * 3),
    "/dup-content-a": html("dup-content-a", h1=("Twins",), body=SAME_TEXT),
    "/dup-content-b": html("dup-content-b", h1=("Twins",), body=SAME_TEXT),
    "/canonical-to-404": html("canonical-to-404", head=_canonical("/gone")),
    "/canonical-to-redirect": html("canonical-to-redirect", head=_canonical("/hop1")),
    "/bad-json-ld": html(
        "bad-json-ld", head='<script type="application/ld+json">{"@type": "Thing",</script>'
    ),
    "/links-private": html("links-private", links=("/", "/private/secret")),
    "/redirect-target": html("redirect-target"),
    "/temp-target": html("temp-target"),
    "/private/secret": html("private-secret"),
    # A chain of clicks, each page linking the next and back (/deep/5 has one in-link only).
    **{
        f"/deep/{n}": html(
            f"deep-{n}", links=(f"/deep/{n + 1}", f"/deep/{n - 1}" if n > 1 else "/")
        )
        for n in range(1, 5)
    },
    "/deep/5": html("deep-5", links=("/deep/4",)),
    "/orphan": html("orphan"),  # only the sitemap lists it
    # English and French name each other; the German page does not name the English back.
    "/en": html(
        "en", head=_alternates(("en", "/en"), ("fr", "/fr"), ("de", "/de"), ("x-default", "/en"))
    ),
    "/fr": html(
        "fr", lang="fr", head=_alternates(("en", "/en"), ("fr", "/fr"), ("x-default", "/en"))
    ),
    "/de": html("de", lang="de", head=_self_alternates("/de", "de", "x-default")),
    "/hl-invalid": html("hl-invalid", head=_self_alternates("/hl-invalid", "en-uk", "x-default")),
    "/hl-relative": html(
        "hl-relative",
        head='<link rel="alternate" hreflang="en" href="/hl-relative">'
        + _self_alternates("/hl-relative", "x-default"),
    ),
    "/hl-no-x-default": html("hl-no-x-default", head=_self_alternates("/hl-no-x-default", "en")),
    "/hl-no-self": html("hl-no-self", head=_alternates(("en", "/fr"), ("x-default", "/fr"))),
    "/hl-multi": html("hl-multi", head=_self_alternates("/hl-multi", "en", "en-gb", "x-default")),
    "/hl-to-redirect": html(
        "hl-to-redirect",
        head=_alternates(
            ("en", "/hl-to-redirect"), ("fr", "/hop1"), ("x-default", "/hl-to-redirect")
        ),
    ),
    "/hl-to-canonicalised": html(
        "hl-to-canonicalised",
        head=_alternates(
            ("en", "/hl-to-canonicalised"),
            ("fr", "/canonical-to-root"),
            ("x-default", "/hl-to-canonicalised"),
        ),
    ),
    # Titles and headings.
    "/title-is-h1": html("title-is-h1", h1=("Fixture page title-is-h1 on garden care",)),
    "/title-is-description": html(
        "title-is-description",
        title="Fixture page on garden care, said once",
        description="Fixture page on garden care, said once",
    ),
    "/h1-empty": html("h1-empty", h1=("",)),
    "/h1-long": html(
        "h1-long", h1=("A heading about garden care that goes on for far too long " * 2,)
    ),
    "/no-h2": html("no-h2", h2=False),
    "/heading-skip": _with("heading-skip", "<h4>A heading two levels down</h4>"),
    # Text, images and markup.
    "/low-ratio": html("low-ratio", head="<style>" + "p { color: green; } " * 2000 + "</style>"),
    "/lorem": _with("lorem", " Lorem ipsum dolor sit amet."),
    "/big-dom": _with("big-dom", "<br>" * 1600),
    "/long-alt": _with(
        "long-alt",
        f'<img src="/wide.png" alt="{"a wide view of the garden " * 5}" width="9" height="9">',
    ),
    "/img-no-size": _with("img-no-size", '<img src="/plain.png" alt="A plain picture">'),
    "/lang-invalid": html("lang-invalid", lang="en_us"),
    "/two-viewports": html("two-viewports", head='<meta name="viewport" content="width=500">'),
    "/no-doctype": html("no-doctype", doctype=False),
    "/no-favicon": html("no-favicon", favicon=False),
    "/meta-refresh": html("meta-refresh", head='<meta http-equiv="refresh" content="300">'),
    "/meta-keywords": html("meta-keywords", head='<meta name="keywords" content="garden, soil">'),
    "/meta-in-body": _with("meta-in-body", '<meta name="robots" content="index, follow">'),
    "/no-open-graph": html("no-open-graph", social=(False, True)),
    "/no-twitter-card": html("no-twitter-card", social=(True, False)),
    "/json-ld-incomplete": html(
        "json-ld-incomplete",
        head='<script type="application/ld+json">{"@type": "Thing", "name": "x"}</script>',
    ),
    # Rich results: a complete Product (its Offer too), an Event without its start date, a
    # Recipe with what Google requires and nothing it recommends.
    "/rich-complete": html("rich-complete", head=_json_ld(RICH_PRODUCT)),
    "/rich-incomplete": html("rich-incomplete", head=_json_ld(RICH_EVENT)),
    "/rich-recommended": html("rich-recommended", head=_json_ld(RICH_RECIPE)),
    # Microdata and RDFa (issue 30.2), and schema.org's vocabulary.
    "/microdata-incomplete": _with("microdata-incomplete", MICRODATA_PRODUCT),
    "/rdfa-unknown-property": _with("rdfa-unknown-property", RDFA_PERSON),
    "/schema-unknown-type": html(
        "schema-unknown-type", head=_json_ld({"@type": "GardenGadget", "name": "Trug"})
    ),
    "/microdata-stray": _with("microdata-stray", '<p><span itemprop="name">Trowel</span></p>'),
    "/microdata-untyped": _with(
        "microdata-untyped", '<div itemscope><span itemprop="name">Fork</span></div>'
    ),
    "/deprecated": _with("deprecated", "<center>Centred the old way</center>"),
    "/plugin": _with("plugin", '<object data="/movie.swf"></object>'),
    "/iframe": _with("iframe", '<iframe src="/clean/1" title="Clean one"></iframe>'),
    "/nosnippet": html("nosnippet", head='<meta name="robots" content="nosnippet">'),
    "/noimageindex": html("noimageindex", head='<meta name="robots" content="noimageindex">'),
    "/html-large": html("html-large", body=words("html-large", 210_000)),
    # Links, canonicals and forms.
    "/links-redirect": html("links-redirect", links=("/", "/hop1", "/loop-a", "/temp-redirect")),
    "/empty-link-text": _with("empty-link-text", '<a href="/clean/2"> </a>'),
    "/generic-link-text": _with("generic-link-text", '<a href="/clean/2">Click here</a>'),
    "/canonical-empty": html("canonical-empty", head='<link rel="canonical" href="">'),
    "/canonical-other-host": html(
        "canonical-other-host", head=f'<link rel="canonical" href="{ELSEWHERE}/ext/ok">'
    ),
    "/canonical-to-root": html("canonical-to-root", head=_canonical("/")),
    "/canonical-to-noindex": html("canonical-to-noindex", head=_canonical("/noindex")),
    "/canonical-header-mismatch": html(
        "canonical-header-mismatch", head=_canonical("/canonical-header-mismatch")
    ),
    # Pagination: a series naming each other both ways, and a page its next does not name.
    "/page/1": html("page-1", head='<link rel="next" href="/page/2">', links=("/", "/page/2")),
    "/page/2": html(
        "page-2",
        head='<link rel="prev" href="/page/1"><link rel="next" href="3">',
        links=("/page/1", "/page/3"),
    ),
    "/page/3": html("page-3", head='<link rel="prev" href="/page/2">', links=("/page/2",)),
    "/page-bad/1": html(
        "page-bad-1", head='<link rel="next" href="/page-bad/2">', links=("/", "/page-bad/2")
    ),
    "/page-bad/2": html("page-bad-2"),
    "/form": _with("form", '<form action="/search"><input name="q"></form>'),
    "/form-insecure": _with(
        "form-insecure", f'<form action="{BASE}/search"><input name="q"></form>'
    ),
    # Response headers (see HEADERS and UNDRESSED).
    **{
        path: html(path.strip("/"))
        for path in (
            "/no-compression",
            "/no-validator",
            "/no-nosniff",
            "/no-csp",
            "/no-charset",
            "/nofollow-header",
            "/not-in-sitemap",
        )
    },
    # URLs (as linked: encoded, as the crawl stores them).
    "/url%20with%20space": html("url-with-space"),
    "/caf%C3%A9": html("cafe"),
    "/double//slash": html("double-slash"),
    "/params": html("params"),
    "/Case-Page": html("case-page-upper"),
    "/case-page": html("case-page-lower"),
    "/slash": html("slash"),
    "/slash/": html("slash-slash"),
    # Issue 30.5: status, URLs and headers.
    "/soft-404": html("soft-404", title="Sorry, this page was not found on the site"),
    "/repeat/garden/repeat": html("repeat"),
    "/search-results": html("search-results"),
    "/session": html("session"),
    **{path: html(path.strip("/")) for path in ("/no-frame-options", "/no-referrer-policy")},
    "/refresh-header": html("refresh-header"),
    # Links.
    "/links-local": html("links-local", links=("/", "http://localhost:1/admin")),
    "/links-whitespace": html("links-whitespace", links=("/", "/url with space")),
    "/links-utm": html("links-utm", links=("/", "/utm-landing?utm_source=news")),
    "/utm-landing": html("utm-landing"),  # linked only with a tracking parameter, once
    "/single-inlink": html("single-inlink"),  # linked from one hub only
    "/target-blank": _with("target-blank", '<a href="/clean/2" target="_blank">Clean two</a>'),
    "/resource-broken": _with(
        "resource-broken", '<img src="/gone" alt="Gone" width="1" height="1">'
    ),
    "/resource-redirect": _with(
        "resource-redirect", '<img src="/temp-redirect" alt="Moved" width="1" height="1">'
    ),
    "/protocol-relative": _with(
        "protocol-relative",
        '<img src="//cdn.example/x.png" alt="A CDN picture" width="1" height="1">',
    ),
    # Robots, canonicals, hreflang, pagination.
    "/robots-multiple": html(
        "robots-multiple",
        head='<meta name="robots" content="index, follow">'
        '<meta name="robots" content="max-snippet:50">',
    ),
    "/robots-unknown": html("robots-unknown", head='<meta name="robots" content="no-index">'),
    "/canonical-fragment": html(
        "canonical-fragment", head=f'<link rel="canonical" href="{BASE}/canonical-fragment#top">'
    ),
    "/hl-lang-mismatch": html(
        "hl-lang-mismatch", lang="de", head=_self_alternates("/hl-lang-mismatch", "en", "x-default")
    ),
    "/hl-duplicate": html(
        "hl-duplicate",
        head=_alternates(
            ("en", "/hl-duplicate"), ("en", "/clean/2"), ("x-default", "/hl-duplicate")
        ),
    ),
    "/hl-in-body": _with("hl-in-body", _self_alternates("/hl-in-body", "en", "x-default")),
    "/page-multi": html(
        "page-multi",
        head='<link rel="next" href="/page/2"><link rel="next" href="/page/3">',
        links=("/", "/page/2", "/page/3"),
    ),
    "/page-lone/1": html("page-lone-1", head='<link rel="next" href="/page-lone/2">'),
    "/page-lone/2": html(
        "page-lone-2", head='<link rel="prev" href="/page-lone/1">', links=("/page-lone/1",)
    ),
    "/page-self": html(
        "page-self", head='<link rel="prev" href="/page-self"><link rel="next" href="/page-self">'
    ),
    "/page-canon/1": html(
        "page-canon-1", head='<link rel="next" href="/page-canon/2">', links=("/", "/page-canon/2")
    ),
    "/page-canon/2": html(
        "page-canon-2",
        head='<link rel="prev" href="/page-canon/1">' + _canonical("/page-canon/1"),
        links=("/page-canon/1",),
    ),
    # Headings, images, markup.
    "/h1-not-first": html(
        "h1-not-first", h1=(), body="<h3>Before</h3><h1>Garden care: late</h1>" + words("late")
    ),
    "/h2-empty": _with("h2-empty", "<h2> </h2>"),
    "/h2-long": _with("h2-long", f"<h2>{'A section heading that runs on and on ' * 3}</h2>"),
    "/img-no-src": _with("img-no-src", '<img alt="Nothing here" width="1" height="1">'),
    "/img-alt-file": _with(
        "img-alt-file", '<img src="/p.jpg" alt="IMG_0042.jpg" width="1" height="1">'
    ),
    "/img-inline": html(
        "img-inline",
        body=words("img-inline", 600)
        + f'<img src="data:image/png;base64,{"A" * 12_000}" alt="Inline" width="1" height="1">',
    ),
    "/head-multiple": html("head-multiple", head='</head><head><meta name="author" content="Ann">'),
    "/body-multiple": _with("body-multiple", '<body class="second">'),
    "/head-invalid": html(
        "head-invalid", head='<img src="/pixel.gif" alt="Pixel" width="1" height="1">'
    ),
    "/viewport-fixed": html(
        "viewport-fixed", viewport=False, head='<meta name="viewport" content="width=1024">'
    ),
    "/viewport-no-zoom": html(
        "viewport-no-zoom",
        viewport=False,
        head='<meta name="viewport" content="width=device-width, user-scalable=no">',
    ),
    "/charset-latin1": html("charset-latin1", head='<meta charset="iso-8859-1">'),
    # Social and AMP.
    "/og-url-mismatch": html(
        "og-url-mismatch", head=f'<meta property="og:url" content="{BASE}/clean/1">'
    ),
    "/og-image-relative": html(
        "og-image-relative",
        social=(False, True),
        head='<meta property="og:title" content="Relative"><meta property="og:description" '
        'content="A picture"><meta property="og:image" content="/og.png">',
    ),
    "/twitter-card-invalid": html(
        "twitter-card-invalid",
        social=(True, False),
        head='<meta name="twitter:card" content="large">',
    ),
    "/amp-bare": html("amp-bare", lang='en" amp="'),
    "/amp-clean": html(
        "amp-clean",
        lang='en" amp="',
        head=_canonical("/amp-clean")
        + "<style amp-boilerplate>body{visibility:hidden}</style>"
        + '<script async src="https://cdn.ampproject.org/v0.js"></script>',
    ),
    # Performance from the page's own bytes.
    "/inline-script": html("inline-script", head=f"<script>{'var garden = 1; ' * 2_800}</script>"),
    "/many-resources": _with(
        "many-resources", "".join(f'<script async src="/js/{n}.js"></script>' for n in range(101))
    ),
    "/render-blocking": html("render-blocking", head='<script src="/app.js"></script>'),
    # Shows a heavy picture, and links it: the crawl fetches what pages link.
    "/img-large": _with(
        "img-large",
        '<a href="/big.png"><img src="/big.png" alt="A big picture" width="9" height="9"></a>',
    ),
}
BIG_PICTURE = b"\x89PNG" + b"\0" * 150_000  # over img_too_large's 100 KB
# What a page is linked as, where it is not its path.
HREFS = {
    "/params": "/params?a=1&b=2&c=3&d=4",
    "/search-results": "/search-results?q=rake",
    "/session": "/session?sessionid=a1b2c3",
    "/utm-landing": "/utm-landing?utm_source=news",
}
# Headers a page is sent with besides the clean ones; the clean ones it goes without.
HEADERS = {
    "/canonical-header-mismatch": {"link": f'<{BASE}/clean/2>; rel="canonical"'},
    "/nofollow-header": {"x-robots-tag": "nofollow"},
    "/refresh-header": {"refresh": "600"},
}
UNDRESSED = {
    "/no-compression": "gzip",
    "/no-validator": "etag",
    "/no-nosniff": "x-content-type-options",
    "/no-csp": "content-security-policy",
    "/no-charset": "charset",
    "/no-frame-options": "x-frame-options",
    "/no-referrer-policy": "referrer-policy",
}
REDIRECTS = {
    "/hop1": "/hop2",
    "/hop2": "/redirect-target",
    "/loop-a": "/loop-b",
    "/loop-b": "/loop-a",
    "/temp-redirect": "/temp-target",
    "/redirect-to-gone": "/gone-moved",  # a 404 reached only by this redirect
}
TEMPORARY = {"/temp-redirect"}
# Linked from the hub pages (the home page links the first ones itself); the rest are
# reached through them, or only through one link (single_inlink).
_FIRST = ("/clean/1", "/deep/1", "/links-redirect")  # at depth 1, as the tests say
_UNLISTED = {"/private/secret", "/redirect-target", "/temp-target", "/orphan", "/utm-landing"}
LINKED_FROM_HOME = [
    HREFS.get(path, path)
    for path in (*_FIRST, *(p for p in PAGES if p not in _FIRST))
    if path not in _UNLISTED | {"/single-inlink"}
    and (not path.startswith("/deep/") or path == "/deep/1")
]
# More than a page may link to (too_many_links): pages are linked in chunks, each chunk from
# two hub pages (so every page but the planted ones has two in-links at least); the home page
# links the first chunk and every hub, each hub the next one (two in-links each).
_CHUNK = 45
_CHUNKS = [LINKED_FROM_HOME[i : i + _CHUNK] for i in range(0, len(LINKED_FROM_HOME), _CHUNK)]
HUBS = ["/hub", *(f"/hub-{n}" for n in range(1, len(_CHUNKS)))]
HUB_PAGES = {
    hub: html(
        hub.strip("/"),
        links=(
            "/",
            HUBS[(n + 1) % len(HUBS)],
            *_CHUNKS[n],
            *_CHUNKS[n - 1],
            *(("/single-inlink",) if n == 0 else ()),
        ),
    )
    for n, hub in enumerate(HUBS)
}
HOME_LINKS = (*_CHUNKS[0], *HUBS)
HOME = html("home", links=HOME_LINKS)

# What the audit must report: (code, path), and nothing more.
PLANTED = {
    ("http_4xx", "/gone"),
    ("http_5xx", "/server-error"),
    ("broken_internal_link", "/links-broken"),
    ("redirect_chain", "/hop1"),
    ("redirect_loop", "/loop-a"),
    ("redirect_loop", "/loop-b"),
    ("title_missing", "/no-title"),
    ("title_too_long", "/long-title"),
    ("meta_description_missing", "/no-description"),
    ("h1_missing", "/no-h1"),
    ("h1_multiple", "/two-h1"),
    ("noindex", "/noindex"),
    ("img_alt_missing", "/no-alt"),
    ("lang_missing", "/no-lang"),
    ("viewport_missing", "/no-viewport"),
    ("thin_content", "/thin"),
    ("low_text_ratio", "/thin"),
    ("internal_link_nofollow", "/nofollow-links"),
    ("non_crawlable_link", "/js-link"),
    ("title_duplicate", "/dup-title-a"),
    ("title_duplicate", "/dup-title-b"),
    ("meta_description_duplicate", "/dup-desc-a"),
    ("meta_description_duplicate", "/dup-desc-b"),
    ("duplicate_content", "/dup-content-a"),
    ("duplicate_content", "/dup-content-b"),
    ("h1_duplicate", "/dup-content-a"),
    ("h1_duplicate", "/dup-content-b"),
    ("canonical_to_non_200", "/canonical-to-404"),
    ("canonical_to_redirect", "/canonical-to-redirect"),
    ("structured_data_invalid", "/bad-json-ld"),
    ("linked_page_blocked_by_robots", "/links-private"),
    ("depth_too_high", "/deep/5"),
    ("broken_external_link", "/links-external-broken"),
    ("hreflang_no_return_link", "/en"),
    # /fr names /en back without /de: the cluster differs seen from either side.
    ("hreflang_cluster_inconsistent", "/en"),
    ("hreflang_cluster_inconsistent", "/fr"),
    ("sitemap_url_not_linked", "/orphan"),
    ("sitemap_url_non_200", "/gone"),
    ("sitemap_url_non_200", "/hop1"),
    # hreflang
    ("hreflang_invalid_code", "/hl-invalid"),
    ("hreflang_relative", "/hl-relative"),
    ("hreflang_missing_x_default", "/hl-no-x-default"),
    ("hreflang_missing_self", "/hl-no-self"),
    ("hreflang_no_return_link", "/hl-no-self"),
    ("hreflang_multiple_languages", "/hl-multi"),
    ("hreflang_to_non_200", "/hl-to-redirect"),
    ("hreflang_to_non_canonical", "/hl-to-canonicalised"),
    # titles and headings
    ("title_same_as_h1", "/title-is-h1"),
    ("title_same_as_description", "/title-is-description"),
    ("meta_description_too_short", "/title-is-description"),
    ("h1_empty", "/h1-empty"),
    ("h1_too_long", "/h1-long"),
    ("h2_missing", "/no-h2"),
    ("headings_out_of_order", "/heading-skip"),
    # text, images and markup
    ("low_text_ratio", "/low-ratio"),
    ("placeholder_text", "/lorem"),
    ("dom_too_large", "/big-dom"),
    ("img_alt_too_long", "/long-alt"),
    ("img_size_missing", "/img-no-size"),
    ("lang_invalid", "/lang-invalid"),
    ("viewport_multiple", "/two-viewports"),
    ("doctype_missing", "/no-doctype"),
    ("favicon_missing", "/no-favicon"),
    ("meta_refresh", "/meta-refresh"),
    ("meta_keywords", "/meta-keywords"),
    ("head_element_in_body", "/meta-in-body"),
    ("open_graph_missing", "/no-open-graph"),
    ("twitter_card_missing", "/no-twitter-card"),
    ("structured_data_incomplete", "/json-ld-incomplete"),
    ("rich_result_required_missing", "/rich-incomplete"),
    ("rich_result_recommended_missing", "/rich-recommended"),
    ("rich_result_required_missing", "/microdata-incomplete"),
    ("schema_property_unknown", "/rdfa-unknown-property"),
    ("schema_type_unknown", "/schema-unknown-type"),
    ("microdata_property_outside_item", "/microdata-stray"),
    ("microdata_item_untyped", "/microdata-untyped"),
    ("deprecated_html", "/deprecated"),
    ("plugin_content", "/plugin"),
    ("iframe_present", "/iframe"),
    ("nosnippet", "/nosnippet"),
    ("noimageindex", "/noimageindex"),
    ("html_too_large", "/html-large"),
    # links, canonicals and forms
    ("internal_link_to_redirect", "/links-redirect"),
    ("internal_link_redirect_chain", "/links-redirect"),
    ("sitemap_url_redirect_chain", "/hop1"),
    ("pagination_inconsistent", "/page-bad/1"),
    ("redirect_temporary", "/temp-redirect"),
    ("link_text_empty", "/empty-link-text"),
    ("link_text_generic", "/generic-link-text"),
    ("canonical_empty", "/canonical-empty"),
    ("canonical_other_host", "/canonical-other-host"),
    ("canonical_to_root", "/canonical-to-root"),
    ("canonical_to_non_indexable", "/canonical-to-noindex"),
    ("canonical_header_mismatch", "/canonical-header-mismatch"),
    ("form_on_http_page", "/form"),
    ("form_on_http_page", "/form-insecure"),
    ("form_insecure_action", "/form-insecure"),
    # response headers
    ("compression_missing", "/no-compression"),
    ("cache_validator_missing", "/no-validator"),
    ("x_content_type_options_missing", "/no-nosniff"),
    ("csp_missing", "/no-csp"),
    ("charset_missing", "/no-charset"),
    ("nofollow_page", "/nofollow-header"),
    # URLs
    ("url_space", "/url%20with%20space"),
    ("url_non_ascii", "/caf%C3%A9"),
    ("url_multiple_slashes", "/double//slash"),
    ("url_too_many_parameters", "/params"),
    ("url_uppercase", "/Case-Page"),
    ("url_case_duplicate", "/Case-Page"),
    ("url_case_duplicate", "/case-page"),
    ("url_trailing_slash_duplicate", "/slash"),
    ("url_trailing_slash_duplicate", "/slash/"),
    # sitemaps
    ("sitemap_url_noindex", "/noindex"),
    ("sitemap_url_blocked", "/private/secret"),
    ("sitemap_url_canonicalised", "/canonical-to-root"),
    ("indexable_not_in_sitemap", "/not-in-sitemap"),
    # issue 30.5: status, URLs and headers
    ("redirect_to_error", "/redirect-to-gone"),
    ("http_4xx", "/redirect-to-gone"),
    ("http_4xx", "/gone-moved"),  # audited from the redirect's final answer, as its own page
    ("soft_404", "/soft-404"),
    ("url_repetitive_path", "/repeat/garden/repeat"),
    ("url_internal_search", "/search-results"),
    ("url_session_id", "/session"),
    ("x_frame_options_missing", "/no-frame-options"),
    ("referrer_policy_missing", "/no-referrer-policy"),
    ("refresh_header", "/refresh-header"),
    # links and what pages load
    ("link_to_local_address", "/links-local"),
    ("link_href_whitespace", "/links-whitespace"),
    ("link_tracking_parameters", "/links-utm"),
    ("single_inlink", "/utm-landing"),
    ("single_inlink", "/single-inlink"),
    ("single_inlink", "/deep/5"),
    ("link_target_blank_unsafe", "/target-blank"),
    ("internal_resource_broken", "/resource-broken"),
    ("internal_resource_redirect", "/resource-redirect"),
    ("protocol_relative_resource", "/protocol-relative"),
    # robots, canonicals, hreflang, pagination
    ("robots_meta_multiple", "/robots-multiple"),
    ("robots_directive_unknown", "/robots-unknown"),
    ("canonical_fragment", "/canonical-fragment"),
    ("hreflang_lang_mismatch", "/hl-lang-mismatch"),
    ("hreflang_duplicate_language", "/hl-duplicate"),
    ("hreflang_in_body", "/hl-in-body"),
    ("pagination_multiple", "/page-multi"),
    ("pagination_inconsistent", "/page-multi"),  # /page/2 names /page/1 back, not it
    ("pagination_not_linked", "/page-lone/1"),
    ("pagination_to_self", "/page-self"),
    ("pagination_canonicalised", "/page-canon/2"),
    # headings, images, markup
    ("h1_not_first_heading", "/h1-not-first"),
    ("h2_empty", "/h2-empty"),
    ("h2_too_long", "/h2-long"),
    ("img_src_empty", "/img-no-src"),
    ("img_alt_file_name", "/img-alt-file"),
    ("img_inline_large", "/img-inline"),
    ("head_multiple", "/head-multiple"),
    ("body_multiple", "/body-multiple"),
    ("head_invalid_element", "/head-invalid"),
    ("viewport_not_device_width", "/viewport-fixed"),
    ("viewport_zoom_disabled", "/viewport-no-zoom"),
    ("charset_not_utf8", "/charset-latin1"),
    # social and AMP
    ("og_url_mismatch", "/og-url-mismatch"),
    ("og_image_relative", "/og-image-relative"),
    ("twitter_card_invalid", "/twitter-card-invalid"),
    ("amp_canonical_missing", "/amp-bare"),
    ("amp_boilerplate_missing", "/amp-bare"),
    ("amp_runtime_missing", "/amp-bare"),
    # performance
    ("inline_css_large", "/low-ratio"),
    ("inline_script_large", "/inline-script"),
    ("low_text_ratio", "/inline-script"),
    ("too_many_resources", "/many-resources"),
    ("render_blocking_script", "/render-blocking"),
    ("img_too_large", "/img-large"),
}
# Pages that are not indexable (noindex, or canonical elsewhere): a sitemap lists them only
# to plant an issue.
NOT_INDEXABLE = {
    "/noindex",
    "/canonical-to-404",
    "/canonical-to-redirect",
    "/canonical-other-host",
    "/canonical-to-root",
    "/canonical-to-noindex",
    "/page-canon/2",
}
# What the sitemaps list (robots.txt names the index; the pages file is gzipped): every
# indexable page but one, and URLs that plant an issue each.
SITEMAPPED = [
    "/",
    *HUBS,
    *(
        HREFS.get(path, path)
        for path in PAGES
        if path not in NOT_INDEXABLE | {"/private/secret", "/not-in-sitemap"}
    ),
    "/gone",
    "/hop1",
    "/noindex",
    "/private/secret",
    "/canonical-to-root",
    "/big.png",  # an indexable URL the crawl reached (an image), listed as such
]


def dressed(body: bytes) -> dict[str, str]:
    """The headers a well-configured server sends an HTML page with (but compression)."""
    return {
        "etag": f'"{hashlib.sha256(body).hexdigest()[:16]}"',
        "x-content-type-options": "nosniff",
        "content-security-policy": "default-src 'self'",
        "content-type": "text/html; charset=utf-8",
        "x-frame-options": "SAMEORIGIN",
        "referrer-policy": "strict-origin-when-cross-origin",
    }


def urlset(base: str, tag: str, paths: list[str]) -> str:
    entries = "".join(f"<{tag}><loc>{escape(base + path)}</loc></{tag}>" for path in paths)
    root = "sitemapindex" if tag == "sitemap" else "urlset"
    return (
        f'<?xml version="1.0" encoding="UTF-8"?>'
        f'<{root} xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}</{root}>'
    )


# Every page the crawl records (the blocked one included, never fetched); /hop2 is only a
# hop of /hop1's redirects.
REACHED = {
    "/",
    *HUBS,
    *PAGES,
    "/hop1",
    "/loop-a",
    "/loop-b",
    "/temp-redirect",
    "/gone",
    "/server-error",
    "/redirect-to-gone",
    "/gone-moved",
    "/big.png",
}


class AuditSite:
    """The fixture site's app, counting requests per path."""

    def __init__(
        self,
        robots: str | None = ROBOTS,  # None: robots.txt answers 503; "": 404 (there is none)
        generated: int = 0,
        delay: float = 0.0,
        sitemaps: bool = True,
        external: bool = False,
    ) -> None:
        self.robots = robots
        self.sitemaps = sitemaps  # robots.txt names a sitemap index (else no sitemap at all)
        self.generated = generated  # serve /g/0 .. /g/{n-1} as well: a site of n pages
        self.delay = delay  # seconds each generated page takes (a crawl a test can interrupt)
        # Generated pages also link to the other site: a URL that answers HEAD, one that
        # answers only GET (the same two on every page).
        self.external = external
        self.hits: Counter[str] = Counter()  # path -> requests to the site
        self.elsewhere: Counter[str] = Counter()  # "METHOD path" -> requests to the other site
        self._elsewhere_port: int | None = None
        self._lock = threading.Lock()

    def _count(self, request: Request) -> None:
        with self._lock:
            if request.url.port == self._elsewhere_port:
                self.elsewhere[f"{request.method} {request.url.path}"] += 1
            else:
                self.hits[request.url.path] += 1

    def _routes(self) -> list[Route]:
        def endpoint(answer: Callable[[Request], Response]) -> Callable[[Request], Response]:
            def counted(request: Request) -> Response:
                self._count(request)
                return answer(request)

            return counted

        return [
            Route("/robots.txt", endpoint(self._robots)),
            Route("/sitemaps/index.xml", endpoint(self._sitemap_index)),
            Route("/sitemaps/pages.xml.gz", endpoint(self._sitemap_pages)),
            Route("/", endpoint(lambda r: self._html(r, "/", HOME))),
            *(
                Route(hub, endpoint(lambda r, hub=hub: self._html(r, hub, HUB_PAGES[hub])))
                for hub in HUBS
            ),
            Route("/g/{n:int}", endpoint(self._generated)),
            Route("/{path:path}", endpoint(self._page)),
        ]

    def _robots(self, request: Request) -> Response:
        if self.robots is None:
            return Response(status_code=503)
        if not self.robots:
            return PlainTextResponse("no robots.txt here", status_code=404)
        base = str(request.base_url).rstrip("/")
        listed = f"Sitemap: {base}/sitemaps/index.xml\n" if self.sitemaps else ""
        return PlainTextResponse(self.robots + listed)

    def _sitemap_index(self, request: Request) -> Response:
        if not self.sitemaps:
            return Response(status_code=404)
        body = urlset(str(request.base_url).rstrip("/"), "sitemap", ["/sitemaps/pages.xml.gz"])
        return Response(body, media_type="application/xml")

    def _sitemap_pages(self, request: Request) -> Response:
        if not self.sitemaps:
            return Response(status_code=404)
        body = urlset(str(request.base_url).rstrip("/"), "url", SITEMAPPED)
        return Response(gzip.compress(body.encode()), media_type="application/gzip")

    def _page(self, request: Request) -> Response:
        path = request.url.path
        if path == "/ext/ok" or (path == "/ext/get" and request.method == "GET"):
            return HTMLResponse(html("elsewhere"))
        if path == "/ext/get":
            return Response(status_code=405)
        raw = request.scope["raw_path"].decode()  # as linked: encoded, slashes kept
        if raw in PAGES:
            return self._html(request, raw, PAGES[raw])
        if path in REDIRECTS:
            status = 302 if path in TEMPORARY else 301
            return RedirectResponse(REDIRECTS[path], status_code=status)
        if path == "/big.png":
            return Response(BIG_PICTURE, media_type="image/png")
        if path == "/server-error":
            return HTMLResponse(html("server-error"), status_code=500)
        return HTMLResponse(html("gone"), status_code=404)

    def _html(self, request: Request, path: str, page: str) -> Response:
        """A page as a well-configured server sends it (compressed, validators, security
        headers, a charset), but for what ``UNDRESSED`` leaves out and ``HEADERS`` adds."""
        base = str(request.base_url).rstrip("/")
        elsewhere = f"http://127.0.0.1:{self._elsewhere_port}"
        body = page.replace(BASE, base).replace(ELSEWHERE, elsewhere).encode()
        left_out = UNDRESSED.get(path)
        headers = dressed(body)
        if left_out == "charset":
            headers["content-type"] = "text/html"
        else:
            headers.pop(left_out or "", None)
        for name, value in HEADERS.get(path, {}).items():
            headers[name] = value.replace(BASE, base)
        if left_out != "gzip" and "gzip" in request.headers.get("accept-encoding", ""):
            body = gzip.compress(body)
            headers["content-encoding"] = "gzip"
        return Response(body, headers=headers)

    def _generated(self, request: Request) -> Response:
        """Page n of a generated site: a binary tree of links, each page back to /g/0."""
        n = int(request.path_params["n"])
        time.sleep(self.delay)  # a sync endpoint: Starlette runs it in its thread pool
        links = [f"/g/{c}" for c in (2 * n + 1, 2 * n + 2) if c < self.generated]
        # And its sibling: a page with one in-link is an issue (single_inlink).
        sibling = n + 1 if n % 2 else n - 1
        if n and 0 < sibling < self.generated:
            links.append(f"/g/{sibling}")
        if self.external:
            links += [f"http://127.0.0.1:{self._elsewhere_port}/ext/{p}" for p in ("ok", "get")]
        return self._html(request, f"/g/{n}", html(f"g-{n}", links=("/g/0", *links)))

    @contextlib.contextmanager
    def running(self) -> Iterator[str]:
        """The site's base URL; the same app also answers as another site on another port."""
        app = Starlette(routes=self._routes())
        with serve(app) as elsewhere, serve(app) as base:
            self._elsewhere_port = urlsplit(elsewhere).port
            yield base
