"""Rank reads: what the project's completed ``rank_check`` jobs collected. Never starts one.

Each keyword a check got an answer for is a collection (subject
``{device}/{location}/{language}/{keyword}``). ``rankings`` serves the newest of each, best
position first (or keywords A to Z); its cursor keeps the rankings as they stood at the first
page, so a check completing between two pages does not shift the rows under the reader.
``rankings/history`` serves every one (of a keyword), newest first. Each row holds the top
results the check saw and each competitor's position.

``rankings/share-of-voice`` serves the newest share of voice of each market (device, location,
language: one per check, over its keywords; weights in ``voice``) and its ``/history`` every
one, newest first.
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


class TopResult(BaseModel):
    position: int = Field(description="Organic rank, 1-based.")
    domain: str | None = Field(
        description="The result's registrable domain (public suffix list: "
        "`blog.example.co.uk` is `example.co.uk`)."
    )
    url: str
    title: str | None
    features: list[str] = Field(
        description="What the result showed: sitelinks, rating, faq, video, featured_snippet "
        "(as far as the provider tells)."
    )


class CompetitorPosition(BaseModel):
    domain: str
    position: int | None = Field(description="Its best organic rank; null when not found.")
    url: str | None


class FailedOver(BaseModel):
    provider: str
    code: str = Field(description="Why it failed: upstream_error, provider_auth_failed, ...")
    message: str


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
    competitors: list[CompetitorPosition] = Field(
        default_factory=list, description="Each competitor's position, in the order given."
    )
    top_results: list[TopResult] = Field(
        default_factory=list,
        description="The first results (SEOJOBS_RANK_CHECK_TOP_RESULTS, default 10).",
    )
    results: int = Field(description="Organic results the provider returned.")
    depth: int
    provider: str = Field(description="The provider that answered.")
    failed_over: list[FailedOver] = Field(
        default_factory=list,
        description="The providers that failed this keyword before it (transport, 5xx after "
        "retries, a refused key, spent credits), in order.",
    )
    checked_at: str | None


class RankingPage(BaseModel):
    data: list[Ranking]
    next_cursor: str | None


class Share(BaseModel):
    domain: str
    share: float = Field(description="Its share of the first page's weighted clicks, 0 to 1.")
    keywords_on_first_page: int = Field(description="Keywords where it holds a top-10 result.")


class DomainShare(BaseModel):
    domain: str = Field(description="A registrable domain.")
    share: float


class ShareOfVoice(BaseModel):
    job_id: int | None = Field(description="The check that collected it (null once pruned).")
    collected_at: str | None
    location: int | str
    language: str
    device: str
    keywords: int = Field(
        description="The keywords it is over: the project's tracked keywords of the market "
        "that have a ranking, or (none tracked there) those the check got an answer for."
    )
    keywords_basis: str | None = Field(
        default=None,
        description="`tracked` (over the project's tracked keywords of the market) or "
        "`checked` (over the check's keywords); null in collections made before.",
    )
    target: Share
    competitors: list[Share]
    top_domains: list[DomainShare] = Field(description="The 10 sites with the largest shares.")
    checked_at: str | None


class ShareOfVoicePage(BaseModel):
    data: list[ShareOfVoice]
    next_cursor: str | None


row = fields_row(Ranking)
voice_row = fields_row(ShareOfVoice)
RANKING_SUBJECTS = ("desktop/", "mobile/")  # run.subject: the device first
VOICE_SUBJECTS = ("share-of-voice/",)  # run.voice_subject


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
        subject_prefixes=RANKING_SUBJECTS,
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
        subject_prefixes=RANKING_SUBJECTS,
    ),
    Read(
        "rankings/share-of-voice",
        "list_share_of_voice",
        "rank_check",
        ShareOfVoice,
        response=ShareOfVoicePage,
        to_row=voice_row,
        filters=(DEVICE, LOCATION, LANGUAGE),
        orders=NEWEST_FIRST,
        summary="Share of Voice",
        description="The newest share of voice of every market (device, location, language) "
        "the project's completed `rank_check` jobs checked: the target's, each competitor's "
        "and the largest sites', click-through-weighted over the check's keywords (position "
        "1 to 10: 0.30, 0.16, 0.10, 0.07, 0.05, 0.04, 0.03, 0.025, 0.02, 0.015; nothing past "
        "10). Never starts a job: 404 until one has completed.",
        tags=("rankings",),
        subject_prefixes=VOICE_SUBJECTS,
    ),
    Read(
        "rankings/share-of-voice/history",
        "list_share_of_voice_history",
        "rank_check",
        ShareOfVoice,
        response=ShareOfVoicePage,
        to_row=voice_row,
        source="history",
        filters=(DEVICE, LOCATION, LANGUAGE),
        orders=NEWEST_FIRST,
        summary="Share of Voice History",
        description="Every collected share of voice (of one device, location or language, if "
        "given), newest first. 404 until one has completed.",
        tags=("rankings",),
        subject_prefixes=VOICE_SUBJECTS,
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
