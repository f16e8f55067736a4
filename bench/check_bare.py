"""The ceiling for ``bench/check.py``: a bare httpx loop doing each URL's two requests.

Per URL, the same requests our index check sends: the page GET (started as its own task) and
the Serper POST alongside it, then the page body is read in full and the Serper JSON decoded.
``concurrency`` URLs are in flight at once. Two plain ``httpx.AsyncClient`` objects with
httpx's defaults (ours also uses one client for pages and one for the provider); no robots.txt,
no database, no framework.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import httpx

from bench.check_site import API_KEY


async def _check(site: httpx.AsyncClient, api: httpx.AsyncClient, search: str, url: str) -> bool:
    page = asyncio.create_task(site.get(url))
    answer = await api.post(
        search,
        json={"q": "site:" + url.split("://", 1)[1], "num": 10},
        headers={"X-API-KEY": API_KEY},
    )
    listed = url in {item.get("link") for item in answer.json().get("organic", [])}
    response = await page
    if response.status_code != 200 or answer.status_code != 200 or not response.content:
        raise RuntimeError(f"bare loop: {url} answered {response.status_code}/{answer.status_code}")
    return listed


async def run(urls: list[str], serper_url: str, concurrency: int) -> tuple[float, int]:
    """Check every URL; return (seconds, URLs listed by the fake Serper)."""
    search = serper_url.rstrip("/") + "/search"
    todo: Iterator[str] = iter(urls)
    listed = 0

    async def lane(site: httpx.AsyncClient, api: httpx.AsyncClient) -> None:
        nonlocal listed
        for url in todo:
            hit = await _check(site, api, search, url)
            listed += hit

    started = time.perf_counter()
    async with httpx.AsyncClient() as site, httpx.AsyncClient() as api:
        await asyncio.gather(*(lane(site, api) for _ in range(concurrency)))
    return time.perf_counter() - started, listed
