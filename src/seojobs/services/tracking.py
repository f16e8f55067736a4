"""What a project tracks (seed 001, issue 29.1): its ``domain``, its ``brand_names`` and its
``competitors`` (each a domain and the names it goes by). Checked here, once, for every
surface (API, dashboard, CLI): ``Invalid`` naming the field (``competitors.1.domain``).

Jobs of a kind that looks for a site or a brand take the project's as their defaults: params
given on the job win (``project_params`` on the kind; ``rank_check``: ``target`` and
``competitors``; ``geo_lookup``: ``domain`` and ``brand``; ``local_rank_check``: ``domain``
and ``names``, when the job names no business; ``backlink_analysis``: ``domain``, when the job
names no page)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from seojobs.fielderrors import message
from seojobs.kinds.domain_lookup.params import Domain
from seojobs.kinds.geo_lookup.params import Brand
from seojobs.services.errors import FieldError, Invalid

MAX_BRAND_NAMES = 10
MAX_COMPETITORS = 20
FIELDS = ("domain", "brand_names", "competitors")


def _unique(values: list[str]) -> list[str]:
    """Each once, whatever its case; the first spelling kept."""
    seen: dict[str, str] = {}
    for value in values:
        seen.setdefault(value.casefold(), value)
    return list(seen.values())


class Competitor(BaseModel):
    model_config = ConfigDict(extra="forbid")

    domain: Domain = Field(description="The competitor's site (its subdomains count too).")
    names: list[Brand] = Field(
        default_factory=list,
        max_length=MAX_BRAND_NAMES,
        description="The names it goes by (brand mentions in AI answers).",
    )

    @model_validator(mode="after")
    def _once(self) -> Competitor:
        self.names = _unique(self.names)
        return self


class Tracking(BaseModel):
    """The tracked fields a request sets (all optional; ``null`` clears one)."""

    model_config = ConfigDict(extra="forbid")

    domain: Domain | None = Field(
        default=None, description="The project's site (example.com; its subdomains count too)."
    )
    brand_names: list[Brand] | None = Field(
        default=None,
        max_length=MAX_BRAND_NAMES,
        description="The names the project's brand goes by (up to 10).",
    )
    competitors: list[Competitor] | None = Field(
        default=None, max_length=MAX_COMPETITORS, description="Up to 20, each domain once."
    )

    @model_validator(mode="after")
    def _once(self) -> Tracking:
        if self.brand_names is not None:
            self.brand_names = _unique(self.brand_names)
        if self.competitors is not None:
            seen: dict[str, Competitor] = {}
            for competitor in self.competitors:
                seen.setdefault(competitor.domain, competitor)
            self.competitors = list(seen.values())
        return self


def checked(values: Mapping[str, Any]) -> dict[str, Any]:
    """The tracked fields among ``values`` (only those given), checked and normalised as
    stored, or ``Invalid`` naming each refused field."""
    given = {k: v for k, v in values.items() if k in FIELDS}
    try:
        model = Tracking.model_validate(given)
    except ValidationError as exc:
        errors = [FieldError(tuple(e["loc"]), message(e)) for e in exc.errors()]
        raise Invalid(errors) from None
    dumped = model.model_dump(mode="json")
    return {k: dumped[k] for k in given}
