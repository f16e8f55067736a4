"""Rank reads: what the project's completed ``rank_check`` jobs collected. Never starts one.

A check is started like any job (``POST /v1/projects/{id}/jobs`` with type ``rank_check``,
or by a schedule); each keyword it got an answer for is a collection (subject
``{device}/{location}/{language}/{keyword}``). ``/rankings`` serves the newest of each,
``/rankings/history`` every one (of a keyword), newest first. A ``/rankings`` cursor names the
newest collection the first page saw, so a check completing between two pages does not shift
the rows under the reader: later pages show the rankings as they stood then.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, Field

from seojobs.api import problems
from seojobs.api.deps import Svc, User
from seojobs.api.ids import parse_cursor
from seojobs.api.inputs import CheckedRoute
from seojobs.api.keywords import Language, Location
from seojobs.api.projects import ProjectId
from seojobs.api.v1 import Cursor, Limit
from seojobs.kinds import rank_check
from seojobs.kinds.keyword_research.params import ASCII_SPACE, MAX_KEYWORD, TEXT_PATTERN
from seojobs.records import CollectionRecord
from seojobs.services.errors import NotFound
from seojobs.timefmt import rfc3339_or_none

router = APIRouter(
    prefix="/v1", tags=["rankings"], responses=problems.RESPONSES, route_class=CheckedRoute
)

# A cursor is the newest collection id of the first page and the rows already read.
PAGE_SPAN = 1_000_000
KEY_FIELDS = ("keyword", "device", "location", "language")
Device = Annotated[Literal["desktop", "mobile"] | None, Query(description="Only this device.")]
Keyword = Annotated[
    str | None,
    Query(
        min_length=1,
        max_length=MAX_KEYWORD,
        pattern=TEXT_PATTERN,
        description="Only this keyword (any case).",
    ),
]
Contains = Annotated[
    str | None,
    Query(
        min_length=1,
        max_length=MAX_KEYWORD,
        pattern=TEXT_PATTERN,
        description="Only keywords containing this text (any case).",
    ),
]
Sort = Annotated[
    Literal["position", "keyword"],
    Query(description="Best position first (not ranked last), or keywords A to Z."),
]


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


def _row(found: CollectionRecord) -> dict[str, Any]:
    data = found.data if isinstance(found.data, dict) else {}
    fields = {name: data.get(name) for name in Ranking.model_fields}
    return fields | {"job_id": found.job_id, "collected_at": rfc3339_or_none(found.collected_at)}


def _place(location: str | None) -> str | None:
    if location is None:
        return None
    place = location.strip(ASCII_SPACE)
    return str(int(place)) if place.isascii() and place.isdigit() else place


def _wanted(
    row: dict[str, Any],
    device: str | None,
    location: str | None,
    language: str | None,
    keyword: str | None,
    contains: str | None,
) -> bool:
    name = str(row.get("keyword") or "").casefold()
    return (
        (device is None or row.get("device") == device)
        and (location is None or str(row.get("location")) == location)
        and (language is None or row.get("language") == language.lower())
        and (keyword is None or name == keyword.strip(ASCII_SPACE).casefold())
        and (contains is None or contains.strip(ASCII_SPACE).casefold() in name)
    )


def _ordered(rows: list[dict[str, Any]], sort: str) -> list[dict[str, Any]]:
    def name(r: dict[str, Any]) -> tuple[str, str, str, str]:
        keyword, device, place, language = (str(r.get(k)) for k in KEY_FIELDS)
        return (keyword.casefold(), device, place, language)

    by_name = sorted(rows, key=name)
    if sort == "keyword":
        return by_name
    ranked = [r for r in by_name if isinstance(r.get("position"), int)]
    unranked = [r for r in by_name if not isinstance(r.get("position"), int)]
    return sorted(ranked, key=lambda r: r["position"]) + unranked  # stable: by name within


def _as_of(
    svc: Svc, user: User, project_id: int, latest: list[CollectionRecord], snapshot: int
) -> list[CollectionRecord]:
    """Each subject's collection as it stood when collection ``snapshot`` was the newest."""
    found = []
    for record in latest:
        if record.id <= snapshot:
            found.append(record)
            continue
        older = svc.collections.history(
            user, project_id, rank_check.NAME, record.subject, before_id=snapshot + 1, limit=1
        )
        found += older
    return found


@router.get(
    "/projects/{project_id}/rankings", response_model=RankingPage, operation_id="list_rankings"
)
def list_rankings(
    project_id: ProjectId,
    user: User,
    svc: Svc,
    device: Device = None,
    location: Location = None,
    language: Language = None,
    keyword: Keyword = None,
    contains: Contains = None,
    sort: Sort = "position",
    cursor: Cursor = None,
    limit: Limit = 100,
) -> Response:
    """The newest position of every keyword (per device, location and language) the
    project's completed `rank_check` jobs checked, each with its `job_id` and
    `collected_at`. Never starts a job: 404 until one has completed."""
    after = parse_cursor(cursor)  # the request is checked before anything is read
    latest = svc.collections.latest_each(user, project_id, rank_check.NAME)
    if after is None:
        snapshot, offset = max(c.id for c in latest), 0
    else:
        snapshot, offset = divmod(after, PAGE_SPAN)
        latest = _as_of(svc, user, project_id, latest, snapshot)
    rows = [_row(c) for c in latest]
    rows = [r for r in rows if _wanted(r, device, _place(location), language, keyword, contains)]
    page = _ordered(rows, sort)[offset : offset + limit]
    more = offset + limit < len(rows)
    next_cursor = str(snapshot * PAGE_SPAN + offset + limit) if more else None
    return JSONResponse({"data": page, "next_cursor": next_cursor})


@router.get(
    "/projects/{project_id}/rankings/history",
    response_model=RankingPage,
    operation_id="list_rankings_history",
)
def rankings_history(
    project_id: ProjectId,
    user: User,
    svc: Svc,
    keyword: Keyword = None,
    device: Device = None,
    location: Location = None,
    language: Language = None,
    cursor: Cursor = None,
    limit: Limit = 100,
) -> Response:
    """Every collected position of `keyword` (of every keyword without it; of one device,
    location or language, if given), newest first. 404 until one has completed."""
    before = parse_cursor(cursor)
    try:
        latest = svc.collections.latest_each(user, project_id, rank_check.NAME)
    except NotFound:
        if before is None:
            raise
        svc.project(user, project_id)  # someone else's project stays 404
        latest = []  # a page past the end, as web-vitals history answers it
    place = _place(location)
    subjects: list[str | None] = [
        c.subject for c in latest if _wanted(_row(c), device, place, language, keyword, None)
    ]
    if (keyword, device, place, language) == (None, None, None, None):
        subjects = [None]  # every keyword: one read
    if not subjects and before is None:
        what = f" for {keyword!r}" if keyword else ""
        raise NotFound(f"rank_check data{what} in project {project_id} (none completed)")
    page: list[CollectionRecord] = []
    for subject in subjects:
        page += svc.collections.history(
            user, project_id, rank_check.NAME, subject, before_id=before, limit=limit + 1
        )
    page = sorted(page, key=lambda c: c.id, reverse=True)[: limit + 1]
    more = len(page) > limit
    page = page[:limit]
    data = [_row(c) for c in page]
    return JSONResponse({"data": data, "next_cursor": str(page[-1].id) if more else None})
