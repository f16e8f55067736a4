"""``bench/audit.py``'s ceiling, a bare aiohttp + selectolax crawl (docs/bench/audit.md):
``python -m bench.lib.crawl_bare START_URL CONCURRENCY`` prints ``{"seconds", "pages", "cpu"}``."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from urllib.parse import urldefrag, urljoin, urlsplit

import aiohttp
from selectolax.lexbor import LexborHTMLParser

from bench.lib.auditsite import DISALLOWED


def _text(tree: LexborHTMLParser, selector: str) -> str | None:
    node = tree.css_first(selector)
    return node.text(strip=True) if node is not None else None


def _attr(tree: LexborHTMLParser, selector: str, name: str) -> str | None:
    node = tree.css_first(selector)
    return node.attributes.get(name) if node is not None else None


def extract(url: str, body: bytes) -> tuple[dict[str, str | None], list[str]]:
    """What an SEO crawler reads from a page, and its links as absolute URLs."""
    tree = LexborHTMLParser(body)
    facts = {
        "title": _text(tree, "title"),
        "description": _attr(tree, 'meta[name="description"]', "content"),
        "h1": _text(tree, "h1"),
        "canonical": _attr(tree, 'link[rel="canonical"]', "href"),
    }
    links = []
    for node in tree.css("a[href]"):
        href = node.attributes.get("href")
        if href:
            links.append(urldefrag(urljoin(url, href.strip()))[0])
    return facts, links


async def crawl(start: str, concurrency: int) -> tuple[float, int]:
    """Crawl from ``start``; return (seconds, HTML pages fetched with 200)."""
    origin = urlsplit(start).netloc
    seen = {start}
    frontier: asyncio.Queue[str] = asyncio.Queue()
    frontier.put_nowait(start)
    pages = 0

    def follow(link: str) -> bool:
        parts = urlsplit(link)
        return parts.netloc == origin and not parts.path.startswith(DISALLOWED)

    async def lane(session: aiohttp.ClientSession) -> None:
        nonlocal pages
        while True:
            url = await frontier.get()
            try:
                async with session.get(url) as response:
                    body = await response.read()
                    html = response.status == 200 and "html" in response.content_type
                if html:
                    pages += 1
                    _facts, links = extract(url, body)
                    for link in links:
                        if link not in seen and follow(link):
                            seen.add(link)
                            frontier.put_nowait(link)
            finally:
                frontier.task_done()

    started = time.perf_counter()
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:
        lanes = [asyncio.create_task(lane(session)) for _ in range(concurrency)]
        waiting = asyncio.create_task(frontier.join())
        done, _ = await asyncio.wait([waiting, *lanes], return_when=asyncio.FIRST_COMPLETED)
        for task in lanes:
            task.cancel()
        failed = [t for t in done if t is not waiting and not t.cancelled() and t.exception()]
        if failed:
            raise RuntimeError("a lane of the bare crawl failed") from failed[0].exception()
    return time.perf_counter() - started, pages


def main() -> None:
    start, concurrency = sys.argv[1], int(sys.argv[2])
    cpu = time.process_time()
    seconds, pages = asyncio.run(crawl(start, concurrency))
    cpu = time.process_time() - cpu
    print(json.dumps({"seconds": seconds, "pages": pages, "cpu": cpu}), flush=True)


if __name__ == "__main__":
    main()
