"""A small website served over https (a certificate of a test CA, trustme) for the checks only
an https page can have: mixed content, links to the site's http URLs, HSTS.

Its host answers http and https on one port (``EitherScheme``), as a real host does on 80 and
443: every http URL redirects to its https twin, so the http URLs a page links to are the
site's own. ``PLANTED`` says which (code, path) pairs an audit must report, and nothing else
may be reported: every page links to every other (none has a single in-link), the sitemap
lists them all, and each is sent as a well-configured https server sends it (compressed,
validators, security headers, HSTS) but for what ``UNDRESSED`` and ``HEADERS`` change.
"""

from __future__ import annotations

import contextlib
import gzip
import tempfile
import threading
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import trustme
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from tests.fakes.audit_site import dressed, html, urlset, words
from tests.fakes.server import serve
from tests.fakes.tls import either_scheme

ORIGIN = "{origin}"  # the site's host and port, filled in when a page is served
HSTS = "max-age=31536000; includeSubDomains"

# The checks only an https page can have: each planted below, on https pages only.
HTTPS_ONLY = frozenset({"mixed_content", "https_links_to_http", "hsts_missing"})


# path -> (what its body adds after its text, what its head adds); the other pages add
# nothing (but for their headers).
_PLANTED_MARKUP: dict[str, tuple[str, str]] = {
    # Precision: a form is fine on an https page, and so are links and resources written
    # https:, relative or absolute.
    "/clean-form": (
        '<form action="/search"><input name="q"></form>'
        f'<a href="https://{ORIGIN}/clean-assets">Assets written https</a>',
        "",
    ),
    "/clean-assets": (
        f'<img src="https://{ORIGIN}/photo.png" alt="A photo" width="20" height="20">'
        '<script src="/app.js" defer></script>',
        f'<link rel="stylesheet" href="https://{ORIGIN}/site.css">',
    ),
    "/mixed-image": (
        f'<img src="http://{ORIGIN}/photo.png" alt="A photo" width="20" height="20">',
        "",
    ),
    "/mixed-assets": (
        '<script src="http://cdn.example/app.js" defer></script>',
        '<link rel="stylesheet" href="http://cdn.example/site.css">',
    ),
    # An http link to a page of the site: it redirects to https (a link to a redirect too).
    "/links-http": (f'<a href="http://{ORIGIN}/clean-form">The form</a>', ""),
    # Relative URLs under an http <base href> are http: its image, logo, link and form
    # action (its other links are written https).
    "/base-http": (
        '<img src="photo.png" alt="A photo" width="20" height="20">'
        '<a href="clean-form">The form</a><form action="search"><input name="q"></form>',
        f'<base href="http://{ORIGIN}/">',
    ),
    # Precision: an http link to the host on another port is another site (the crawl's
    # scope), not an http URL of this one.
    "/links-http-other-port": ('<a href="http://127.0.0.1:9/other">Another site</a>', ""),
}
BASED = {"/base-http"}
# Every page, each linking every other.
PATHS = ("/", *_PLANTED_MARKUP, "/no-hsts", "/hsts-max-age-zero", "/hsts-no-max-age")
HEADERS = {
    # Headers browsers ignore: max-age=0 turns HSTS off, and max-age is required.
    "/hsts-max-age-zero": {"strict-transport-security": "max-age=0"},
    "/hsts-no-max-age": {"strict-transport-security": "includeSubDomains; preload"},
}
UNDRESSED = {"/no-hsts"}  # sent without Strict-Transport-Security


def _page(path: str) -> str:
    slug = path.strip("/") or "home"
    body, head = _PLANTED_MARKUP.get(path, ("", ""))
    others = tuple(f"https://{ORIGIN}{p}" if path in BASED else p for p in PATHS if p != path)
    return html(slug, body=words(slug) + body, head=head, links=others)


# What the audit must report: (code, path), and nothing more.
PLANTED = {
    ("mixed_content", "/mixed-image"),
    ("mixed_content", "/mixed-assets"),
    ("https_links_to_http", "/links-http"),
    ("internal_link_to_redirect", "/links-http"),  # http://.../clean-form redirects
    ("mixed_content", "/base-http"),
    ("https_links_to_http", "/base-http"),
    ("form_insecure_action", "/base-http"),
    ("internal_link_to_redirect", "/base-http"),
    ("hsts_missing", "/no-hsts"),
    ("hsts_missing", "/hsts-max-age-zero"),
    ("hsts_missing", "/hsts-no-max-age"),
}
# Every page the crawl records: the https pages and the http URL linked.
REACHED = {("https", path) for path in PATHS} | {("http", "/clean-form")}


@dataclass(frozen=True)
class Served:
    base: str  # https://127.0.0.1:port
    ca_file: str  # the test CA's certificate (PEM), for the fetcher to trust


class TlsSite:
    """The site's app, counting requests per (scheme, path)."""

    def __init__(self) -> None:
        self.hits: Counter[tuple[str, str]] = Counter()
        self._lock = threading.Lock()

    def _answer(self, request: Request) -> Response:
        url = request.url
        with self._lock:
            self.hits[(url.scheme, url.path)] += 1
        if url.scheme == "http":
            return RedirectResponse(str(url.replace(scheme="https")), status_code=301)
        origin = url.netloc
        if url.path == "/robots.txt":
            return PlainTextResponse(
                f"User-agent: *\nAllow: /\nSitemap: https://{origin}/sitemap.xml\n"
            )
        if url.path == "/sitemap.xml":
            return Response(
                urlset(f"https://{origin}", "url", list(PATHS)), media_type="application/xml"
            )
        if url.path not in PATHS:
            return PlainTextResponse("not here", status_code=404)
        body = _page(url.path).replace(ORIGIN, origin).encode()
        headers = {
            **dressed(body),
            "content-encoding": "gzip",
            **({} if url.path in UNDRESSED else {"strict-transport-security": HSTS}),
            **HEADERS.get(url.path, {}),
        }
        return Response(gzip.compress(body), headers=headers)

    @contextlib.contextmanager
    def running(self) -> Iterator[Served]:
        """The site on one port of 127.0.0.1, http and https, its certificate issued by a CA
        made here."""
        ca = trustme.CA(organization_name="Fake Test CA")
        leaf = ca.issue_cert("127.0.0.1")
        app = Starlette(routes=[Route("/{path:path}", self._answer)])
        with tempfile.TemporaryDirectory(prefix="seojobs-tls-site-") as folder:
            ca_file, chain = Path(folder) / "ca.pem", Path(folder) / "site.pem"
            ca.cert_pem.write_to_path(str(ca_file))
            leaf.private_key_and_cert_chain_pem.write_to_path(str(chain))
            with (
                serve(app) as plain,
                serve(app, tls=(str(chain), str(chain))) as secure,
                either_scheme(_address(plain), _address(secure)) as port,
            ):
                yield Served(f"https://127.0.0.1:{port.port}", str(ca_file))


def _address(base: str) -> tuple[str, int]:
    parts = urlsplit(base)
    assert parts.hostname and parts.port
    return parts.hostname, parts.port
