"""A small website for fetcher tests, served on loopback by ``tests.fakes.server.serve``.

Every page exists to exercise one fetch or indexability rule. The site records each request
(path and Host header) and how many are in flight, so tests can assert "nothing arrived" and
observe concurrency without timing anything.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import gzip
import ipaddress
import socket
import threading
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import (
    PlainTextResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from tests.fakes.server import serve

DEFAULT_ROBOTS = """\
User-agent: *
Disallow: /private/

User-agent: Googlebot
Disallow: /private/
Disallow: /google-only-blocked

User-agent: seojobs
Disallow: /private/
Disallow: /seojobs-only-blocked
"""
BIG_PAGE_BYTES = 256 * 1024
MALFORMED_HTML = (
    b"<html><head><meta name=robots content='noindex'><link rel=canonical href=/ok>"
    b"<title>x</ti<<tle><![if !IE]><body><p <<>"
)
NOINDEX_META = '<meta name="robots" content="noindex">'
HOLD_LIMIT_SECONDS = 30.0  # a held request never outlives a broken test by much


def page(title: str, head: str = "", body: str = "<p>Hello.</p>", *, status: int = 200) -> Response:
    html = (
        f"<!doctype html><html><head><title>{title}</title>{head}</head><body>{body}</body></html>"
    )
    return Response(html, status_code=status, media_type="text/html; charset=utf-8")


@dataclass(frozen=True)
class Seen:
    path: str
    host: str
    user_agent: str
    authorization: str | None = None


class FixtureSite:
    def __init__(
        self,
        robots_txt: str = DEFAULT_ROBOTS,
        robots_status: int = 200,
        robots_location: str | None = None,  # robots.txt answers 302 to this
    ) -> None:
        self.robots_txt = robots_txt
        self.robots_status = robots_status
        self.robots_location = robots_location
        self.seen: list[Seen] = []
        self.moved_to = ""  # where /moved redirects (a test sets it; it is not in the URL)
        self.inflight = 0
        self.max_inflight = 0
        self.release = threading.Event()  # lets /hold and /slow requests finish
        self._lock = threading.Lock()
        self.app: ASGIApp = _Recorder(self, self._routes())

    # -- what tests read ---------------------------------------------------------------
    def count(self, path: str | None = None) -> int:
        with self._lock:
            return sum(1 for s in self.seen if path is None or s.path == path)

    def paths(self) -> list[str]:
        with self._lock:
            return [s.path for s in self.seen]

    def record(self, seen: Seen) -> None:
        with self._lock:
            self.seen.append(seen)

    def enter(self) -> None:
        with self._lock:
            self.inflight += 1
            self.max_inflight = max(self.max_inflight, self.inflight)

    def leave(self) -> None:
        with self._lock:
            self.inflight -= 1

    # -- pages -------------------------------------------------------------------------
    async def _moved(self, _: Request) -> Response:
        # The Location as the test wrote it (RedirectResponse would re-quote it).
        return Response(status_code=302, headers={"location": self.moved_to})

    def _routes(self) -> Starlette:
        redirects = {
            "/redirect/3": (301, "/redirect/2"),
            "/redirect/2": (302, "1"),  # relative to the directory
            "/redirect/1": (307, "http://{host}/ok"),  # absolute
            "/loop/a": (301, "/loop/b"),
            "/loop/b": (302, "/loop/a"),
            "/redirect-ftp": (301, "ftp://files.example/x"),
            "/redirect-no-location": (302, ""),
        }

        async def robots(_: Request) -> Response:
            if self.robots_location:
                return RedirectResponse(self.robots_location, status_code=302)
            return PlainTextResponse(self.robots_txt, status_code=self.robots_status)

        async def redirect(request: Request) -> Response:
            status, target = redirects[request.url.path]
            location = target.format(host=request.headers.get("host", ""))
            response = Response(status_code=status)
            if location:
                response.headers["location"] = location
            return response

        async def redirect_to(request: Request) -> Response:
            return RedirectResponse(request.query_params["url"], status_code=302)

        async def wait_for_release(request: Request) -> Response:
            # A condition wait (released by the test), not a timed delay.
            loop = asyncio.get_running_loop()
            deadline = loop.time() + HOLD_LIMIT_SECONDS
            while not self.release.is_set() and loop.time() < deadline:
                if await request.is_disconnected():
                    break
                await asyncio.sleep(0.01)
            return page("Waited")

        async def trickle(request: Request) -> Response:
            # One byte at a time, each well inside any read timeout: only an overall deadline
            # stops this. The pacing is the server's behaviour, not a wait in a test.
            async def drip() -> AsyncIterator[bytes]:
                loop = asyncio.get_running_loop()
                deadline = loop.time() + HOLD_LIMIT_SECONDS
                while not self.release.is_set() and loop.time() < deadline:
                    yield b"x"
                    await asyncio.sleep(0.02)

            return StreamingResponse(drip(), media_type="text/html")

        routes = [
            Route("/robots.txt", robots),
            Route("/headers", chosen_headers),
            Route("/ok", lambda r: page("OK", '<link rel="canonical" href="/ok">')),
            Route("/plain", lambda r: page("Plain")),
            Route("/private/page", lambda r: page("Private")),
            Route("/google-only-blocked", lambda r: page("Google blocked")),
            Route("/seojobs-only-blocked", lambda r: page("seojobs blocked")),
            Route(
                "/noindex-meta",
                lambda r: page("Noindex", '<meta name="robots" content="noindex, follow">'),
            ),
            Route(
                "/googlebot-none-meta",
                lambda r: page("None", '<META NAME="Googlebot" CONTENT="none">'),
            ),
            Route(
                "/otherbot-noindex-meta",
                lambda r: page("Other", '<meta name="bingbot" content="noindex">'),
            ),
            Route(
                "/noindex-header", lambda r: _with_headers(page("H"), [("X-Robots-Tag", "noindex")])
            ),
            Route(
                "/googlebot-noindex-header",
                lambda r: _with_headers(
                    page("H"),
                    [
                        ("X-Robots-Tag", "otherbot: nofollow"),
                        ("X-Robots-Tag", "googlebot: noindex"),
                    ],
                ),
            ),
            Route(
                "/otherbot-noindex-header",
                lambda r: _with_headers(page("H"), [("X-Robots-Tag", "otherbot: noindex")]),
            ),
            Route(
                "/canonical-other",
                lambda r: page(
                    "Dup", '<link rel="canonical" href="http://' + r.headers["host"] + '/ok#top">'
                ),
            ),
            Route(
                "/canonical-in-body",
                lambda r: page("Body", "", '<div></div><link rel="canonical" href="/ok">'),
            ),
            Route(
                "/canonical-conflict",
                lambda r: _with_headers(
                    page("C", '<link rel="canonical" href="/ok">'),
                    [("Link", '</plain>; rel="canonical"')],
                ),
            ),
            Route(
                "/doc.pdf",
                lambda r: _with_headers(
                    Response(b"%PDF-1.4\n%fake\n", media_type="application/pdf"),
                    [("Link", "<http://" + r.headers["host"] + '/ok>; rel="canonical"')],
                ),
            ),
            Route("/data.json", lambda r: Response(b'{"a": 1}', media_type="application/json")),
            Route(
                "/malformed",
                lambda r: Response(MALFORMED_HTML, media_type="text/html"),
            ),
            Route("/big", lambda r: page("Big", body="x" * BIG_PAGE_BYTES)),
            Route("/gzip", lambda r: _gzipped(page("Zipped", NOINDEX_META))),
            Route("/big-gzip", lambda r: _gzipped(page("Big", body="x" * BIG_PAGE_BYTES))),
            Route(
                "/bad-gzip",
                lambda r: _with_headers(page("Not zipped"), [("Content-Encoding", "gzip")]),
            ),
            Route("/latin1-header", lambda r: _with_headers(page("L"), [("X-Note", "caf\u00e9")])),
            Route("/cookie/set", set_cookie),
            Route("/cookie/check", check_cookie),
            Route("/gone", lambda r: page("Gone", status=410)),
            Route("/error", lambda r: page("Error", status=500)),
            Route("/unavailable", lambda r: page("Busy", status=503)),
            Route("/forbidden", lambda r: page("No", status=403)),
            Route("/redirect-to", redirect_to),
            Route("/moved", self._moved),
            Route("/hold", wait_for_release),
            Route("/slow", wait_for_release),
            Route("/trickle", trickle),
            *(Route(path, redirect) for path in redirects),
        ]
        return Starlette(routes=routes)


async def chosen_headers(request: Request) -> Response:
    # Each query parameter becomes a response header (Content-Type replaces the page's own):
    # a page sends whatever header text a test chooses.
    response = page("Chosen headers")
    for name, value in request.query_params.multi_items():
        if name.lower() == "content-type":
            response.headers[name] = value
        else:
            response.headers.append(name, value)
    return response


async def set_cookie(_: Request) -> Response:
    response = RedirectResponse("/cookie/check", status_code=302)
    response.set_cookie("seen", "1")
    return response


async def check_cookie(request: Request) -> Response:
    # The usual cookie check: without the cookie, back to where it is set (a loop).
    if request.cookies.get("seen") != "1":
        return RedirectResponse("/cookie/set", status_code=302)
    return page("Cookie")


def _gzipped(response: Response) -> Response:
    response.body = gzip.compress(response.body)
    response.headers["Content-Length"] = str(len(response.body))
    response.headers["Content-Encoding"] = "gzip"
    return response


def _with_headers(response: Response, headers: list[tuple[str, str]]) -> Response:
    for name, value in headers:
        response.headers.append(name, value)
    return response


class _Recorder:
    """ASGI middleware: count every request before the app sees it."""

    def __init__(self, site: FixtureSite, app: ASGIApp) -> None:
        self.site = site
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        self.site.record(
            Seen(
                scope["path"],
                headers.get("host", ""),
                headers.get("user-agent", ""),
                headers.get("authorization"),
            )
        )
        self.site.enter()
        try:
            await self.app(scope, receive, send)
        finally:
            self.site.leave()


@contextlib.contextmanager
def running_site(
    site: FixtureSite | None = None, host: str = "127.0.0.1"
) -> Iterator[tuple[FixtureSite, str]]:
    """Serve a fixture site on loopback; yields (site, base URL). Held requests are released."""
    site = site or FixtureSite()
    with serve(site.app, host=host) as base_url:
        try:
            yield site, base_url
        finally:
            site.release.set()


def fence_to_loopback(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Refuse (and record) any socket connection to a non-loopback address in this test.

    Test-side insurance for tests that feed the fetcher public-looking addresses: whatever the
    code under test does, no packet may leave the machine.
    """
    attempts: list[object] = []
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex

    def allowed(address: object) -> bool:
        if isinstance(address, tuple) and address:
            try:
                return ipaddress.ip_address(str(address[0]).split("%")[0]).is_loopback
            except ValueError:
                return False
        return isinstance(address, str | bytes)  # unix sockets stay on the machine

    def connect(self: socket.socket, address: Any) -> None:
        if not allowed(address):
            attempts.append(address)
            raise ConnectionRefusedError(f"test fence: no traffic to {address!r}")
        real_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> int:
        if not allowed(address):
            attempts.append(address)
            return errno.ECONNREFUSED
        return real_connect_ex(self, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
    return attempts
