"""What a rank check declares, loaded when the registry is: its settings, its provider role,
its items and its project defaults, the refusal at creation and its collections' subjects.
The handler and the adapters (``run``) are loaded at a worker's first rank check."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from seojobs.engine.kindsettings import moved
from seojobs.engine.registry import Refusal
from seojobs.engine.roles import ProviderRole
from seojobs.kinds import providers
from seojobs.kinds.rank_check.params import RankCheckParams
from seojobs.records import ProjectDefaults

FIRST_PAGE = 10  # the organic results of a SERP's first page (``voice.CTR``'s positions)
ENGINE = "google"  # the one engine of SEOJOBS_RANK_CHECK_PROVIDERS
# The first configured one is a job's default provider.


class RankCheckSettings(BaseSettings):
    """The rank checks' own settings (``SEOJOBS_RANK_CHECK_...``)."""

    model_config = SettingsConfigDict(env_prefix="SEOJOBS_RANK_CHECK_", extra="ignore")
    concurrency: int = Field(default=4, ge=1, description="Keywords a job searches at once.")
    top_results: int = Field(
        default=10,
        ge=FIRST_PAGE,
        le=100,
        description="Organic results kept per keyword (position, domain, URL, title, "
        "features), at least the first page (share of voice weighs it).",
    )
    providers: dict[str, list[str]] | None = Field(
        default=None,
        validation_alias=moved("seojobs_rank_check_providers", "seojobs_rank_providers"),
        description='Rank checks; "google" is the only engine (default: serper, dataforseo). '
        "The first configured one is a job's default provider.",
    )


RANKS = ProviderRole(
    "rank checks", "providers", {ENGINE: ("serper", "dataforseo")}, settings=RankCheckSettings
)


def items(params: RankCheckParams) -> list[dict[str, Any]]:
    """One item per keyword: the keyword with where and how it is searched (a tracked one in
    its own market)."""
    where = {"location": params.location, "language": params.language, "device": params.device}
    own = [{"keyword": keyword, **where} for keyword in params.keywords]
    return own + [entry.model_dump() for entry in params.tracked]


def from_project(params: Mapping[str, Any], defaults: ProjectDefaults) -> dict[str, Any]:
    """The project's domain as the ``target``, its competitors' domains as ``competitors``
    and its tracked keywords as ``tracked``, where the request gives none and names a
    project (a request that names ``keywords`` or ``tracked`` checks those alone)."""
    found = dict(params)
    project = defaults.record
    if project is None:
        return found
    if "target" not in found and project.domain:
        found["target"] = project.domain
    if "competitors" not in found and project.competitors:
        found["competitors"] = [c["domain"] for c in project.competitors]
    if "keywords" not in found and "tracked" not in found and project.keywords:
        found["tracked"] = [k.market() for k in project.keywords]
    return found


def subject(device: str, location: int | str, language: str, keyword: str) -> str:
    """A keyword's collection subject: one ranking per device, market and keyword (any case)."""
    return f"{device}/{location}/{language}/{keyword.casefold()}"


def provider_of(params: RankCheckParams, settings: Any) -> str | None:
    """The job's own choice of provider, else the first configured one in order."""
    return providers.choice(settings, RANKS, ENGINE, params.provider)


def refusal(params: RankCheckParams, settings: Any) -> Refusal | None:
    """Refused at creation when no provider is configured (the chosen one, or any in order).
    A search the provider cannot express (mobile or an unknown country code with Serper)
    fails the job when it runs, before any call: what the params' schema admits is accepted."""
    return providers.choice_refusal(settings, RANKS, ENGINE, params.provider)
