"""Keyword research reads: the keywords a project's last completed ``keyword_research`` job
collected, sorted and filtered. A read never starts a job: 404 until one has completed.

A project keeps one collection per market (``{location}/{language}``, e.g. ``2840/en``);
``location`` and ``language`` pick one, else the newest of any market is served. Pages are
of one collection: ``next_cursor`` names it, so a research completing between two pages does
not shift the rows under the reader.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, Field

from seojobs.api import problems
from seojobs.api.deps import Svc, User
from seojobs.api.ids import MAX_ID, digits, parse_cursor
from seojobs.api.inputs import CheckedRoute
from seojobs.api.problems import Problem
from seojobs.api.projects import ProjectId
from seojobs.api.v1 import Cursor, Limit
from seojobs.kinds import keyword_research
from seojobs.kinds.keyword_research.params import ASCII_SPACE, LANGUAGE_PATTERN, TEXT_PATTERN
from seojobs.records import CollectionRecord
from seojobs.timefmt import rfc3339_or_none

router = APIRouter(
    prefix="/v1", tags=["keywords"], responses=problems.RESPONSES, route_class=CheckedRoute
)

# A cursor is the collection's id and the rows already read: id * PAGE_SPAN + offset.
PAGE_SPAN = 1_000_000
SORTS: dict[str, tuple[str, bool]] = {  # field, descending
    "volume": ("search_volume", True),
    "cpc": ("cpc", True),
    "competition": ("competition", True),
    "keyword": ("keyword", False),
}
Sort = Annotated[
    Literal["volume", "cpc", "competition", "keyword"],
    Query(description="Highest volume, CPC or competition first, or keywords A to Z."),
]
MinVolume = Annotated[
    int | None,
    Query(ge=0, le=MAX_ID, description="Only keywords searched at least this often a month."),
    digits(0, MAX_ID),
]
Location = Annotated[
    str | None,
    Query(
        min_length=1,
        max_length=100,
        pattern=TEXT_PATTERN,
        description="The market's location code or name, as the job's params gave it "
        "(default with `language`: 2840).",
    ),
]
Language = Annotated[
    str | None,
    Query(
        pattern=LANGUAGE_PATTERN, description="The market's language (default with `location`: en)."
    ),
]


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


def _subject(location: str | None, language: str | None) -> str | None:
    if location is None and language is None:
        return None
    place = (location or "2840").strip(ASCII_SPACE)
    if place.isascii() and place.isdigit():
        place = str(int(place))
    return f"{place}/{(language or 'en').lower()}"


def _ordered(keywords: list[dict[str, Any]], sort: str) -> list[dict[str, Any]]:
    field, descending = SORTS[sort]
    by_name = sorted(keywords, key=lambda k: str(k.get("keyword", "")).casefold())
    if field == "keyword":
        return by_name
    known = [k for k in by_name if isinstance(k.get(field), int | float)]
    unknown = [k for k in by_name if not isinstance(k.get(field), int | float)]
    return sorted(known, key=lambda k: k[field], reverse=descending) + unknown  # stable


@router.get(
    "/projects/{project_id}/keywords",
    response_model=KeywordPage,
    operation_id="list_keywords",
)
def list_keywords(
    project_id: ProjectId,
    user: User,
    svc: Svc,
    sort: Sort = "volume",
    min_volume: MinVolume = None,
    location: Location = None,
    language: Language = None,
    cursor: Cursor = None,
    limit: Limit = 100,
) -> Response:
    """The keywords of the project's last completed keyword research (of one market with
    `location`/`language`), with its `job_id` and `collected_at`. Never starts a job: 404
    until one has completed. Unknown figures sort last."""
    after = parse_cursor(cursor)  # the request is checked before anything is read
    subject = _subject(location, language)
    found = _collection(svc, user, project_id, subject, after)
    offset = after % PAGE_SPAN if after is not None else 0
    data = found.data if isinstance(found.data, dict) else {}
    keywords = [k for k in data.get("keywords") or [] if isinstance(k, dict)]
    if min_volume is not None:
        keywords = [k for k in keywords if (k.get("search_volume") or 0) >= min_volume]
    rows = _ordered(keywords, sort)[offset : offset + limit]
    more = offset + limit < len(keywords)
    body = {
        "job_id": found.job_id,
        "collected_at": rfc3339_or_none(found.collected_at),
        "subject": found.subject,
        **{k: data.get(k) for k in ("provider", "location", "language", "seeds", "url")},
        "data": rows,
        "next_cursor": str(found.id * PAGE_SPAN + offset + limit) if more else None,
    }
    return JSONResponse(body)


def _collection(
    svc: Svc, user: User, project_id: int, subject: str | None, after: int | None
) -> CollectionRecord:
    name = keyword_research.NAME
    if after is None:
        return svc.collections.latest(user, project_id, name, subject)
    wanted = after // PAGE_SPAN
    found = svc.collections.history(user, project_id, name, subject, before_id=wanted + 1, limit=1)
    if not found or found[0].id != wanted:
        detail = f"the cursor names no keyword collection of project {project_id}"
        raise Problem(404, "Not found", detail, code="not_found")
    return found[0]
