"""Which provider adapter serves a kind's role on an engine: the role's order (declared by
the kind, ``seojobs.engine.roles``), the first adapter whose credentials are set."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from seojobs.engine.context import JobFailed
from seojobs.engine.registry import Refusal
from seojobs.engine.roles import ProviderRole
from seojobs.providers.base import NOT_CONFIGURED, ProviderError
from seojobs.providers.google_ads import NEEDS as GOOGLE_ADS_NEEDS
from seojobs.settings import Settings


@dataclass(frozen=True)
class ProviderSpec:
    target: str  # "module:Class"
    needs: tuple[str, ...]  # settings that must be set for it to be usable


PROVIDERS: dict[str, ProviderSpec] = {
    "indexnow": ProviderSpec("seojobs.providers.indexnow:IndexNowSubmitter", ("indexnow_key",)),
    "google_indexing": ProviderSpec(
        "seojobs.providers.google_indexing:GoogleIndexingSubmitter", ("google_credentials_file",)
    ),
    "url_inspection": ProviderSpec(
        "seojobs.providers.url_inspection:UrlInspectionChecker", ("google_credentials_file",)
    ),
    "serpapi": ProviderSpec("seojobs.providers.serpapi:SerpApiChecker", ("serpapi_key",)),
    "dataforseo": ProviderSpec(
        "seojobs.providers.dataforseo:DataForSeoChecker",
        ("dataforseo_login", "dataforseo_password"),
    ),
    "serper": ProviderSpec("seojobs.providers.serper:SerperChecker", ("serper_key",)),
    "google_ads": ProviderSpec("seojobs.providers.google_ads:GoogleAdsKeywords", GOOGLE_ADS_NEEDS),
    "openai": ProviderSpec("seojobs.providers.openai_responses:OpenAiSearch", ("openai_api_key",)),
    "perplexity": ProviderSpec(
        "seojobs.providers.perplexity:PerplexitySearch", ("perplexity_api_key",)
    ),
    "gemini": ProviderSpec("seojobs.providers.gemini:GeminiSearch", ("gemini_api_key",)),
    "anthropic": ProviderSpec(
        "seojobs.providers.anthropic_search:AnthropicSearch", ("anthropic_api_key",)
    ),
    "serpapi_ai_overview": ProviderSpec(
        "seojobs.providers.ai_overview:SerpApiOverview", ("serpapi_key",)
    ),
    "dataforseo_ai_overview": ProviderSpec(
        "seojobs.providers.ai_overview:DataForSeoOverview",
        ("dataforseo_login", "dataforseo_password"),
    ),
}


def configured(settings: Settings, name: str) -> bool:
    spec = PROVIDERS.get(name)
    return spec is not None and all(getattr(settings, n, None) for n in spec.needs)


def chosen(settings: Settings, role: ProviderRole, engine: str) -> str | None:
    """The provider that serves ``engine`` in this role: the first configured one in order."""
    return next((name for name in role.order(settings, engine) if configured(settings, name)), None)


def setting_names(name: str) -> str:
    return " and ".join(f"SEOJOBS_{n.upper()}" for n in PROVIDERS[name].needs)


def missing(settings: Settings, role: ProviderRole, engine: str) -> str | None:
    """Why no provider serves ``engine`` in this role, naming the settings to set; None if
    one does."""
    if chosen(settings, role, engine) is not None:
        return None
    hints = [f"{setting_names(n)} ({n})" for n in role.order(settings, engine) if n in PROVIDERS]
    advice = "set " + ", or ".join(hints) if hints else f"add a provider in {role.env}"
    return f"no provider is configured for {role.name} on engine {engine!r}: {advice}"


def refusal(
    settings: Settings, role: ProviderRole, engine: str, field: str = "engine"
) -> Refusal | None:
    why = missing(settings, role, engine)
    return Refusal(NOT_CONFIGURED, why, field) if why else None


def unconfigured(settings: Settings, name: str, field: str) -> Refusal | None:
    """``name`` named by a job (or the only one that serves it) but without its settings."""
    if configured(settings, name):
        return None
    return Refusal(NOT_CONFIGURED, f"{name} is not configured: set {setting_names(name)}", field)


def choice(settings: Settings, role: ProviderRole, engine: str, named: str | None) -> str | None:
    """The provider a job uses: the one it names, else the first configured one in order."""
    return named if named is not None else chosen(settings, role, engine)


def choice_refusal(
    settings: Settings, role: ProviderRole, engine: str, named: str | None
) -> Refusal | None:
    """Refused at creation (on ``provider``) when the provider a job names has no settings, or
    when it names none and none in the role's order is configured."""
    name = choice(settings, role, engine, named)
    if name is None:
        return refusal(settings, role, engine, field="provider")
    return unconfigured(settings, name, "provider")


def build(name: str, settings: Settings) -> Any:
    module_name, _, class_name = PROVIDERS[name].target.partition(":")
    cls = getattr(importlib.import_module(module_name), class_name)
    return cls(settings)


def pick(settings: Settings, role: ProviderRole, engine: str) -> Any:
    """The adapter that serves ``engine`` in this role, built; a job fails without one."""
    name = chosen(settings, role, engine)
    if name is None:
        raise JobFailed(NOT_CONFIGURED, missing(settings, role, engine) or "")
    try:
        return build(name, settings)
    except ProviderError as exc:  # e.g. a malformed key: nothing of this job can proceed
        raise JobFailed(exc.code, exc.message) from None


def pick_all(settings: Settings, role: ProviderRole, engine: str) -> list[Any]:
    """Every configured adapter that serves ``engine`` in this role, built, in order (the
    first answers; the next ones take what it fails: ``seojobs.kinds.fallback``); a job fails
    without one."""
    names = [n for n in role.order(settings, engine) if configured(settings, n)]
    if not names:
        raise JobFailed(NOT_CONFIGURED, missing(settings, role, engine) or "")
    try:
        return [build(name, settings) for name in names]
    except ProviderError as exc:  # e.g. a malformed key: nothing of this job can proceed
        raise JobFailed(exc.code, exc.message) from None


async def close(adapter: object) -> None:
    aclose = getattr(adapter, "aclose", None)
    if aclose is not None:
        await aclose()
