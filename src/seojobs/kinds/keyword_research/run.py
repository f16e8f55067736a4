"""The handler: ask the chosen provider once, store the keywords as the project's collection.

A lookup has no items: it is one provider exchange (two for DataForSEO seeds: their own
volumes, then ideas). A job rescued after a crash asks again and replaces what it collected.
Every provider failure ends the job with the provider's code; the adapters have already
spent their bounded retries on 429s, 5xx and transport errors, and a failed job is never
retried automatically.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from seojobs.engine.context import JobContext, JobFailed
from seojobs.engine.kindsettings import moved
from seojobs.engine.registry import Refusal
from seojobs.engine.roles import ProviderRole
from seojobs.kinds import providers
from seojobs.kinds.keyword_research.params import KeywordResearchParams
from seojobs.providers.base import NOT_CONFIGURED, ProviderError
from seojobs.providers.dataforseo_keywords import DataForSeoKeywords
from seojobs.providers.google_ads import GoogleAdsKeywords
from seojobs.providers.keywords import KeywordSource, Research

ENGINE = "google"  # the one engine of SEOJOBS_KEYWORD_RESEARCH_PROVIDERS
# The first configured one is a job's default provider.


class KeywordResearchSettings(BaseSettings):
    """Keyword research's own settings (``SEOJOBS_KEYWORD_RESEARCH_...``)."""

    model_config = SettingsConfigDict(env_prefix="SEOJOBS_KEYWORD_RESEARCH_", extra="ignore")
    providers: dict[str, list[str]] | None = Field(
        default=None,
        validation_alias=moved("seojobs_keyword_research_providers", "seojobs_keyword_providers"),
        description='Keyword research; "google" is the only engine (default: dataforseo, '
        "google_ads). The first configured one is a job's default provider.",
    )


KEYWORDS = ProviderRole(
    "keywords",
    "providers",
    {ENGINE: ("dataforseo", "google_ads")},
    settings=KeywordResearchSettings,
)
ADAPTERS: dict[str, type[DataForSeoKeywords] | type[GoogleAdsKeywords]] = {
    "dataforseo": DataForSeoKeywords,
    "google_ads": GoogleAdsKeywords,
}


def subject(params: KeywordResearchParams) -> str:
    """What a collection is about: the market (location and language). A project keeps the
    latest research per market; each job's keywords replace that market's."""
    return f"{params.location}/{params.language}"


def provider_of(params: KeywordResearchParams, settings: Any) -> str | None:
    """The provider a job uses: its own choice, else the first configured one in order."""
    if params.provider is not None:
        return params.provider
    return providers.chosen(settings, KEYWORDS, ENGINE)


def refusal(params: KeywordResearchParams, settings: Any) -> Refusal | None:
    """Refused at creation when no provider is configured (the chosen one, or any in the
    order). A market the provider cannot express (a location name or a language Google Ads
    does not list) fails the job when it runs (``provider_rejected``): the params' schema
    cannot say which provider a deployment defaults to, and what it admits is accepted."""
    name = provider_of(params, settings)
    if name is None:
        return providers.refusal(settings, KEYWORDS, ENGINE, field="provider")
    if not providers.configured(settings, name):
        message = f"{name} is not configured: set {providers.setting_names(name)}"
        return Refusal(NOT_CONFIGURED, message, "provider")
    return None


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
