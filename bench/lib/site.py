"""The local site and the fake Serper API for ``bench/check.py`` (docs/bench/check.md):
``python -m bench.lib.site`` prints its ports as one JSON line and serves until stdin closes;
:class:`SiteProcess` is the parent's side."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import threading
import urllib.request
from typing import Any, Self

from bench.lib import REPO, core
from bench.lib.auditsite import STATS_PATH, bind

API_KEY = "bench-serper-key"
ROBOTS_TXT = b"User-agent: *\nDisallow: /private/\nAllow: /\n\nSitemap: /sitemap.xml\n"
PAGE_FILLER = " ".join(f"Paragraph text about topic {i} with a few more words." for i in range(24))


Scope = dict[str, Any]


def indexed(n: int) -> bool:
    """Whether the fake Serper lists page ``n`` (what the check's counters are compared with)."""
    return n % 4 != 0


def page_html(n: int) -> bytes:
    robots = "noindex, follow" if n % 10 == 0 else "index, follow"
    canonical = f"/p/{n + 1}" if n % 25 == 0 else f"/p/{n}"
    return (
        "<!doctype html>\n<html lang=en><head>\n<meta charset=utf-8>\n"
        f"<title>Page {n} | Bench site</title>\n"
        '<meta name=viewport content="width=device-width, initial-scale=1">\n'
        f'<meta name=description content="The description of page {n}.">\n'
        f'<meta name=robots content="{robots}">\n'
        f'<link rel=canonical href="{canonical}">\n'
        '<link rel=stylesheet href="/static/site.css">\n'
        "</head>\n<body>\n"
        f"<h1>Page {n}</h1>\n<p>{PAGE_FILLER}</p>\n"
        f'<p><a href="/p/{n + 1}">next</a> <a href="/p/{max(n - 1, 0)}">previous</a></p>\n'
        "</body></html>\n"
    ).encode()


def _schemeless_page(query: str) -> tuple[str, int] | None:
    """``("127.0.0.1:8000", 12)`` for ``site:127.0.0.1:8000/p/12``."""
    target = query.removeprefix("site:")
    origin, sep, path = target.partition("/p/")
    if not sep or not path.isdigit():
        return None
    return origin, int(path)


class App:
    """One raw ASGI app for every socket: pages, robots.txt and the Serper endpoint."""

    def __init__(self, pages: int) -> None:
        self.pages = pages
        self._cache: dict[int, bytes] = {}

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        path: str = scope["path"]
        if path == "/search" and scope["method"] == "POST":
            status, ctype, body = await self._search(scope, receive)
        elif path == "/robots.txt":
            status, ctype, body = 200, b"text/plain", ROBOTS_TXT
        elif path.startswith("/p/") and path[3:].isdigit() and int(path[3:]) < self.pages:
            n = int(path[3:])
            html = self._cache.get(n)
            if html is None:
                html = self._cache[n] = page_html(n)
            status, ctype, body = 200, b"text/html; charset=utf-8", html
        else:
            status, ctype, body = 404, b"text/plain", b"not found\n"
        headers = [(b"content-type", ctype), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    async def _search(self, scope: Scope, receive: Any) -> tuple[int, bytes, bytes]:
        chunks = []
        more = True
        while more:
            message = await receive()
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        key = dict(scope["headers"]).get(b"x-api-key")
        if key != API_KEY.encode():
            return 403, b"application/json", b'{"message":"Unauthorized.","statusCode":403}'
        try:
            request = json.loads(b"".join(chunks))
            query, num = str(request["q"]), int(request.get("num", 10))
        except (ValueError, KeyError, TypeError):
            return 400, b"application/json", b'{"message":"Query is required","statusCode":400}'
        links = self._site_results(query, num)
        answer = {
            "searchParameters": {"q": query, "type": "search", "num": num, "engine": "google"},
            "organic": [
                {"title": f"Result {i}", "link": link, "snippet": "", "position": i}
                for i, link in enumerate(links, start=1)
            ],
            "credits": 1,
        }
        return 200, b"application/json", json.dumps(answer).encode()

    def _site_results(self, query: str, num: int) -> list[str]:
        parsed = _schemeless_page(query)
        if parsed is None:
            return []
        origin, n = parsed
        # Pages whose number starts with n's digits: n itself, then n0..n9, n00.. (site: is a
        # prefix match), so most answers carry a few near-miss links besides the page itself.
        found: list[str] = []
        width = 1
        candidates = [n]
        while len(found) < num and candidates and candidates[0] < self.pages:
            found += [f"http://{origin}/p/{c}" for c in candidates if indexed(c) and c > 0]
            candidates = [n * 10**width + d for d in range(10**width)]
            candidates = [c for c in candidates if c < self.pages]
            width += 1
        return found[:num]


def serve_app(app: Any, sockets: list[socket.socket], ports: dict[str, Any]) -> None:
    """Serve the ASGI ``app`` on ``sockets`` (uvicorn, h11) once ``ports`` are printed as one
    JSON line, until the parent closes this process's stdin (or dies)."""
    import uvicorn

    print(json.dumps(ports), flush=True)
    config = uvicorn.Config(
        app,
        http="h11",
        loop="asyncio",
        lifespan="off",
        log_level="warning",
        access_log=False,
        backlog=2048,
        timeout_keep_alive=60,
    )
    server = uvicorn.Server(config)

    def watch_stdin() -> None:
        sys.stdin.buffer.read()
        server.should_exit = True

    threading.Thread(target=watch_stdin, daemon=True).start()
    asyncio.run(server.serve(sockets=sockets))


def serve(site_ports: int, pages: int, cpu: int | None) -> None:
    if cpu is not None:
        os.sched_setaffinity(0, {cpu})
    site = [bind() for _ in range(site_ports)]
    api = bind()
    ports = {"site": [s.getsockname()[1] for s in site], "serper": api.getsockname()[1]}
    serve_app(App(pages), [*site, api], ports)


class Child:
    """A server child process (``python ARGS [--cpu C]``: pinned to CPU C) that prints its
    ports as one JSON line once it listens, then serves until its stdin closes: ``with`` it
    for the block. ``ports``: what it printed; ``url``: its ``port``'s base URL."""

    def __init__(self, args: list[str], cpu: int | None) -> None:
        self.args = [sys.executable, *args, *([] if cpu is None else ["--cpu", str(cpu)])]
        self._proc: subprocess.Popen[bytes] | None = None
        self.ports: dict[str, Any] = {}

    def __enter__(self) -> Self:
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        self._proc = subprocess.Popen(
            self.args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=REPO, env=env
        )
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline()
        if not line:
            self.__exit__()
            raise RuntimeError(f"{' '.join(self.args[1:3])} failed to start")
        self.ports = json.loads(line)
        return self

    def __exit__(self, *exc: object) -> None:
        proc = self._proc
        if proc is None:
            return
        self._proc = None
        if proc.stdin is not None:
            proc.stdin.close()  # the child's stdin watcher stops its server
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            core.stop(proc, timeout=5)
        if proc.stdout is not None:
            proc.stdout.close()

    @property
    def pid(self) -> int:
        assert self._proc is not None
        return self._proc.pid

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.ports['port']}"


class SiteProcess(Child):
    """This module's site and fake Serper as a child process (bench/check.py)."""

    def __init__(self, site_ports: int, pages: int, cpu: int | None) -> None:
        args = ["-m", "bench.lib.site", "--site-ports", str(site_ports), "--pages", str(pages)]
        super().__init__(args, cpu)

    @property
    def site_urls(self) -> list[str]:
        return [f"http://127.0.0.1:{p}" for p in self.ports["site"]]

    @property
    def serper_url(self) -> str:
        return f"http://127.0.0.1:{self.ports['serper']}"


class AuditSiteProcess(Child):
    """``python -m bench.lib.auditsite`` (N pages to audit) as a child process, until the
    block ends (bench/audit.py, bench/dashboard.py); ``url`` is its home page's."""

    def __init__(self, pages: int, cpu: int | None) -> None:
        super().__init__(["-m", "bench.lib.auditsite", "--pages", str(pages)], cpu)

    @property
    def url(self) -> str:
        return super().url + "/"

    def stats(self) -> dict[str, int]:
        """The server's request counts so far."""
        with urllib.request.urlopen(self.url + STATS_PATH.lstrip("/"), timeout=10) as answer:
            counts: dict[str, int] = json.loads(answer.read())
        return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site-ports", type=int, default=4)
    parser.add_argument("--pages", type=int, default=2000)
    parser.add_argument("--cpu", type=int, default=None, help="pin the server to this CPU")
    args = parser.parse_args()
    serve(args.site_ports, args.pages, args.cpu)


if __name__ == "__main__":
    main()
