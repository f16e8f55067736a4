"""``bench/audit.py``'s site: N generated pages served from memory by a raw asyncio protocol
(docs/bench/audit.md). ``python -m bench.lib.auditsite --pages N [--cpu C]`` prints
``{"port": P}`` and serves until its stdin closes; ``GET /_stats`` answers its counts (itself
not counted)."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import sys

CHILDREN = 10  # the tree's fan-out: 5,000 pages are 4 clicks deep at most
OTHERS = 10  # links to pages elsewhere in the site, besides the children
PRIVATE_EVERY = 250  # every 250th page (from 7) also links to /private/N
DISALLOWED = "/private/"
MAX_PAGES = 100_000  # site_audit's max_pages at most: a site this large links no /private/
SITEMAP_URLS = 25_000  # per sitemap file (~1.3 MB: under fetch_max_bytes, 2 MB); then an index
STATS_PATH = "/_stats"
WORDS = [
    "crawl",
    "audit",
    "index",
    "page",
    "site",
    "link",
    "search",
    "engine",
    "title",
    "canonical",
    "content",
    "robots",
    "sitemap",
    "status",
    "header",
    "meta",
    "description",
    "anchor",
    "heading",
    "image",
    "text",
    "depth",
    "redirect",
    "server",
    "client",
]


def page_path(n: int) -> str:
    return "/" if n == 0 else f"/p/{n}"


def links_of(n: int, pages: int) -> list[int]:
    """The internal pages page ``n`` links to, in order, without repeats."""
    found = [c for c in range(CHILDREN * n + 1, CHILDREN * n + CHILDREN + 1) if c < pages]
    k = 1
    while len(found) < CHILDREN + OTHERS and k < 4 * (CHILDREN + OTHERS):
        other = (n * 7919 + k * 104729) % pages
        if other != n and other not in found:
            found.append(other)
        k += 1
    return found


def private_links(pages: int) -> list[str]:
    """The disallowed URLs the site links (none when they and the pages would pass
    ``MAX_PAGES``: the audit would stop short of some pages)."""
    found = [f"{DISALLOWED}{n}" for n in range(7, pages, PRIVATE_EVERY)]
    return found if pages + len(found) <= MAX_PAGES else []


def _paragraph(n: int, i: int) -> str:
    words = [WORDS[(n * 31 + i * 7 + j * 13) % len(WORDS)] for j in range(70)]
    return f"<p>Section {i} of page {n}: " + " ".join(words) + ".</p>"


def page_html(n: int, pages: int) -> bytes:
    links = links_of(n, pages)
    anchors = [f'<li><a href="{page_path(m)}">Page {m} of the bench site</a></li>' for m in links]
    if n % PRIVATE_EVERY == 7 and private_links(pages):
        anchors.append(f'<li><a href="{DISALLOWED}{n}">Members only {n}</a></li>')
    body: list[str] = []
    for i in range(12):
        body.append(_paragraph(n, i))
        if anchors[2 * i : 2 * i + 2]:
            body += ["<ul>", *anchors[2 * i : 2 * i + 2], "</ul>"]
        if i % 4 == 0:
            body.append(f'<img src="/img/{n}-{i}.png" alt="Figure {i} of page {n}">')
    head = (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>Page {n} of the bench site</title>"
        f'<meta name="description" content="Page {n}: a generated page of the audit benchmark '
        f'site, about eight kilobytes of text with twenty internal links.">'
        f'<link rel="canonical" href="{page_path(n)}"></head>'
    )
    text = (
        f'{head}<body><header><a href="/">Home</a></header><main><h1>Page {n}</h1>'
        + "\n".join(body)
        + "</main><footer>Bench site footer</footer></body></html>\n"
    )
    return text.encode()


def _response(status: str, ctype: str, body: bytes) -> tuple[bytes, bytes]:
    head = (
        f"HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {len(body)}\r\n"
        "Connection: keep-alive\r\n\r\n"
    ).encode()
    return head, body


def build(pages: int, port: int) -> dict[bytes, tuple[bytes, bytes]]:
    """Path -> (status line and headers, body), for every path the site serves."""
    origin = f"http://127.0.0.1:{port}"
    site = {
        page_path(n).encode(): _response("200 OK", "text/html; charset=utf-8", page_html(n, pages))
        for n in range(pages)
    }
    robots = f"User-agent: *\nDisallow: {DISALLOWED}\n\nSitemap: {origin}/sitemap.xml\n"
    site[b"/robots.txt"] = _response("200 OK", "text/plain", robots.encode())
    head = '<?xml version="1.0" encoding="UTF-8"?>\n'
    xmlns = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'
    files = []
    for first in range(0, pages, SITEMAP_URLS):
        last = min(pages, first + SITEMAP_URLS)
        urls = "".join(f"<url><loc>{origin}{page_path(n)}</loc></url>" for n in range(first, last))
        files.append(f"{head}<urlset {xmlns}>{urls}</urlset>\n")
    if len(files) > 1:  # a sitemap index and its files
        for i, text in enumerate(files):
            site[f"/sitemap-{i}.xml".encode()] = _response(
                "200 OK", "application/xml", text.encode()
            )
        locs = "".join(
            f"<sitemap><loc>{origin}/sitemap-{i}.xml</loc></sitemap>" for i in range(len(files))
        )
        files = [f"{head}<sitemapindex {xmlns}>{locs}</sitemapindex>\n"]
    site[b"/sitemap.xml"] = _response("200 OK", "application/xml", files[0].encode())
    return site


NOT_FOUND = _response("404 Not Found", "text/plain", b"not found\n")


class SiteProtocol(asyncio.Protocol):
    def __init__(self, site: dict[bytes, tuple[bytes, bytes]], stats: dict[str, int]) -> None:
        self.site = site
        self.stats = stats
        self.buffer = b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while (end := self.buffer.find(b"\r\n\r\n")) >= 0:
            request, self.buffer = self.buffer[:end], self.buffer[end + 4 :]
            self._answer(request)

    def _answer(self, request: bytes) -> None:
        assert self.transport is not None
        method, _, rest = request.partition(b" ")
        target = rest.split(b" ", 1)[0].split(b"?", 1)[0]
        if target == STATS_PATH.encode():
            counts = json.dumps(self.stats).encode()
            self.transport.write(b"".join(_response("200 OK", "application/json", counts)))
            return
        self.stats["requests"] += 1
        self.stats["private"] += target.startswith(DISALLOWED.encode())  # a disallowed path
        head, body = self.site.get(target, NOT_FOUND)
        self.transport.write(head if method == b"HEAD" else head + body)
        if b"\r\nconnection: close" in request.lower():
            self.transport.close()


def bind() -> socket.socket:
    """A listening loopback socket on a free port."""
    # proto=IPPROTO_TCP matters: asyncio sets TCP_NODELAY on accepted sockets only when the
    # listening socket says TCP. With proto 0 every response (head and body written apart) waits
    # ~40 ms for the client's delayed ACK (Nagle).
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(2048)
    return sock


async def _serve(pages: int, sock: socket.socket) -> None:
    site = build(pages, sock.getsockname()[1])
    stats = {"requests": 0, "private": 0}
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: SiteProtocol(site, stats), sock=sock, backlog=2048)
    print(json.dumps({"port": sock.getsockname()[1]}), flush=True)
    # The parent closes our stdin when it is done with the site (or dies).
    await loop.run_in_executor(None, sys.stdin.buffer.read)
    server.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--pages", type=int, default=5000)
    parser.add_argument("--cpu", type=int, default=None, help="pin the server to this CPU")
    args = parser.parse_args()
    if args.cpu is not None:
        os.sched_setaffinity(0, {args.cpu})
    asyncio.run(_serve(args.pages, bind()))


if __name__ == "__main__":
    main()
