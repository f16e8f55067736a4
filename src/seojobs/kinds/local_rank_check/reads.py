"""Local rank reads: what the project's completed ``local_rank_check`` jobs collected. Never
starts one.

Each keyword a check got an answer for at its centre is a collection (subject
``{where}/{language}/{surface}/{keyword}``). ``local-rankings`` serves the newest of each, best
position first (or keywords A to Z); ``local-rankings/history`` every one, newest first. A row
holds the business's listing (position, rating, reviews, categories), the businesses above it
and, for a grid, the average position and the share of points in the top 3.

The change event ``local_rank.changed``: a keyword's position at the centre moved, entered or
left the listings, or its grid's average position moved, since the previous check of the same
place, surface and business.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from seojobs.kinds.rank_check.reads import CONTAINS, KEYWORD, FailedOver
from seojobs.reads import (
    NEWEST_FIRST,
    ChangeEvent,
    FieldMatch,
    Filter,
    Key,
    Read,
    data_of,
    fields_row,
)
from seojobs.records import CollectionRecord


class Above(BaseModel):
    position: int
    title: str
    place_id: str | None
    domain: str | None = Field(description="Its website's registrable domain.")
    rating: float | None
    reviews: int | None
    categories: list[str]


class GridPoint(BaseModel):
    latitude: float
    longitude: float
    position: int | None = Field(description="The business's position there; null: not listed.")


class GridSummary(BaseModel):
    size: int = Field(description="Points per side (3, 5 or 7).")
    radius_km: float
    points: list[GridPoint] = Field(description="Row by row from the north-west corner.")
    points_answered: int
    points_failed: int
    average_position: float | None = Field(
        description="Over the points where the business was listed; null: listed at none."
    )
    top3_share: float = Field(description="Share of the points answered where it is in the top 3.")
    found_share: float = Field(description="Share of the points answered where it is listed.")


class Business(BaseModel):
    place_id: str | None
    domain: str | None
    names: list[str]


class LocalRanking(BaseModel):
    job_id: int | None = Field(description="The check that collected it (null once pruned).")
    collected_at: str | None
    keyword: str
    location: str | None = Field(description="The place name searched at, or null for a point.")
    latitude: float | None = Field(description="The centre searched at (null for a place name).")
    longitude: float | None
    zoom: int
    language: str
    surface: str = Field(description="`maps` or `local_pack`.")
    business: Business = Field(description="What the listing was matched by.")
    position: int | None = Field(
        description="The business's 1-based position among the listings at the centre; null "
        "when not listed."
    )
    matched_by: str | None = Field(description="`place_id`, `domain` or `name`.")
    title: str | None = Field(description="The matched listing's name.")
    place_id: str | None
    rating: float | None
    reviews: int | None = Field(description="Its review count.")
    categories: list[str]
    website: str | None
    address: str | None
    above: list[Above] = Field(
        description="The businesses listed above it (all, up to 20, when not listed)."
    )
    results: int = Field(description="Listings the provider returned.")
    grid: GridSummary | None = Field(description="The grid, when the check searched one.")
    provider: str
    failed_over: list[FailedOver] = Field(default_factory=list)
    checked_at: str | None


class LocalRankingPage(BaseModel):
    data: list[LocalRanking]
    next_cursor: str | None


row = fields_row(LocalRanking)
SURFACE = Filter(
    "surface", Literal["maps", "local_pack"], "Only this surface.", FieldMatch("surface")
)
LOCATION = Filter(
    "location",
    str,
    "Only this place name, as the job's params gave it.",
    FieldMatch("location", "lower"),
    min_length=1,
    max_length=100,
    pattern=r"^[^\x00-\x1f\x7f]+$",
)
BY_NAME = (Key("keyword"), Key("location"))
READS = (
    Read(
        "local-rankings",
        "list_local_rankings",
        "local_rank_check",
        LocalRanking,
        response=LocalRankingPage,
        to_row=row,
        filters=(KEYWORD, CONTAINS, SURFACE, LOCATION),
        orders={"position": (Key("position", "number"), *BY_NAME), "keyword": BY_NAME},
        sort_description="Best position first (not listed last), or keywords A to Z.",
        description="The newest local position of every keyword (per place, language and "
        "surface) the project's completed `local_rank_check` jobs searched, each with its "
        "`job_id` and `collected_at`. Never starts a job: 404 until one has completed.",
        tags=("local rankings",),
    ),
    Read(
        "local-rankings/history",
        "list_local_rankings_history",
        "local_rank_check",
        LocalRanking,
        response=LocalRankingPage,
        to_row=row,
        source="history",
        filters=(KEYWORD, SURFACE, LOCATION),
        orders=NEWEST_FIRST,
        empty=("kind", "rows"),
        summary="Local Rankings History",
        description="Every collected local position of `keyword` (of every keyword without "
        "it), newest first. 404 until one has completed.",
        tags=("local rankings",),
    ),
)


# -- what changed (webhooks: local_rank.changed) ---------------------------------------------

Places = Annotated[int, Field(ge=1, le=100, strict=True)]


class LocalRankFilters(BaseModel):
    """An endpoint's conditions on ``local_rank.changed``."""

    model_config = ConfigDict(extra="forbid")

    min_change: Places = Field(
        default=1,
        description="Only moves of at least this many places (entering or leaving the "
        "listings counts as any move; a grid's average alone only when this is 1).",
    )
    top: Places | None = Field(
        default=None, description="Only keywords within the top N before or after."
    )


def compare(before: CollectionRecord | None, after: CollectionRecord) -> dict[str, Any] | None:
    """A keyword's centre position moved, entered or left the listings, or its grid's average
    position moved, since its previous check (of the same business)."""
    if before is None:
        return None
    old, new = data_of(before), data_of(after)
    if old.get("business") != new.get("business"):
        return None
    was, now = old.get("position"), new.get("position")
    average = [(g or {}).get("average_position") for g in (old.get("grid"), new.get("grid"))]
    if was == now and average[0] == average[1]:
        return None
    change = None
    if was != now:
        change = "entered" if was is None else "left" if now is None else "moved"
    return {
        "keyword": new.get("keyword"),
        "change": change,
        "position_before": was,
        "position_after": now,
        "moved_by": was - now if isinstance(was, int) and isinstance(now, int) else None,
        "average_position_before": average[0],
        "average_position_after": average[1],
    }


def matches(filters: LocalRankFilters, data: Mapping[str, Any]) -> bool:
    was, now = data["position_before"], data["position_after"]
    if data["change"] is None:
        moved = filters.min_change == 1
    elif data["change"] == "moved":
        moved = abs(data["moved_by"]) >= filters.min_change
    else:
        moved = True
    top = filters.top
    within = top is None or any(p is not None and p <= top for p in (was, now))
    return moved and within


CHANGES = (
    ChangeEvent(
        "local_rank.changed",
        "local_rank_check",
        compare,
        to_row=row,
        filters=LocalRankFilters,
        matches=matches,
        description="A keyword's local position moved, entered or left the listings, or its "
        "grid's average position moved, since its previous check.",
    ),
)
