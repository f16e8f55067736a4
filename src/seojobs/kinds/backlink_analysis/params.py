"""A backlink analysis's params: whose links (a domain or one page), which, how many."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from seojobs.fielderrors import field_error
from seojobs.kinds.domain_lookup.params import Domain
from seojobs.kinds.urls import Url
from seojobs.records import ProjectDefaults
from seojobs.schemarules import given

MAX_LINKS = 1_000  # DataForSEO's most per call
MAX_SUMMARIES = 1_000
MAX_PERIOD_DAYS = 365


class BacklinkAnalysisParams(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        # Exactly one target, as the validator below says: the schema says it too, so a
        # client built from the document never sends params the API refuses.
        json_schema_extra={"oneOf": [given("domain"), given("url")]},
    )

    domain: Domain | None = Field(
        default=None,
        description="The site whose backlinks to find (a leading `www.` is dropped). Exactly "
        "one of `domain` and `url`.",
    )
    url: Url | None = Field(default=None, description="One page whose backlinks to find.")
    include_subdomains: bool = Field(
        default=True, description="With `domain`: links to its subdomains count too."
    )
    mode: Literal["as_is", "one_per_domain", "one_per_anchor"] = Field(
        default="as_is",
        description="`as_is`: every link; `one_per_domain` / `one_per_anchor`: the strongest "
        "link of each referring domain / anchor.",
    )
    status: Literal["all", "live", "lost"] = Field(
        default="all",
        description="Which links the index lists: `live`, `lost` (removed, or the page gone), "
        "or `all` (each with `is_lost`).",
    )
    limit: int = Field(
        default=MAX_LINKS,
        ge=1,
        le=MAX_LINKS,
        description=f"The strongest links kept (by rank), 1 to {MAX_LINKS}.",
    )
    summaries: int = Field(
        default=100,
        ge=1,
        le=MAX_SUMMARIES,
        description="Referring domains and anchors kept (most links first).",
    )
    period_days: int = Field(
        default=30,
        ge=1,
        le=MAX_PERIOD_DAYS,
        description="With `domain`: the index's new and lost links per day over this many "
        "days (`timeline`).",
    )

    @model_validator(mode="after")
    def _one_target(self) -> BacklinkAnalysisParams:
        if self.domain is None and self.url is None:
            raise field_error(BacklinkAnalysisParams, "domain", "give a domain or a url")
        if self.domain is not None and self.url is not None:
            raise field_error(BacklinkAnalysisParams, "url", "give a domain or a url, not both")
        return self

    @property
    def target(self) -> str:
        """What DataForSEO is asked about: the host without ``www.``, or the page's URL."""
        if self.domain is not None:
            return self.domain.removeprefix("www.")
        return str(self.url)


def from_project(params: Mapping[str, Any], defaults: ProjectDefaults) -> dict[str, Any]:
    """``Kind.project_params``: the project's domain as ``domain`` where the request names
    neither a domain nor a page (and names a project), so a project's collection of its
    backlinks needs no params (issue 29.1)."""
    found = dict(params)
    project = defaults.record
    if project is not None and project.domain and "domain" not in found and "url" not in found:
        found["domain"] = project.domain
    return found
