"""Found links monitored (issue 29.3): which links of a backlink analysis join the (donor,
target) pairs the project's ``backlink_refresh`` collection checks. The request names the
analysis (its target, or the newest of any) and either the links themselves or filters on
them; ``services.monitored`` adds the pairs to the collection's params, each once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from seojobs.fielderrors import field_error
from seojobs.kinds.backlink_analysis.reads import from_domain
from seojobs.kinds.backlink_refresh.params import MAX_LINKS, subject
from seojobs.kinds.urls import Url

FILTERS = ("new", "dofollow", "domain_from", "include_lost", "limit")


class FoundLink(BaseModel):
    model_config = ConfigDict(extra="forbid")

    url_from: Url = Field(description="The page the link is on (the pair's donor).")
    url_to: Url = Field(description="The URL it points to (the pair's target).")


class MonitorLinks(BaseModel):
    """Which links of the analysis to monitor: ``links``, or the filters (not both)."""

    model_config = ConfigDict(
        extra="forbid",
        # Not both, as the validator below says: the schema says it too, so a client built
        # from the document never sends a body the API refuses.
        json_schema_extra={"allOf": [{"not": {"required": ["links", f]}} for f in FILTERS]},
    )

    target: str | None = Field(
        default=None,
        min_length=1,
        max_length=2048,
        description="The analysis's target (a domain or page); left out: the project's newest "
        "analysis of any target.",
    )
    links: list[FoundLink] | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_LINKS,
        description=f"These links (1 to {MAX_LINKS:,}), each one the analysis found; "
        "without it, the filters below pick them.",
    )
    new: bool | None = Field(
        default=None, description="Only links new (true) or not (false) since the analysis before."
    )
    dofollow: bool | None = Field(default=None, description="Only dofollow (true) or nofollow.")
    domain_from: str | None = Field(
        default=None,
        max_length=253,
        pattern=r"^[A-Za-z0-9.\-]+$",
        description="Only links from this host or its subdomains.",
    )
    include_lost: bool = Field(
        default=False, description="Links the index lists as lost too (default: live ones only)."
    )
    limit: int = Field(
        default=MAX_LINKS,
        ge=1,
        le=MAX_LINKS,
        description=f"The strongest links picked (by the index's rank), 1 to {MAX_LINKS:,}.",
    )

    @model_validator(mode="after")
    def _links_or_filters(self) -> MonitorLinks:
        if "links" not in self.model_fields_set:
            return self
        for name in FILTERS:
            if name in self.model_fields_set:
                raise field_error(MonitorLinks, name, "give links or filters, not both")
        return self


@dataclass(frozen=True)
class Picked:
    """The pairs picked, strongest first, each once; ``unknown``: the indexes of the
    ``links`` given that the analysis did not find."""

    pairs: list[dict[str, str]]
    unknown: list[int]


def _pair(link: Mapping[str, Any]) -> dict[str, str]:
    return {"donor": str(link.get("url_from")), "target": str(link.get("url_to"))}


def _key(link: Mapping[str, Any]) -> str:
    return subject(str(link.get("url_from")), str(link.get("url_to")))


def _wanted(request: MonitorLinks, link: Mapping[str, Any]) -> bool:
    if link.get("is_lost") and not request.include_lost:
        return False
    if request.new is not None and bool(link.get("new")) is not request.new:
        return False
    if request.dofollow is not None and bool(link.get("dofollow")) is not request.dofollow:
        return False
    return request.domain_from is None or from_domain(link, request.domain_from)


def pick(request: MonitorLinks, found: Sequence[Any]) -> Picked:
    """The (donor, target) pairs of the analysis's links (``found``) that ``request`` names."""
    links = [link for link in found if isinstance(link, dict)]
    if request.links is not None:
        known = {_key(link) for link in links}
        asked = [{"url_from": str(g.url_from), "url_to": str(g.url_to)} for g in request.links]
        unknown = [i for i, link in enumerate(asked) if _key(link) not in known]
        return Picked(_once(asked), unknown)
    chosen = sorted(
        (link for link in links if _wanted(request, link)),
        key=lambda link: (-int(link.get("rank") or 0), str(link.get("url_from"))),
    )
    return Picked(_once(chosen)[: request.limit], [])


def _once(links: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    seen: dict[str, dict[str, str]] = {}
    for link in links:
        seen.setdefault(_key(link), _pair(link))
    return list(seen.values())


def merged(
    monitored: Sequence[Any], pairs: Sequence[dict[str, str]]
) -> tuple[list[Any], list[dict[str, str]]]:
    """The collection's pairs with the new ones after them, and those new ones (each pair
    once, by the refresh's normalised donor and target: one already monitored is skipped)."""
    have = {
        subject(str(p.get("donor")), str(p.get("target"))) for p in monitored if isinstance(p, dict)
    }
    added = [p for p in pairs if subject(p["donor"], p["target"]) not in have]
    return [*monitored, *added], added
