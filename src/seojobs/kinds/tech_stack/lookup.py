"""The handler: fetch each URL through ``seojobs.fetch``, match it, collect per site.

Each URL is an item, so a rescued job never fetches a recorded page again. Matching runs in
a thread (the event loop keeps the job's lease alive meanwhile), each search under a timeout.
"""

from __future__ import annotations

import asyncio
from typing import Any

from seojobs.engine.context import ItemResult, JobContext, JobFailed
from seojobs.fetch import Fetcher
from seojobs.kinds.tech_stack import database, report
from seojobs.kinds.tech_stack.database import FINGERPRINTS_MISSING
from seojobs.kinds.tech_stack.matcher import Limits, match
from seojobs.kinds.tech_stack.page import read_page
from seojobs.kinds.tech_stack.params import TechStackParams, subject
from seojobs.records import ItemRecord

FINGERPRINTS_INVALID = "fingerprints_invalid"
TARGET_UNREACHABLE = "target_unreachable"


def fingerprints(path: str) -> database.Fingerprints:
    """The installed database, or the job's coded failure saying what to run."""
    try:
        return database.load(path)
    except database.FingerprintsMissing as exc:
        raise JobFailed(FINGERPRINTS_MISSING, str(exc)) from None
    except database.InvalidDatabase as exc:
        message = f"the fingerprint database is unusable ({exc}): run `{database.UPDATE_COMMAND}`"
        raise JobFailed(FINGERPRINTS_INVALID, message) from None


class Lookup:
    def __init__(self, db: database.Fingerprints, fetcher: Fetcher, kind_settings: Any) -> None:
        self.db = db
        self.fetcher = fetcher
        self.max_chars = kind_settings.max_chars
        self.limits = Limits(kind_settings.pattern_timeout, kind_settings.page_budget)

    async def page(self, item: ItemRecord) -> ItemResult:
        url = item.input
        fetched = await self.fetcher.fetch(url)
        if fetched.status is None:
            message = f"{url} did not answer: {fetched.error}"
            result = {"url": url, "final_url": fetched.final_url, "status": None, "error": message}
            return ItemResult.error(TARGET_UNREACHABLE, message, result=result)
        facts = read_page(fetched, self.max_chars)
        outcome = await asyncio.to_thread(match, self.db, facts, self.limits)
        found = report.page_result(url, fetched.final_url, fetched.status, outcome, self.db)
        return ItemResult(outcome="looked_up", result=found)


async def run(ctx: JobContext[TechStackParams]) -> None:
    db = await asyncio.to_thread(fingerprints, ctx.kind_settings.fingerprints_path)
    async with Fetcher(ctx.settings) as fetcher:
        lookup = Lookup(db, fetcher, ctx.kind_settings)
        await ctx.run_items(lookup.page, concurrency=ctx.kind_settings.concurrency)
    sites: dict[str, list[dict[str, Any]]] = {}
    answered = 0
    async for item in ctx.items():
        if item.result is not None:
            sites.setdefault(subject(item.input), []).append(item.result)
            answered += item.error_code is None
    if not answered:
        errors = "; ".join(
            str(p.get("error")) for pages in sites.values() for p in pages if p.get("error")
        )
        raise JobFailed(TARGET_UNREACHABLE, f"no URL of the job answered: {errors}")
    names: set[str] = set()
    for name, pages in sites.items():
        if all(page.get("status") is None for page in pages):
            continue  # nothing learnt about this site: its last collection stays the latest
        collected = report.site(name, pages)
        names.update(t["name"] for t in collected["technologies"])
        await ctx.collect(name, collected)
    ctx.result = {"sites": len(sites), "pages_answered": answered, "technologies": len(names)}
