"""A website for the tech-stack tests: pages that carry the fingerprints of
``tests/fakes/fingerprints.json`` (made-up technologies), served on loopback.

``EXPECTED`` says, per path, which technologies a lookup must report (with version and
confidence where the page gives one) and nothing else. The site counts requests per path.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterator
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from tests.fakes.server import serve

HOME = """<!doctype html><html><head><title>Home</title>
<meta name="generator" content="PressCMS 6.4.1">
<link rel="stylesheet" href="/press-content/themes/shiny/style.css">
<script src="/static/jfoo-3.7.1.min.js"></script>
<script src="https://cdn.maybecdn.test/lib.js"></script>
<script>window.inlineTracker = { version: '2.1' };</script>
</head><body>
<!-- built with legacycms -->
<div class="w" data-htmlwidget="modern">widget</div>
<div id="dom-only">only a browser would see this as DomOnly</div>
<p id="broken-but-fine">hello</p>
</body></html>"""

CART = """<!doctype html><html><head><title>Cart</title>
<link rel="stylesheet" href="/press-content/themes/shiny/style.css">
</head><body><!-- built with legacycms --><div data-htmlwidget>cart</div></body></html>"""

# A page a catastrophic pattern ((x+x+)+y) backtracks on: a long run of x with no y after.
SLOW = "<!doctype html><html><head><title>S</title></head><body><p>" + "x" * 5000 + "</p></body>"

HOME_HEADERS = {
    "Server": "nginxish/1.25.3",
    "X-Powered-By": "phpish/8.2",
    "X-Cache": "HIT from maybecdn",
    "Set-Cookie": "cshop_session=abc123; Path=/",
}

# path -> {technology: (version, confidence)}
EXPECTED: dict[str, dict[str, tuple[str | None, int]]] = {
    "/": {
        "Nginxish": ("1.25.3", 100),
        "PHPish": ("8.2", 100),  # its header; also implied by PressCMS
        "PressCMS": ("6.4.1", 100),
        "PressTheme Shiny": (None, 100),  # requires PressCMS, found here
        "jFoo": ("3.7.1", 100),
        "CookieShop": (None, 100),
        "Rubyish": (None, 50),  # only implied, by CookieShop, at confidence 50
        "InlineTracker": ("2.1", 100),
        "HtmlWidget": ("2.x", 100),  # the ternary's first branch
        "MaybeCDN": (None, 80),  # two patterns of confidence 40
        "BrokenPattern": (None, 100),  # its other pattern compiles and matches
        # not: LegacyCMS (PressCMS excludes it), DomOnly (dom/js need a browser)
    },
    "/shop/cart": {
        "Nginxish": (None, 100),
        "HtmlWidget": ("1.x", 100),  # the ternary's second branch
        "LegacyCMS": (None, 100),  # no PressCMS here to exclude it
        "UrlShop": (None, 100),
        # not: PressTheme Shiny (its pattern matches, but PressCMS is not on the page)
    },
    "/slow": {"Nginxish": (None, 100)},  # Catastrophic's search timed out: skipped
}


class TechSite:
    def __init__(self) -> None:
        self.hits: Counter[str] = Counter()

    def app(self) -> Starlette:
        async def home(request: Request) -> Response:
            self.hits[request.url.path] += 1
            return HTMLResponse(HOME, headers=HOME_HEADERS)

        async def cart(request: Request) -> Response:
            self.hits[request.url.path] += 1
            return HTMLResponse(CART, headers={"Server": "nginxish"})

        async def slow(request: Request) -> Response:
            self.hits[request.url.path] += 1
            return HTMLResponse(SLOW, headers={"Server": "nginxish"})

        return Starlette(routes=[Route("/", home), Route("/shop/cart", cart), Route("/slow", slow)])

    @contextlib.contextmanager
    def running(self) -> Iterator[str]:
        with serve(self.app()) as base:
            yield base


def found(technologies: list[dict[str, Any]]) -> dict[str, tuple[str | None, int]]:
    """A result's technologies as EXPECTED writes them."""
    return {t["name"]: (t["version"], t["confidence"]) for t in technologies}
