"""A fixture site whose pages scripts change (``render: "js"`` audits): each page plants what
one or more rendering checks find, beside a home page scripts leave alone."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response
from starlette.routing import Route

from tests.fakes.audit_site import words
from tests.fakes.server import serve

HANG_SECONDS = 8  # /hang answers after this: longer than the tests' render timeout


def _page(title: str, body: str, head: str = "", script: str = "") -> str:
    tail = f"<script>{script}</script>" if script else ""
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{title}</title>"
        '<meta name="description" content="A page of the rendering fixture site, with enough '
        'words in its description to pass the length checks of the audit.">'
        f"{head}</head><body>{body}{tail}</body></html>"
    )


TEXT = f"<p>{words('rendered site', 260)}</p>"
PAGES = {
    # Scripts leave it alone (they run, change nothing the checks read).
    "/": _page(
        "The rendering fixture site home page",
        "<h1>Home</h1>"
        + TEXT
        + "".join(
            f'<a href="{p}">{p}</a> '
            for p in ("/spa", "/retitled", "/noindexed", "/broken-script", "/blocked", "/slow")
        ),
        script="document.body.dataset.ready = '1';",
    ),
    # A single-page app: the served HTML is a shell; the heading, text and a link come later.
    "/spa": _page(
        "A single page application shell",
        '<div id="app"></div>',
        script=(
            "const app = document.getElementById('app');"
            f"app.innerHTML = '<h1>Loaded</h1><p>{words('injected text', 200)}</p>"
            '<a href="/only-js">only in the rendered page</a>\';'
        ),
    ),
    # Reached only through /spa's rendered link.
    "/only-js": _page("A page only rendered links reach", "<h1>Only JS</h1>" + TEXT),
    # Title, description and canonical changed by a script.
    "/retitled": _page(
        "The title the server sends for this page",
        "<h1>Retitled</h1>" + TEXT,
        head='<link rel="canonical" href="/retitled">',
        script=(
            "document.title = 'Another title set by a script on the page';"
            "document.querySelector('meta[name=description]').content = 'Changed';"
            "document.querySelector('link[rel=canonical]').href = '/elsewhere';"
        ),
    ),
    # noindex added by a script.
    "/noindexed": _page(
        "A page a script marks as noindex later",
        "<h1>Noindexed</h1>" + TEXT,
        script=(
            "const m = document.createElement('meta'); m.name = 'robots';"
            "m.content = 'noindex'; document.head.appendChild(m);"
        ),
    ),
    "/broken-script": _page(
        "A page whose script throws an error",
        "<h1>Broken</h1>" + TEXT,
        script="undefinedFunctionOfThePage();",
    ),
    # A script on a host the rules keep Chromium off (.invalid: never resolves anyway).
    "/blocked": _page(
        "A page loading a script from another host",
        "<h1>Blocked</h1>" + TEXT,
        head='<script src="http://cdn.invalid/app.js"></script>',
    ),
    # Its image never arrives: the page never loads within the render timeout.
    "/slow": _page(
        "A page that never finishes loading", '<h1>Slow</h1><img src="/hang" alt="x">' + TEXT
    ),
}

# (code, path): what a render "js" audit finds on this site, each once.
PLANTED = {
    ("h1_only_rendered", "/spa"),
    ("links_only_rendered", "/spa"),
    ("content_only_rendered", "/spa"),
    ("rendered_title_changed", "/retitled"),
    ("rendered_description_changed", "/retitled"),
    ("rendered_canonical_changed", "/retitled"),
    ("rendered_robots_changed", "/noindexed"),
    ("render_script_errors", "/broken-script"),
    ("render_blocked_resources", "/blocked"),
    ("render_failed", "/slow"),
}


class RenderSite:
    def __init__(self) -> None:
        self.hits: dict[str, int] = {}

    async def _page(self, request: Request) -> Response:
        path = request.url.path
        self.hits[path] = self.hits.get(path, 0) + 1
        if path == "/robots.txt":
            return PlainTextResponse("User-agent: *\nAllow: /\n")
        if path == "/hang":  # until the browser gives up (or HANG_SECONDS)
            for _ in range(HANG_SECONDS * 10):
                if await request.is_disconnected():
                    break
                await asyncio.sleep(0.1)
            return Response(b"", media_type="image/png")
        if path not in PAGES:
            return PlainTextResponse("not here", status_code=404)
        return HTMLResponse(PAGES[path])

    @contextlib.contextmanager
    def running(self) -> Iterator[str]:
        app = Starlette(routes=[Route("/{path:path}", self._page)])
        with serve(app) as base:
            yield base
