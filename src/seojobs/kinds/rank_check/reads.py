"""Rank reads: what the project's completed ``rank_check`` jobs collected. Never starts one.

Each keyword a check got an answer for is a collection (subject
``{device}/{location}/{language}/{keyword}``). ``rankings`` serves the newest of each, best
position first (or keywords A to Z); its cursor keeps the rankings as they stood at the first
page, so a check completing between two pages does not shift the rows under the reader.
``rankings/history`` serves every one (of a keyword), newest first.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from seojobs.kinds.keyword_research.params import ASCII_SPACE, MAX_KEYWORD, TEXT_PATTERN
from seojobs.kinds.keyword_research.reads import language_filter, location_filter
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


class Ranking(BaseModel):
    job_id: int | None = Field(description="The check that collected it (null once pruned).")
    collected_at: str | None
    keyword: str
    location: int | str
    language: str
    device: str
    target: str = Field(description="The domain or page looked for.")
    match: str = Field(description="`domain` or `exact_url`.")
    position: int | None = Field(
        description="Organic rank, 1-based; null when not found within `depth` results."
    )
    rank_absolute: int | None = Field(
        description="Rank among every element of the page (DataForSEO); else null."
    )
    url: str | None = Field(description="The ranking result's URL.")
    title: str | None
    features: list[str] = Field(
        description="SERP features the page showed: ai_overview, featured_snippet, "
        "people_also_ask, local_pack, knowledge_graph, top_stories, videos, images, shopping, "
        "related_searches, paid (as far as the provider tells)."
    )
    results: int = Field(description="Organic results the provider returned.")
    depth: int
    provider: str
    checked_at: str | None


class RankingPage(BaseModel):
    data: list[Ranking]
    next_cursor: str | None


row = fields_row(Ranking)


def _trimmed(value: Any) -> str:
    return str(value).strip(ASCII_SPACE)


def _lower(value: Any) -> str:
    return str(value).lower()


def _keyword_filter(name: str, description: str, compare: Literal["lower", "contains"]) -> Filter:
    return Filter(
        name,
        str,
        description,
        FieldMatch("keyword", compare),
        prepare=_trimmed,
        min_length=1,
        max_length=MAX_KEYWORD,
        pattern=TEXT_PATTERN,
        named="for" if name == "keyword" else None,
    )


DEVICE = Filter("device", Literal["desktop", "mobile"], "Only this device.", FieldMatch("device"))
LOCATION = location_filter(
    FieldMatch("location", "text"),
    "The market's location code or name, as the job's params gave it (default with "
    "`language`: 2840).",
)
LANGUAGE = language_filter(
    FieldMatch("language"), "The market's language (default with `location`: en).", _lower
)
KEYWORD = _keyword_filter("keyword", "Only this keyword (any case).", "lower")
CONTAINS = _keyword_filter("contains", "Only keywords containing this text (any case).", "contains")
BY_NAME = (Key("keyword"), Key("device"), Key("location"), Key("language"))
READS = (
    Read(
        "rankings",
        "list_rankings",
        "rank_check",
        Ranking,
        response=RankingPage,
        to_row=row,
        filters=(DEVICE, LOCATION, LANGUAGE, KEYWORD, CONTAINS),
        orders={"position": (Key("position", "number"), *BY_NAME), "keyword": BY_NAME},
        sort_description="Best position first (not ranked last), or keywords A to Z.",
        description="The newest position of every keyword (per device, location and "
        "language) the project's completed `rank_check` jobs checked, each with its `job_id` "
        "and `collected_at`. Never starts a job: 404 until one has completed.",
        tags=("rankings",),
    ),
    Read(
        "rankings/history",
        "list_rankings_history",
        "rank_check",
        Ranking,
        response=RankingPage,
        to_row=row,
        source="history",
        filters=(KEYWORD, DEVICE, LOCATION, LANGUAGE),
        orders=NEWEST_FIRST,
        empty=("kind", "rows"),
        summary="Rankings History",
        description="Every collected position of `keyword` (of every keyword without it; of "
        "one device, location or language, if given), newest first. 404 until one has "
        "completed.",
        tags=("rankings",),
    ),
)


# -- what changed (webhooks: rank.changed) ---------------------------------------------------

Places = Annotated[int, Field(ge=1, le=100, strict=True)]


class RankFilters(BaseModel):
    """An endpoint's conditions on ``rank.changed``."""

    model_config = ConfigDict(extra="forbid")

    min_change: Places = Field(
        default=1,
        description="Only moves of at least this many places (entering or leaving the results "
        "counts as any move; a change of SERP features alone only when this is 1).",
    )
    top: Places | None = Field(
        default=None, description="Only keywords within the top N before or after."
    )


def compare(before: CollectionRecord | None, after: CollectionRecord) -> dict[str, Any] | None:
    """A keyword's position moved, entered or left the results, or a SERP feature was won or
    lost, since its previous check (of the same target and match)."""
    if before is None:
        return None
    old, new = data_of(before), data_of(after)
    if (old.get("target"), old.get("match")) != (new.get("target"), new.get("match")):
        return None
    was, now = old.get("position"), new.get("position")
    had, has = set(old.get("features") or ()), set(new.get("features") or ())
    if was == now and had == has:
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
        "features_won": sorted(has - had),
        "features_lost": sorted(had - has),
    }


def matches(filters: RankFilters, data: Mapping[str, Any]) -> bool:
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
        "rank.changed",
        "rank_check",
        compare,
        to_row=row,
        filters=RankFilters,
        matches=matches,
        description="A keyword's position moved, entered or left the results, or a SERP "
        "feature was won or lost, since its previous check.",
    ),
)
