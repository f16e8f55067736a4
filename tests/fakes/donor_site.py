"""Donor pages for the backlink tests, served on loopback: pages that link (or no longer
link) to a target, one robots.txt keeps us out of, one that is gone, one that moved.

``pages`` is the site's content, changed by a test between two refreshes (a link removed);
``hits`` counts requests per path.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterator

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from tests.fakes.server import serve

TARGET = "https://target.example/landing/"
ROBOTS = "User-agent: *\nDisallow: /private/\n"


def _html(body: str, head: str = "") -> str:
    return f"<!doctype html><html><head><title>t</title>{head}</head><body>{body}</body></html>"


def default_pages() -> dict[str, str]:
    return {
        "/post": _html(
            '<nav><a href="/">home</a></nav><p>See <a href="http://www.target.example/landing'
            '?utm_source=blog" rel="Sponsored  nofollow">our <b>partner</b></a> and '
            '<a href="https://target.example/landing/">again</a>.</p>'
        ),
        "/gallery": _html(
            '<p><a href="landing/"><img src="/logo.png" alt="Target logo"></a></p>',
            head='<base href="https://target.example/"><meta name="robots" content="nofollow">',
        ),
        "/private/post": _html(f'<a href="{TARGET}">hidden</a>'),
        "/landing-page": _html(f'<a href="{TARGET}">moved here</a>'),
    }


class DonorSite:
    def __init__(self) -> None:
        self.pages = default_pages()
        self.hits: Counter[str] = Counter()

    def app(self) -> Starlette:
        async def robots(_request: Request) -> Response:
            return PlainTextResponse(ROBOTS)

        async def page(request: Request) -> Response:
            path = request.url.path
            self.hits[path] += 1
            if path == "/moved":
                return RedirectResponse("/landing-page", status_code=301)
            if path not in self.pages:
                return HTMLResponse(_html("<p>gone</p>"), status_code=404)
            return HTMLResponse(self.pages[path])

        return Starlette(
            routes=[Route("/robots.txt", robots), Route("/{path:path}", page)],
        )

    @contextlib.contextmanager
    def running(self) -> Iterator[str]:
        with serve(self.app()) as base:
            yield base
