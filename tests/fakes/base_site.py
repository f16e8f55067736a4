"""A small website whose pages set a ``<base href>``, for the audit's reading of relative URLs
(HTML's document base URL): the first ``<base>`` with an href, resolved against the page's
URL, is what every relative URL of the markup resolves against (links, canonical, hreflang,
rel=next/prev, what the page loads); an invalid or ``javascript:`` one is ignored. The site
counts requests per path, so a test can tell which URLs the crawl loaded; another server
(``elsewhere``, another port: another site) counts its own.
"""

from __future__ import annotations

import contextlib
import threading
from collections import Counter
from collections.abc import Iterator

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response
from starlette.routing import Route

from tests.fakes.server import serve

ELSEWHERE = "{elsewhere}"  # the other site's base URL, filled in when a page is served

# path -> (head, body) of the pages with a <base>; the home page links them all.
BASED: dict[str, tuple[str, str]] = {
    # Everything relative resolves under /catalog/, not /shop/.
    "/shop/based": (
        '<base href="/catalog/"><link rel="canonical" href="item">'
        '<link rel="alternate" hreflang="en" href="item">'
        '<link rel="alternate" hreflang="de" href="de/item">'
        '<link rel="next" href="page-2"><script src="app.js" defer></script>',
        '<a href="page-2">Next page</a><img src="pic.png" alt="A picture">',
    ),
    # A base on another site (another port): its canonical and links are that site's.
    "/shop/offsite": (
        f'<base href="{ELSEWHERE}/x/"><link rel="canonical" href="away">',
        '<a href="/">Home</a>',
    ),
    # A base on localhost: its relative links lead there.
    "/shop/local-base": ('<base href="http://localhost:1/">', '<a href="admin">Admin</a>'),
    # Ignored: a javascript: base, and one that is no URL (its port out of range).
    "/shop/javascript": (
        '<base href="javascript:void(0)"><link rel="canonical" href="javascript-page">',
        '<a href="javascript-link">Link</a>',
    ),
    "/shop/invalid": (
        '<base href="http://example.com:99999/"><link rel="canonical" href="invalid-page">',
        '<a href="invalid-link">Link</a>',
    ),
    # The first <base> with an href sets the base, an empty one too: the page's own URL.
    "/shop/empty-first": ('<base href=""><base href="/catalog/">', '<a href="page-3">More</a>'),
}
# Pages the based ones reach, and the home page.
PLAIN = (
    "/",
    "/catalog/item",
    "/catalog/page-2",
    "/shop/javascript-page",
    "/shop/javascript-link",
    "/shop/invalid-page",
    "/shop/invalid-link",
    "/shop/page-3",
)


def _page(path: str, elsewhere: str) -> str:
    head, body = BASED.get(path, ("", ""))
    if path == "/":
        body = "".join(f'<a href="{p}">{p}</a>' for p in BASED)
    elif path == "/catalog/page-2":
        head = '<link rel="prev" href="/shop/based">'
    return (
        f"<!doctype html><html lang='en'><head><title>Page {path}</title>{head}</head>"
        f"<body><h1>Page {path}</h1><p>Words of the page at {path}.</p>{body}</body></html>"
    ).replace(ELSEWHERE, elsewhere)


class BaseSite:
    """The site and the other one, each counting requests per path."""

    def __init__(self) -> None:
        self.hits: Counter[str] = Counter()
        self.elsewhere_hits: Counter[str] = Counter()
        self._lock = threading.Lock()
        self.other = ""

    def _answer(self, request: Request) -> Response:
        path = request.url.path
        with self._lock:
            self.hits[path] += 1
        if path == "/robots.txt":
            return PlainTextResponse("User-agent: *\nAllow: /\n")
        if path not in BASED and path not in PLAIN:
            return PlainTextResponse("not here", status_code=404)
        return HTMLResponse(_page(path, self.other))

    def _other(self, request: Request) -> Response:
        with self._lock:
            self.elsewhere_hits[request.url.path] += 1
        return PlainTextResponse("the other site")

    @contextlib.contextmanager
    def running(self) -> Iterator[str]:
        """The site's base URL (the other site runs beside it)."""
        other = Starlette(routes=[Route("/{path:path}", self._other, methods=["GET", "HEAD"])])
        site = Starlette(routes=[Route("/{path:path}", self._answer, methods=["GET", "HEAD"])])
        with serve(other) as elsewhere, serve(site) as base:
            self.other = elsewhere
            yield base
