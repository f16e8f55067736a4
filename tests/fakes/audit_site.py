"""A website for the site-audit tests: clean pages next to pages that each plant one issue.

``PLANTED`` says which (code, path) pairs an audit must report, and nothing else may be
reported: the clean pages and the home page are clean by every check's default threshold.
The site counts requests per path, so a test can prove a page was fetched once.
"""

from __future__ import annotations

import contextlib
import gzip
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from urllib.parse import urlsplit

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
    lang: bool = True,
    viewport: bool = True,
    head: str = "",
    body: str | None = None,
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
    parts = [
        "<!doctype html>",
        '<html lang="en">' if lang else "<html>",
        "<head>",
        f"<title>{title}</title>" if title else "",
        f'<meta name="description" content="{description}">' if description else "",
        '<meta name="viewport" content="width=device-width">' if viewport else "",
        head,
        "</head><body>",
        *(f"<h1>{text}</h1>" for text in h1),
        f"<p>{words(slug) if body is None else body}</p>",
        '<img src="/logo.png" alt="Fixture logo">',
        *(f'<a href="{href}">link</a>' for href in links),
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


SAME_TEXT = words("twin text")
# path -> the page's HTML (200), for every HTML page but the home page.
PAGES: dict[str, str] = {
    "/clean/1": html("clean-1", head=_canonical("/clean/1")),
    "/clean/2": html("clean-2", links=("/", "/clean/1")),
    # Links to another site that answer, one only to GET (HEAD is refused).
    "/clean/3": html("clean-3", links=("/clean/2", f"{ELSEWHERE}/ext/ok", f"{ELSEWHERE}/ext/get")),
    "/links-external-broken": html("links-external-broken", links=("/", f"{ELSEWHERE}/ext/gone")),
    "/links-broken": html("links-broken", links=("/", "/gone", "/server-error")),
    "/no-title": html("no-title", title=""),
    "/long-title": html("long-title", title="A title far too long for search results " * 3),
    "/no-description": html("no-description", description=""),
    "/no-h1": html("no-h1", h1=()),
    "/two-h1": html("two-h1", h1=("First heading", "Second heading")),
    "/noindex": html("noindex", head='<meta name="robots" content="noindex">'),
    "/no-alt": html("no-alt", body=words("no-alt") + '<img src="/photo.jpg">'),
    "/no-lang": html("no-lang", lang=False),
    "/no-viewport": html("no-viewport", viewport=False),
    "/thin": html("thin", body="Only a few words here."),
    "/nofollow-links": html(
        "nofollow-links", body=words("nofollow-links") + '<a href="/clean/1" rel="nofollow">c</a>'
    ),
    "/js-link": html("js-link", body=words("js-link") + '<a href="javascript:void(0)">menu</a>'),
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
    "/private/secret": html("private-secret"),
    **{f"/deep/{n}": html(f"deep-{n}", links=(f"/deep/{n + 1}",)) for n in range(1, 5)},
    "/deep/5": html("deep-5"),
    "/orphan": html("orphan"),  # only the sitemap lists it
    # English and French name each other; the German page does not name the English back.
    "/en": html("en", head=_alternates(("en", "/en"), ("fr", "/fr"), ("de", "/de"))),
    "/fr": html("fr", head=_alternates(("en", "/en"), ("fr", "/fr"))),
    "/de": html("de", head=_alternates(("de", "/de"))),
}
REDIRECTS = {
    "/hop1": "/hop2",
    "/hop2": "/redirect-target",
    "/loop-a": "/loop-b",
    "/loop-b": "/loop-a",
}
# Linked from the home page; the rest are reached through them.
LINKED_FROM_HOME = [
    path
    for path in [*PAGES, "/hop1", "/loop-a"]
    if path not in ("/private/secret", "/redirect-target", "/orphan")
    and (not path.startswith("/deep/") or path == "/deep/1")
]
HOME = html("home", links=tuple(LINKED_FROM_HOME))

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
    ("internal_link_nofollow", "/nofollow-links"),
    ("non_crawlable_link", "/js-link"),
    ("title_duplicate", "/dup-title-a"),
    ("title_duplicate", "/dup-title-b"),
    ("meta_description_duplicate", "/dup-desc-a"),
    ("meta_description_duplicate", "/dup-desc-b"),
    ("duplicate_content", "/dup-content-a"),
    ("duplicate_content", "/dup-content-b"),
    ("canonical_to_non_200", "/canonical-to-404"),
    ("canonical_to_redirect", "/canonical-to-redirect"),
    ("structured_data_invalid", "/bad-json-ld"),
    ("linked_page_blocked_by_robots", "/links-private"),
    ("depth_too_high", "/deep/5"),
    ("broken_external_link", "/links-external-broken"),
    ("hreflang_no_return_link", "/en"),
    ("sitemap_url_not_linked", "/orphan"),
    ("sitemap_url_non_200", "/gone"),
    ("sitemap_url_non_200", "/hop1"),
}
# What the sitemaps list (robots.txt names the index; the pages file is gzipped).
SITEMAPPED = ["/", "/clean/1", "/orphan", "/gone", "/hop1"]


def _urlset(base: str, tag: str, paths: list[str]) -> str:
    entries = "".join(f"<{tag}><loc>{base}{path}</loc></{tag}>" for path in paths)
    root = "sitemapindex" if tag == "sitemap" else "urlset"
    return (
        f'<?xml version="1.0" encoding="UTF-8"?>'
        f'<{root} xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}</{root}>'
    )


# Every page the crawl records (the blocked one included, never fetched); /hop2 is only a
# hop of /hop1's redirects.
REACHED = {"/", *PAGES, "/hop1", "/loop-a", "/loop-b", "/gone", "/server-error"}


class AuditSite:
    """The fixture site's app, counting requests per path."""

    def __init__(
        self,
        robots: str | None = ROBOTS,  # None: robots.txt answers 503
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
            Route("/", endpoint(lambda _r: HTMLResponse(HOME))),
            Route("/g/{n:int}", endpoint(self._generated)),
            Route("/{path:path}", endpoint(self._page)),
        ]

    def _robots(self, request: Request) -> Response:
        if self.robots is None:
            return Response(status_code=503)
        base = str(request.base_url).rstrip("/")
        listed = f"Sitemap: {base}/sitemaps/index.xml\n" if self.sitemaps else ""
        return PlainTextResponse(self.robots + listed)

    def _sitemap_index(self, request: Request) -> Response:
        if not self.sitemaps:
            return Response(status_code=404)
        body = _urlset(str(request.base_url).rstrip("/"), "sitemap", ["/sitemaps/pages.xml.gz"])
        return Response(body, media_type="application/xml")

    def _sitemap_pages(self, request: Request) -> Response:
        if not self.sitemaps:
            return Response(status_code=404)
        body = _urlset(str(request.base_url).rstrip("/"), "url", SITEMAPPED)
        return Response(gzip.compress(body.encode()), media_type="application/gzip")

    def _page(self, request: Request) -> Response:
        path = request.url.path
        if path == "/ext/ok" or (path == "/ext/get" and request.method == "GET"):
            return HTMLResponse(html("elsewhere"))
        if path == "/ext/get":
            return Response(status_code=405)
        if path in PAGES:
            base = str(request.base_url).rstrip("/")
            elsewhere = f"http://127.0.0.1:{self._elsewhere_port}"
            return HTMLResponse(PAGES[path].replace(BASE, base).replace(ELSEWHERE, elsewhere))
        if path in REDIRECTS:
            return RedirectResponse(REDIRECTS[path], status_code=301)
        if path == "/server-error":
            return HTMLResponse(html("server-error"), status_code=500)
        return HTMLResponse(html("gone"), status_code=404)

    def _generated(self, request: Request) -> Response:
        """Page n of a generated site: a binary tree of links, each page back to /g/0."""
        n = int(request.path_params["n"])
        time.sleep(self.delay)  # a sync endpoint: Starlette runs it in its thread pool
        links = [f"/g/{c}" for c in (2 * n + 1, 2 * n + 2) if c < self.generated]
        if self.external:
            links += [f"http://127.0.0.1:{self._elsewhere_port}/ext/{p}" for p in ("ok", "get")]
        return HTMLResponse(html(f"g-{n}", links=("/g/0", *links)))

    @contextlib.contextmanager
    def running(self) -> Iterator[str]:
        """The site's base URL; the same app also answers as another site on another port."""
        app = Starlette(routes=self._routes())
        with serve(app) as elsewhere, serve(app) as base:
            self._elsewhere_port = urlsplit(elsewhere).port
            yield base
