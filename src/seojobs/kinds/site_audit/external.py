"""Links to other sites: does each target answer? HEAD first, GET when HEAD is refused.

Each external URL is checked once per audit (the answer is shared by every page linking to
it), at most ``per_host`` URLs of one host are checked at all, so a site that links a
thousand times to one other site does not crawl it, and at most ``budget`` URLs over every host
(issue 25.4b), so a page linking thousands of hosts does not make thousands of requests for
one page of quota. robots.txt is obeyed there too; a URL
it disallows, or one over the budget, is left unchecked rather than called broken.

Each page's record lists the outcome of each of its external links (``outcomes``), so the
answers are stored with the pages, durably: an audit resumed after a crash starts from them
(``restore``) and checks again only what no recorded page had checked.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterable
from typing import Any

from seojobs.fetch import Fetcher, FetchResult
from seojobs.fetch.errors import REDIRECT_LOOP, SSRF_REFUSED
from seojobs.fetch.urls import parse_url

# HEAD answers that say nothing about GET (servers and CDNs that refuse HEAD): try a GET
# before calling the link broken.
_HEAD_REFUSED = frozenset({403, 405, 501})
# What became of one URL: answered (``status`` or ``error_kind``), not checked because
# robots.txt disallows it, or not checked because its host's or the audit's budget was spent.
CHECKED, DISALLOWED, OVER_BUDGET = "checked", "disallowed", "over_budget"
_ERROR_CHARS = 300  # an outcome's error message, as stored with the page


def is_broken(outcome: dict[str, Any]) -> bool:
    """An error answer (429 is a busy server, not a broken link) or no answer at all."""
    if outcome["state"] != CHECKED:
        return False
    status = outcome["status"]
    if status is None:
        # A target our own guard refused says nothing about the link; a loop is reported
        # as such on pages of the site, not guessed at elsewhere.
        return outcome["error_kind"] not in (SSRF_REFUSED, REDIRECT_LOOP)
    return bool(status >= 400 and status != 429)


def _outcome(url: str, state: str, result: FetchResult | None = None) -> dict[str, Any]:
    error = result.error if result else None
    return {
        "url": url,
        "state": state,
        "status": result.status if result else None,
        "error_kind": result.error_kind if result else None,
        "error": error[:_ERROR_CHARS] if error else None,
    }


class ExternalLinks:
    def __init__(self, fetcher: Fetcher, per_host: int, budget: int) -> None:
        self._fetcher = fetcher
        self._per_host = per_host
        self._budget = budget  # URLs checked over every host (each: robots.txt, HEAD, GET)
        # URL -> its outcome, or the check under way (pages linking to it wait on the same).
        self._checked: dict[str, asyncio.Task[dict[str, Any]] | dict[str, Any]] = {}
        self._hosts: Counter[str] = Counter()
        self._used = 0  # URLs checked (or restored as checked) over every host

    def restore(self, outcomes: Iterable[dict[str, Any]]) -> None:
        """Start from outcomes stored by an earlier run of the audit: each is not checked
        again, and counts against its host's budget as it did."""
        for outcome in outcomes:
            url = outcome["url"]
            if outcome["state"] == OVER_BUDGET or url in self._checked:
                continue
            self._checked[url] = outcome
            self._hosts[parse_url(url).host] += 1
            self._used += 1

    async def outcomes(self, urls: list[str]) -> list[dict[str, Any]]:
        """The outcome of each of ``urls`` (once each, in order)."""
        unique = list(dict.fromkeys(urls))
        return list(await asyncio.gather(*(self._outcome_of(url) for url in unique)))

    async def _outcome_of(self, url: str) -> dict[str, Any]:
        known = self._checked.get(url)
        if known is None:
            host = parse_url(url).host
            if self._hosts[host] >= self._per_host or self._used >= self._budget:
                return _outcome(url, OVER_BUDGET)
            self._hosts[host] += 1
            self._used += 1
            known = self._checked[url] = asyncio.ensure_future(self._check(url))
        return known if isinstance(known, dict) else await known

    async def _check(self, url: str) -> dict[str, Any]:
        if not (await self._fetcher.robots_verdict(url)).allowed:
            return _outcome(url, DISALLOWED)
        result = await self._fetcher.fetch(url, method="HEAD")
        if result.status in _HEAD_REFUSED:
            result = await self._fetcher.fetch(url)
        return _outcome(url, CHECKED, result)
