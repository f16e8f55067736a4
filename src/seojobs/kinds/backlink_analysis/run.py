"""The handler: ask DataForSEO's Backlinks API once (up to five calls), compare what it lists
with the project's previous analysis of the same target, store it as the project's collection.

An analysis has no items: it is one provider exchange. A job rescued after a crash asks again
and replaces what it collected; what it compares with is the project's last *published*
analysis, never its own, so the new and lost counts come out the same. Every provider failure
ends the job with the provider's code (the adapter has spent its bounded retries).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from seojobs.engine.context import JobContext, JobFailed
from seojobs.engine.registry import Refusal
from seojobs.kinds import providers
from seojobs.kinds.backlink_analysis.params import BacklinkAnalysisParams
from seojobs.providers.base import NOT_CONFIGURED, ProviderError
from seojobs.providers.dataforseo_backlinks import DataForSeoBacklinks, Lookup

PROVIDER = "dataforseo"


def subject(params: BacklinkAnalysisParams) -> str:
    """What a collection is about: the target as DataForSEO is asked about it."""
    return params.target


def refusal(_params: BacklinkAnalysisParams, settings: Any) -> Refusal | None:
    """Refused at creation when DataForSEO is not configured (nothing else serves it)."""
    if providers.configured(settings, PROVIDER):
        return None
    message = f"{PROVIDER} is not configured: set {providers.setting_names(PROVIDER)}"
    return Refusal(NOT_CONFIGURED, message, "domain")


def link_key(link: dict[str, Any]) -> str:
    """A link's identity across analyses: the page it is on and the URL it points to."""
    return f"{link.get('url_from')} {link.get('url_to')}"


def compared(links: list[dict[str, Any]], before: Any) -> tuple[list[dict[str, Any]], list[Any]]:
    """Each link marked ``new`` (live now, not live in the previous analysis: every live link
    of the first analysis is new) and the links that were live before and are lost or gone
    now (each with ``reason``: ``lost`` the index says removed, ``gone`` no longer listed)."""
    previous = before.get("links", []) if isinstance(before, dict) else []
    was_live = {link_key(p): p for p in previous if isinstance(p, dict) and not p.get("is_lost")}
    now = {link_key(link): link for link in links}
    marked = [
        {**link, "new": not link["is_lost"] and link_key(link) not in was_live} for link in links
    ]
    lost = []
    for key, link in was_live.items():
        current = now.get(key)
        if current is None:
            lost.append({**link, "new": False, "reason": "gone"})
        elif current["is_lost"]:
            lost.append({**current, "new": False, "reason": "lost"})
    return marked, lost


async def run(ctx: JobContext[BacklinkAnalysisParams]) -> None:
    params = ctx.params
    try:
        source = DataForSeoBacklinks(ctx.settings)
    except ProviderError as exc:  # not configured since the job was created
        raise JobFailed(exc.code, exc.message) from None
    lookup = Lookup(
        target=params.target,
        include_subdomains=params.include_subdomains,
        mode=params.mode,
        status=params.status,
        limit=params.limit,
        summaries=params.summaries,
        period_days=params.period_days,
        today=datetime.now(UTC).date(),
    )
    try:
        await ctx.ensure_held()  # a provider call is billed: not for a job taken away
        found = await source.analyse(lookup)
    except ProviderError as exc:
        raise JobFailed(exc.code, exc.message) from None
    finally:
        await source.aclose()
    key = subject(params)
    before = await ctx.published(key)
    links, lost = compared([link.to_dict() for link in found.links], before)
    new = sum(1 for link in links if link["new"])
    data = {
        "provider": PROVIDER,
        "target": key,
        "include_subdomains": params.include_subdomains,
        "mode": params.mode,
        "status": params.status,
        "summary": found.summary,
        "new": new,
        "lost": len(lost),
        "analysis_job_id": ctx.job.id,  # what the next analysis names as its previous one
        "previous_job_id": before.get("analysis_job_id") if isinstance(before, dict) else None,
        "links": links,
        "lost_links": lost,
        "referring_domains": found.referring_domains,
        "anchors": found.anchors,
        "timeline": found.timeline,
    }
    await ctx.collect(key, data)
    ctx.result = {"provider": PROVIDER, "links": len(links), "new": new, "lost": len(lost)}
