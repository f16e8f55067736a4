"""What keyword research declares, loaded when the registry is: its settings, its provider
role, the refusal at creation and its collections' subject. The handler and the adapters
(``run``) are loaded at a worker's first lookup."""

from __future__ import annotations

from typing import Any

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from seojobs.engine.kindsettings import moved
from seojobs.engine.registry import Refusal
from seojobs.engine.roles import ProviderRole
from seojobs.kinds import providers
from seojobs.kinds.keyword_research.params import KeywordResearchParams

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


def subject(params: KeywordResearchParams) -> str:
    """What a collection is about: the market (location and language). A project keeps the
    latest research per market; each job's keywords replace that market's."""
    return f"{params.location}/{params.language}"


def provider_of(params: KeywordResearchParams, settings: Any) -> str | None:
    """The provider a job uses: its own choice, else the first configured one in order."""
    return providers.choice(settings, KEYWORDS, ENGINE, params.provider)


def refusal(params: KeywordResearchParams, settings: Any) -> Refusal | None:
    """Refused at creation when no provider is configured (the chosen one, or any in the
    order). A market the provider cannot express (a location name or a language Google Ads
    does not list) fails the job when it runs (``provider_rejected``): the params' schema
    cannot say which provider a deployment defaults to, and what it admits is accepted."""
    return providers.choice_refusal(settings, KEYWORDS, ENGINE, params.provider)
