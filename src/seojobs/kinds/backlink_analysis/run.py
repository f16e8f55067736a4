"""The handler: ask DataForSEO's Backlinks API once (up to five calls), compare what it lists
with the project's previous analysis of the same target, store it as the project's collection.

An analysis has no items: it is one provider exchange. A job rescued after a crash asks again
and replaces what it collected; what it compares with is the project's last *published*
analysis, never its own, so the new and lost counts come out the same. Every provider failure
ends the job with the provider's code (the adapter has spent its bounded retries).
"""

from __future__ import annotations

from datetime import UTC, datetime

from seojobs.engine.context import JobContext, JobFailed
from seojobs.kinds.backlink_analysis.declared import PROVIDER, compared, subject
from seojobs.kinds.backlink_analysis.params import BacklinkAnalysisParams
from seojobs.providers.base import ProviderError
from seojobs.providers.dataforseo_backlinks import DataForSeoBacklinks, Lookup


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
