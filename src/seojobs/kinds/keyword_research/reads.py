"""Keyword research reads: the keywords of the project's last completed research, sorted and
filtered. A project keeps one collection per market (``{location}/{language}``, e.g.
``2840/en``); ``location`` and ``language`` pick one, else the newest of any market is served.
Pages are of one collection: ``next_cursor`` names it, so a research completing between two
pages does not shift the rows under the reader."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, Field

from seojobs.kinds.keyword_research.params import ASCII_SPACE, LANGUAGE_PATTERN, TEXT_PATTERN
from seojobs.reads import Filter, Key, Read, RowMatch, SubjectMatch, data_of, stamp
from seojobs.records import CollectionRecord

MAX_COUNT = 2**63 - 1


def place(location: str) -> str:
    """A location as stored: a code without leading zeros, a name as given (trimmed)."""
    found = location.strip(ASCII_SPACE)
    return str(int(found)) if found.isascii() and found.isdigit() else found


def market(values: Mapping[str, Any]) -> list[str]:
    """The subject of a market: ``{location}/{language}``, each defaulted (2840, en)."""
    where = values.get("location") or "2840"
    return [f"{where}/{str(values.get('language') or 'en').lower()}"]


def location_filter(match: Any, description: str) -> Filter:
    return Filter(
        "location",
        str,
        description,
        match,
        prepare=place,
        min_length=1,
        max_length=100,
        pattern=TEXT_PATTERN,
    )


def language_filter(match: Any, description: str, prepare: Any = None) -> Filter:
    return Filter("language", str, description, match, prepare=prepare, pattern=LANGUAGE_PATTERN)


class MonthOut(BaseModel):
    year: int
    month: int
    search_volume: int | None


class KeywordOut(BaseModel):
    keyword: str
    search_volume: int | None = Field(description="Average monthly searches.")
    cpc: float | None = Field(description="Average cost per click, in `currency`.")
    competition: int | None = Field(description="Advertisers' competition, 0 to 100.")
    competition_level: str | None = Field(description="`LOW`, `MEDIUM` or `HIGH`.")
    low_top_of_page_bid: float | None
    high_top_of_page_bid: float | None
    currency: str | None = Field(description="`USD` (DataForSEO); null: the Ads account's.")
    monthly_searches: list[MonthOut]
    seed: bool = Field(description="One of the job's seed keywords.")


class KeywordPage(BaseModel):
    job_id: int | None = Field(description="The job that collected them (null once pruned).")
    collected_at: str
    subject: str = Field(description="The market: `{location}/{language}`.")
    provider: str
    location: int | str
    language: str
    seeds: list[str] | None
    url: str | None
    data: list[KeywordOut]
    next_cursor: str | None


def _header(found: CollectionRecord) -> dict[str, Any]:
    data = data_of(found)
    shown = {k: data.get(k) for k in ("provider", "location", "language", "seeds", "url")}
    return {**stamp(found), "subject": found.subject, **shown}


def _searched(keyword: Mapping[str, Any], least: Any) -> bool:
    return int(keyword.get("search_volume") or 0) >= int(least)


def _in_market(value: Any, values: Mapping[str, Any]) -> list[str]:
    return market(values)


_BY_NAME = Key("keyword")
READS = (
    Read(
        "keywords",
        "list_keywords",
        "keyword_research",
        KeywordOut,
        response=KeywordPage,
        to_row=_header,
        source="one",
        elements="keywords",
        orders={
            "volume": (Key("search_volume", "number", descending=True), _BY_NAME),
            "cpc": (Key("cpc", "number", descending=True), _BY_NAME),
            "competition": (Key("competition", "number", descending=True), _BY_NAME),
            "keyword": (_BY_NAME,),
        },
        sort_description="Highest volume, CPC or competition first, or keywords A to Z.",
        filters=(
            Filter(
                "min_volume",
                int,
                "Only keywords searched at least this often a month.",
                RowMatch(_searched),
                ge=0,
                le=MAX_COUNT,
            ),
            location_filter(
                SubjectMatch(_in_market),
                "The market's location code or name, as the job's params gave it (default "
                "with `language`: 2840).",
            ),
            language_filter(
                SubjectMatch(_in_market), "The market's language (default with `location`: en)."
            ),
        ),
        description="The keywords of the project's last completed keyword research (of one "
        "market with `location`/`language`), with its `job_id` and `collected_at`. Never "
        "starts a job: 404 until one has completed. Unknown figures sort last.",
        tags=("keywords",),
    ),
)
