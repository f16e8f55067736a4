"""What a local rank check declares, loaded when the registry is: its settings, its provider
role, its items (a keyword at each point), the refusal at creation and its subjects. The
handler and the adapters (``run``) are loaded at a worker's first local rank check."""

from __future__ import annotations

from typing import Any

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from seojobs.engine.registry import Refusal
from seojobs.engine.roles import ProviderRole
from seojobs.kinds import providers
from seojobs.kinds.local_rank_check import grid
from seojobs.kinds.local_rank_check.params import LocalRankCheckParams
from seojobs.providers.base import NOT_CONFIGURED, REJECTED

ENGINE = "google_maps"
ADAPTER_NAMES = ("serpapi", "dataforseo", "serper")  # run.ADAPTERS' names


class LocalRankCheckSettings(BaseSettings):
    """The local rank checks' own settings (``SEOJOBS_LOCAL_RANK_CHECK_...``)."""

    model_config = SettingsConfigDict(env_prefix="SEOJOBS_LOCAL_RANK_CHECK_", extra="ignore")
    concurrency: int = Field(default=4, ge=1, description="Searches a job makes at once.")
    providers: dict[str, list[str]] | None = Field(
        default=None,
        description='Local rank checks; "google_maps" is the only engine (default: serpapi, '
        "dataforseo, serper). The next configured one answers a search the one before failed.",
    )


LOCAL_RANKS = ProviderRole(
    "local rank checks",
    "providers",
    {ENGINE: ADAPTER_NAMES},
    settings=LocalRankCheckSettings,
)


def centre_point(params: LocalRankCheckParams) -> int:
    """The index of the centre among a keyword's points."""
    return (params.points - 1) // 2


def items(params: LocalRankCheckParams) -> list[dict[str, Any]]:
    """One item per keyword and point: the keyword with where it is searched."""
    if params.latitude is None or params.longitude is None:
        where: list[dict[str, Any]] = [{"location": params.location}]
    elif params.grid is None:
        where = [{"latitude": params.latitude, "longitude": params.longitude}]
    else:
        spread = grid.points(
            params.latitude, params.longitude, params.grid.size, params.grid.radius_km
        )
        where = [{"latitude": lat, "longitude": lon} for lat, lon in spread]
    return [
        {"keyword": keyword, "point": n, **point}
        for keyword in params.keywords
        for n, point in enumerate(where)
    ]


def where_of(params: LocalRankCheckParams) -> str:
    """Where a check searched, as its subjects name it: the place name, or the centre point."""
    if params.location is not None:
        return params.location.casefold()
    return f"{params.latitude},{params.longitude},{params.zoom}z"


def subject(params: LocalRankCheckParams, keyword: str) -> str:
    """A keyword's collection subject: one per place, language, surface and keyword."""
    return f"{where_of(params)}/{params.language}/{params.surface}/{keyword.casefold()}"


def refusal(params: LocalRankCheckParams, settings: Any) -> Refusal | None:
    """Refused at creation when no provider that can make the search is configured."""
    if params.provider is not None:
        unconfigured = providers.unconfigured(settings, params.provider, "provider")
        if unconfigured is not None:
            return unconfigured
        why = _unsupported(params.provider, params)
        return Refusal(REJECTED, why, "surface") if why else None
    if providers.chosen(settings, LOCAL_RANKS, ENGINE) is None:
        return providers.refusal(settings, LOCAL_RANKS, ENGINE, field="provider")
    if not _usable(params, settings):
        why = "the local pack is served by serpapi alone: set SEOJOBS_SERPAPI_KEY"
        return Refusal(NOT_CONFIGURED, why, "surface")
    return None


def _unsupported(name: str, params: LocalRankCheckParams) -> str | None:
    if params.surface == "local_pack" and name != "serpapi":
        return f"{name} does not serve the local pack: use serpapi, or surface maps"
    return None


def _usable(params: LocalRankCheckParams, settings: Any) -> list[str]:
    if params.provider is not None:
        names: list[str] = [params.provider]
    else:
        order = LOCAL_RANKS.order(settings, ENGINE)
        names = [n for n in order if n in ADAPTER_NAMES and providers.configured(settings, n)]
    return [n for n in names if _unsupported(n, params) is None]
