"""Links to other sites: does each target answer? HEAD first, GET when HEAD is refused.

Each external URL is checked once per audit (the answer is shared by every page linking to
it), and at most ``per_host`` URLs of one host are checked at all, so a site that links a
thousand times to one other site does not crawl it. robots.txt is obeyed there too; a URL
it disallows, or one over the budget, is left unchecked rather than called broken.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

from seojobs.fetch import Fetcher, FetchResult
from seojobs.fetch.errors import REDIRECT_LOOP, SSRF_REFUSED
from seojobs.fetch.urls import parse_url

# HEAD answers that say nothing about GET (servers and CDNs that refuse HEAD): try a GET
# before calling the link broken.
_HEAD_REFUSED = frozenset({403, 405, 501})


def _broken(result: FetchResult) -> bool:
    """An error answer (429 is a busy server, not a broken link) or no answer at all."""
    if result.status is None:
        # A target our own guard refused says nothing about the link; a loop is reported
        # as such on pages of the site, not guessed at elsewhere.
        return result.error_kind not in (SSRF_REFUSED, REDIRECT_LOOP)
    return result.status >= 400 and result.status != 429


class ExternalLinks:
    def __init__(self, fetcher: Fetcher, per_host: int) -> None:
        self._fetcher = fetcher
        self._per_host = per_host
        self._checked: dict[str, asyncio.Task[FetchResult | None]] = {}
        self._hosts: Counter[str] = Counter()

    async def broken(self, urls: list[str]) -> list[dict[str, Any]]:
        """The broken ones among ``urls``, each with its status or error."""
        unique = list(dict.fromkeys(urls))
        results = await asyncio.gather(*(self._check(url) for url in unique))
        return [
            {"target": url, "status": r.status, "error_kind": r.error_kind}
            for url, r in zip(unique, results, strict=True)
            if r is not None and _broken(r)
        ]

    def _check(self, url: str) -> asyncio.Task[FetchResult | None] | asyncio.Future[None]:
        known = self._checked.get(url)
        if known is not None:
            return known
        host = parse_url(url).host
        if self._hosts[host] >= self._per_host:
            unchecked: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            unchecked.set_result(None)
            return unchecked
        self._hosts[host] += 1
        task = asyncio.ensure_future(self._status(url))
        self._checked[url] = task
        return task

    async def _status(self, url: str) -> FetchResult | None:
        if not (await self._fetcher.robots_verdict(url)).allowed:
            return None
        head = await self._fetcher.fetch(url, method="HEAD")
        if head.status in _HEAD_REFUSED:
            return await self._fetcher.fetch(url)
        return head
