"""``bench/vitals.py``'s site: 20 small pages with a stylesheet, a script and images, on
loopback, served from memory in the benchmark's process. What it serves: docs/bench/vitals.md.
"""

from __future__ import annotations

import random
import struct
import threading
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOOP_STEP = 400_000  # iterations of the page's script per page number


def png(width: int, height: int, seed: int) -> bytes:
    """An RGB PNG of noisy bands (noise, so it does not compress to nothing)."""
    rnd = random.Random(seed)
    rows = []
    for y in range(height):
        shade = (y * 200 // max(height - 1, 1) + seed * 37) % 256
        table = bytes((shade + v % 8) % 256 for v in range(256))
        rows.append(b"\0" + rnd.randbytes(width * 3).translate(table))  # filter byte: none

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"".join(rows), 6))
        + chunk(b"IEND", b"")
    )


def stylesheet() -> bytes:
    rules = [
        "body{font-family:sans-serif;margin:0;line-height:1.5}",
        "header{background:#234;color:#fff;padding:1em}",
        ".hero{width:100%;height:auto;display:block}",
        ".thumbs img{width:45%;margin:2%}",
    ]
    rules += [
        f".c{i}{{color:#{i % 4096:03x};padding:{i % 7}px;margin:{i % 5}px}}" for i in range(600)
    ]
    return "\n".join(rules).encode()


def script(n: int) -> bytes:
    return (
        f"let s = 0; for (let i = 0; i < {LOOP_STEP * (n + 1)}; i++) {{ s += i % 7; }}\n"
        "const p = document.createElement('p');\n"
        "p.textContent = 'computed ' + s;\n"
        "document.querySelector('main').appendChild(p);\n"
    ).encode()


def page(n: int) -> bytes:
    paragraphs = "".join(
        f'<p class="c{(n * 31 + i) % 600}">Paragraph {i} of page {n}: words about web vitals, '
        "layout, paint and the main thread, enough to lay out a screen.</p>"
        for i in range(12)
    )
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>Vitals page {n}</title>"
        '<meta name="description" content="A benchmark page for web vitals.">'
        '<link rel="stylesheet" href="/style.css"></head><body>'
        f"<header><h1>Page {n}</h1></header><main>"
        f'<img class="hero" src="/img/hero-{n}.png" width="640" height="360" alt="hero {n}">'
        f"{paragraphs}"
        f'<div class="thumbs"><img src="/img/thumb-{n}-a.png" width="160" height="90" alt="a">'
        f'<img src="/img/thumb-{n}-b.png" width="160" height="90" alt="b"></div>'
        f'</main><script src="/app-{n}.js"></script></body></html>'
    ).encode()


def resources(pages: int) -> dict[str, tuple[str, bytes]]:
    """Path -> (content type, body) for every response of the site."""
    found = {"/style.css": ("text/css", stylesheet())}
    for n in range(pages):
        found[f"/p/{n}"] = ("text/html; charset=utf-8", page(n))
        found[f"/app-{n}.js"] = ("text/javascript", script(n))
        found[f"/img/hero-{n}.png"] = ("image/png", png(640, 360, n))
        for tag in "ab":
            found[f"/img/thumb-{n}-{tag}.png"] = ("image/png", png(160, 90, 100 + n))
    return found


def _handler(site: dict[str, tuple[str, bytes]], hits: dict[str, int]) -> type:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            found = site.get(self.path)
            hits[self.path] = hits.get(self.path, 0) + 1
            status, kind, body = (200, *found) if found else (404, "text/plain", b"not found")
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "max-age=3600")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass  # quiet

    return Handler


@contextmanager
def serving(pages: int) -> Iterator[tuple[list[str], dict[str, int]]]:
    """(the pages' URLs, request counts per path) while the site runs on 127.0.0.1."""
    hits: dict[str, int] = {}
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(resources(pages), hits))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    port = server.server_address[1]
    try:
        yield [f"http://127.0.0.1:{port}/p/{n}" for n in range(pages)], hits
    finally:
        server.shutdown()
        server.server_close()
