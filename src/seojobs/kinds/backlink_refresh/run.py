"""The handler: each pair an item, its donor fetched once per job through the safe fetcher
(robots.txt, the private-network guard, politeness), then every pair collected with its
history once all are checked.

A rescued job never checks a recorded pair again; what it collects is compared with the
project's last published collection, never with its own unpublished one, so running the
collection step again gives the same history fields.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

from seojobs.engine.context import ItemResult, JobContext
from seojobs.fetch import Fetcher
from seojobs.kinds.backlink_refresh.check import DonorPage, pair_result, with_history
from seojobs.kinds.backlink_refresh.params import BacklinkRefreshParams, normalised, subject
from seojobs.records import ItemRecord
from seojobs.timefmt import rfc3339


def pair_of(item: ItemRecord) -> tuple[str, str]:
    data = item.data if isinstance(item.data, dict) else {}
    return str(data.get("donor", "")), str(data.get("target", ""))


class Donors:
    """Donor pages by normalised URL, each fetched once per job (pairs may share a donor)."""

    def __init__(self, fetcher: Fetcher) -> None:
        self.fetcher = fetcher
        self._pages: dict[str, asyncio.Task[DonorPage]] = {}

    async def page(self, url: str) -> DonorPage:
        key = normalised(url)
        task = self._pages.get(key)
        if task is None:
            task = asyncio.ensure_future(self._load(url))
            self._pages[key] = task
        return await asyncio.shield(task)  # a cancelled pair leaves the fetch to the others

    async def _load(self, url: str) -> DonorPage:
        return DonorPage.of(*await self.fetcher.fetch_checked(url))

    async def aclose(self) -> None:
        for task in self._pages.values():
            task.cancel()
        await asyncio.gather(*self._pages.values(), return_exceptions=True)


async def _collect(ctx: JobContext[BacklinkRefreshParams]) -> dict[str, int]:
    counts: dict[str, int] = {}
    async for item in ctx.items():
        if not item.result:
            continue
        donor, target = pair_of(item)
        key = subject(donor, target)
        data = with_history(item.result, await ctx.published(key))
        await ctx.collect(key, data)
        counts[data["link_status"]] = counts.get(data["link_status"], 0) + 1
    return counts


async def run(ctx: JobContext[BacklinkRefreshParams]) -> None:
    mode = ctx.params.match

    async def one(item: ItemRecord) -> ItemResult:
        donor, target = pair_of(item)
        page = await donors.page(donor)
        checked_at = rfc3339(datetime.now(UTC))
        result = pair_result(page, donor, target, mode, checked_at)
        return ItemResult(outcome=result["link_status"], result=result)

    async with Fetcher(ctx.settings) as fetcher:
        donors = Donors(fetcher)
        try:
            await ctx.run_items(one, concurrency=ctx.kind_settings.concurrency)
        finally:
            await donors.aclose()
    counts: dict[str, Any] = await _collect(ctx)
    ctx.result = {"pairs": len(ctx.params.links), "link_status": counts}
