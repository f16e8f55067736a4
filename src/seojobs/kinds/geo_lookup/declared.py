"""What a GEO lookup declares, loaded when the registry is: its settings, its provider role,
the refusal at creation and its collections' subjects. The handler and the adapters
(``run``) are loaded at a worker's first lookup."""

from __future__ import annotations

from typing import Any

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from seojobs.engine.kindsettings import moved
from seojobs.engine.registry import Refusal
from seojobs.engine.roles import ProviderRole
from seojobs.kinds import providers
from seojobs.kinds.geo_lookup.params import ENGINES, PROVIDERS, GeoLookupParams
from seojobs.providers.base import NOT_CONFIGURED

VOICE = "share-of-voice"  # the subject of a lookup's share of voice (no provider's name)


class GeoLookupSettings(BaseSettings):
    """AI search's own settings (``SEOJOBS_GEO_LOOKUP_...``)."""

    model_config = SettingsConfigDict(env_prefix="SEOJOBS_GEO_LOOKUP_", extra="ignore")
    providers: list[str] | None = Field(
        default=None,
        validation_alias=moved("seojobs_geo_lookup_providers", "seojobs_geo_providers"),
        description="AI search, the order a job without `provider` tries (default: openai, "
        "perplexity, gemini, anthropic; Google's AI Overviews, serpapi_ai_overview and "
        "dataforseo_ai_overview, when listed).",
    )


# AI search has no engines: one order (SEOJOBS_GEO_LOOKUP_PROVIDERS, or SEOJOBS_GEO_PROVIDERS,
# a JSON list) under "ai". The AI Overview adapters are not in the default order: the SERP
# providers' keys are set for rank and index checks, which should not start answering GEO
# prompts; a job names them (or google_ai_overview), or the setting lists them.
AI = "ai"
AI_SEARCH = ProviderRole(
    "AI search",
    "providers",
    {AI: ("openai", "perplexity", "gemini", "anthropic")},
    single=AI,
    settings=GeoLookupSettings,
)


def subject(provider: str, prompt: str) -> str:
    """A collection's subject: one per provider and prompt (a provider name has no space)."""
    return f"{provider} {prompt}"


def _named(params: GeoLookupParams, settings: Any) -> list[str]:
    """The adapters a job asks, in order: the one its params name (an engine's: those that
    serve it), else those of SEOJOBS_GEO_LOOKUP_PROVIDERS."""
    if params.provider is not None:
        return list(ENGINES.get(params.provider, (params.provider,)))
    return [name for name in AI_SEARCH.order(settings, AI) if name in PROVIDERS]


def provider_of(params: GeoLookupParams, settings: Any) -> str | None:
    """The first configured adapter the job asks; the one it names when none is."""
    names = _named(params, settings)
    chosen = next((name for name in names if providers.configured(settings, name)), None)
    if chosen is None and params.provider is not None:
        return params.provider
    return chosen


def _missing(settings: Any) -> str:
    listed = AI_SEARCH.order(settings, AI)
    hints = [f"{providers.setting_names(n)} ({n})" for n in listed if n in PROVIDERS]
    advice = "set " + ", or ".join(hints) if hints else f"list a provider in {AI_SEARCH.env}"
    return f"no provider is configured for AI search: {advice}"


def refusal(params: GeoLookupParams, settings: Any) -> Refusal | None:
    """Refused at creation when the chosen provider, or every one in the order, has no key."""
    name = provider_of(params, settings)
    if name is None:
        return Refusal(NOT_CONFIGURED, _missing(settings), "provider")
    if not providers.configured(settings, name) and name in ENGINES:
        hints = ", or ".join(f"{providers.setting_names(n)} ({n})" for n in ENGINES[name])
        return Refusal(NOT_CONFIGURED, f"{name} is not configured: set {hints}", "provider")
    return providers.unconfigured(settings, name, "provider")
