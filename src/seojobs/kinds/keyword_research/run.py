"""The handler: ask the chosen provider once, store the keywords as the project's collection.

A lookup has no items: it is one provider exchange (two for DataForSEO seeds: their own
volumes, then ideas). A job rescued after a crash asks again and replaces what it collected.
Every provider failure ends the job with the provider's code; the adapters have already
spent their bounded retries on 429s, 5xx and transport errors, and a failed job is never
retried automatically.
"""

from __future__ import annotations

from seojobs.engine.context import JobContext, JobFailed
from seojobs.kinds import providers
from seojobs.kinds.keyword_research.declared import (
    ENGINE,
    KEYWORDS,
    provider_of,
    subject,
)
from seojobs.kinds.keyword_research.params import KeywordResearchParams
from seojobs.providers.base import NOT_CONFIGURED, ProviderError
from seojobs.providers.dataforseo_keywords import DataForSeoKeywords
from seojobs.providers.google_ads import GoogleAdsKeywords
from seojobs.providers.keywords import KeywordSource, Research

ADAPTERS: dict[str, type[DataForSeoKeywords] | type[GoogleAdsKeywords]] = {
    "dataforseo": DataForSeoKeywords,
    "google_ads": GoogleAdsKeywords,
}


async def run(ctx: JobContext[KeywordResearchParams]) -> None:
    params = ctx.params
    name = provider_of(params, ctx.settings)
    if name is None:  # configured when created, gone since
        why = providers.missing(ctx.settings, KEYWORDS, ENGINE) or ""
        raise JobFailed(NOT_CONFIGURED, why)
    try:
        source: KeywordSource = ADAPTERS[name](ctx.settings)
    except ProviderError as exc:
        raise JobFailed(exc.code, exc.message) from None
    request = Research(
        seeds=tuple(params.seeds or ()),
        url=params.url,
        location=params.location,
        language=params.language,
        limit=params.limit,
    )
    try:
        await ctx.ensure_held()  # a provider call is billed: not for a job taken away
        keywords = await source.research(request)
    except ProviderError as exc:
        raise JobFailed(exc.code, exc.message) from None
    finally:
        await source.aclose()
    data = {
        "provider": name,
        "location": params.location,
        "language": params.language,
        "seeds": params.seeds,
        "url": params.url,
        "keywords": [k.to_dict() for k in keywords],
    }
    await ctx.collect(subject(params), data)
    ctx.result = {"provider": name, "keywords": len(keywords), "subject": subject(params)}
