"""What a project tracks (issue 29.1): its tracked keywords and prompts, and its collection
(per schedulable kind, whether and how often it is collected). ``{"data": ...}`` bodies and
problem+json errors, as the rest of the projects API."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, Field

from seojobs.api import problems
from seojobs.api.deps import Svc, User
from seojobs.api.ids import MAX_ID, IdDigits, parse_cursor
from seojobs.api.inputs import FORBID, CheckedRoute
from seojobs.api.paging import by_id, paged
from seojobs.api.projects import CONFLICT, ProjectId
from seojobs.api.v1 import Cursor, Limit
from seojobs.kinds.backlink_analysis.monitor import MonitorLinks
from seojobs.kinds.geo_lookup.params import Prompt
from seojobs.kinds.rank_check.params import KeywordAt
from seojobs.records import TrackedKeyword, TrackedPrompt
from seojobs.services.collection_config import Collected, CollectionEntry
from seojobs.services.tracked import MAX_BULK, Added
from seojobs.timefmt import rfc3339_or_none

router = APIRouter(
    prefix="/v1", tags=["projects"], responses=problems.RESPONSES, route_class=CheckedRoute
)
TrackedId = Annotated[int, Path(ge=1, le=MAX_ID, description="The tracked entry's id."), IdDigits]


class KeywordsIn(BaseModel):
    model_config = FORBID

    keywords: list[KeywordAt] = Field(
        min_length=1,
        max_length=MAX_BULK,
        description="Up to 1,000 keywords, each in its market (left out: location 2840, "
        "language en, device desktop). One already tracked in that market, whatever its "
        "case, is skipped.",
    )


class PromptsIn(BaseModel):
    model_config = FORBID

    prompts: list[Prompt] = Field(
        min_length=1,
        max_length=MAX_BULK,
        description="Prompts for AI search; one already tracked, whatever its case, is skipped.",
    )


class TrackedKeywordOut(BaseModel):
    id: int
    keyword: str
    location: int | str
    language: str
    device: str
    created_at: str


class TrackedPromptOut(BaseModel):
    id: int
    prompt: str
    created_at: str


class KeywordPage(BaseModel):
    data: list[TrackedKeywordOut]
    next_cursor: str | None


class PromptPage(BaseModel):
    data: list[TrackedPromptOut]
    next_cursor: str | None


class AddedKeywords(BaseModel):
    added: list[TrackedKeywordOut] = Field(description="Those now tracked that were not.")
    already_tracked: int = Field(description="How many of those sent were tracked already.")


class AddedPrompts(BaseModel):
    added: list[TrackedPromptOut]
    already_tracked: int


class AddedKeywordsData(BaseModel):
    data: AddedKeywords


class AddedPromptsData(BaseModel):
    data: AddedPrompts


class CollectionOut(BaseModel):
    type: str = Field(description="A schedulable job type.")
    enabled: bool
    opt_in: bool = Field(
        description="Seed 001 runs it only when started: collected only when enabled explicitly."
    )
    frequency: str | None = Field(
        description="daily, weekly, every_days or cron; null when never set."
    )
    every_days: float | None = Field(description="The interval in days (SEOJOBS_DAY_SECONDS).")
    every_seconds: float | None
    cron: str | None
    params: dict[str, Any] = Field(description="The params the collection sets.")
    schedule_id: int | None = Field(description="The schedule behind it (see /schedules).")
    next_run_at: str | None


class CollectionData(BaseModel):
    data: list[CollectionOut]


class PairOut(BaseModel):
    donor: str = Field(description="The page that links (the link's `url_from`).")
    target: str = Field(description="The URL it links to (`url_to`).")


class MonitoredLinks(BaseModel):
    target: str = Field(description="The analysis's target.")
    analysis_job_id: int | None = Field(description="The analysis the links came from.")
    added: list[PairOut] = Field(description="The pairs now monitored that were not.")
    already_monitored: int = Field(description="How many of those picked were monitored.")
    monitored: int = Field(description="The pairs the backlink refresh collection checks now.")
    collection: CollectionOut = Field(description="The project's backlink_refresh collection.")


class MonitoredData(BaseModel):
    data: MonitoredLinks


def keyword_body(keyword: TrackedKeyword) -> dict[str, Any]:
    return keyword.market() | {"id": keyword.id, "created_at": rfc3339_or_none(keyword.created_at)}


def prompt_body(prompt: TrackedPrompt) -> dict[str, Any]:
    return {
        "id": prompt.id,
        "prompt": prompt.prompt,
        "created_at": rfc3339_or_none(prompt.created_at),
    }


def _after(records: list[Any], cursor: str | None, limit: int) -> tuple[list[Any], str | None]:
    after = parse_cursor(cursor) or 0
    return paged([r for r in records if r.id > after], limit, by_id)


def _added(added: Added, found: list[Any], body: Any) -> JSONResponse:
    ids = set(added.ids)
    data = {
        "added": [body(r) for r in found if r.id in ids],
        "already_tracked": added.already_tracked,
    }
    return JSONResponse({"data": data}, status_code=201)


# -- tracked keywords ---------------------------------------------------------------------------


@router.get(
    "/projects/{project_id}/tracked-keywords",
    response_model=KeywordPage,
    operation_id="list_tracked_keywords",
)
def list_tracked_keywords(
    project_id: ProjectId, user: User, svc: Svc, cursor: Cursor = None, limit: Limit = 100
) -> Response:
    """The keywords the project tracks, oldest first, each in its market."""
    page, next_cursor = _after(svc.tracked.keywords(user, project_id), cursor, limit)
    return JSONResponse({"data": [keyword_body(k) for k in page], "next_cursor": next_cursor})


@router.post(
    "/projects/{project_id}/tracked-keywords",
    status_code=201,
    response_model=AddedKeywordsData,
    responses=CONFLICT,
    operation_id="add_tracked_keywords",
)
def add_tracked_keywords(project_id: ProjectId, body: KeywordsIn, user: User, svc: Svc) -> Response:
    """Track keywords, up to 1,000 at a time and 2,000 in a project (409 `tracked_limit`
    past that). The project's rank checks check them unless a job names its own keywords."""
    added = svc.tracked.add_keywords(user, project_id, body.keywords)
    return _added(added, svc.tracked.keywords(user, project_id), keyword_body)


@router.delete(
    "/projects/{project_id}/tracked-keywords/{keyword_id}",
    status_code=204,
    response_class=Response,
    operation_id="delete_tracked_keyword",
)
def delete_tracked_keyword(
    project_id: ProjectId, keyword_id: TrackedId, user: User, svc: Svc
) -> Response:
    """Stop tracking a keyword (what was collected about it stays)."""
    svc.tracked.delete_keyword(user, project_id, keyword_id)
    return Response(status_code=204)


# -- tracked prompts ----------------------------------------------------------------------------


@router.get(
    "/projects/{project_id}/tracked-prompts",
    response_model=PromptPage,
    operation_id="list_tracked_prompts",
)
def list_tracked_prompts(
    project_id: ProjectId, user: User, svc: Svc, cursor: Cursor = None, limit: Limit = 100
) -> Response:
    """The prompts the project tracks for AI search, oldest first."""
    page, next_cursor = _after(svc.tracked.prompts(user, project_id), cursor, limit)
    return JSONResponse({"data": [prompt_body(p) for p in page], "next_cursor": next_cursor})


@router.post(
    "/projects/{project_id}/tracked-prompts",
    status_code=201,
    response_model=AddedPromptsData,
    responses=CONFLICT,
    operation_id="add_tracked_prompts",
)
def add_tracked_prompts(project_id: ProjectId, body: PromptsIn, user: User, svc: Svc) -> Response:
    """Track prompts, up to 50 in a project (one GEO lookup asks them all; 409
    `tracked_limit` past that). The project's GEO lookups ask them unless a job names its own."""
    added = svc.tracked.add_prompts(user, project_id, body.prompts)
    return _added(added, svc.tracked.prompts(user, project_id), prompt_body)


@router.delete(
    "/projects/{project_id}/tracked-prompts/{prompt_id}",
    status_code=204,
    response_class=Response,
    operation_id="delete_tracked_prompt",
)
def delete_tracked_prompt(
    project_id: ProjectId, prompt_id: TrackedId, user: User, svc: Svc
) -> Response:
    """Stop tracking a prompt (what was collected about it stays)."""
    svc.tracked.delete_prompt(user, project_id, prompt_id)
    return Response(status_code=204)


# -- collection ---------------------------------------------------------------------------------


def collection_body(found: Collected, day_seconds: float) -> dict[str, Any]:
    schedule = found.schedule
    body: dict[str, Any] = {
        "type": found.kind.name,
        "enabled": bool(schedule and schedule.enabled),
        "opt_in": found.kind.collection_opt_in,
        "frequency": None,
        "every_days": None,
        "every_seconds": None,
        "cron": None,
        "params": {},
        "schedule_id": None,
        "next_run_at": None,
    }
    if schedule is None:
        return body
    interval = schedule.interval_seconds
    frequency = "cron"
    if interval is not None:
        frequency = {day_seconds: "daily", 7 * day_seconds: "weekly"}.get(interval, "every_days")
    return body | {
        "frequency": frequency,
        "every_days": None if interval is None else interval / day_seconds,
        "every_seconds": interval,
        "cron": schedule.cron,
        "params": schedule.params,
        "schedule_id": schedule.id,
        "next_run_at": rfc3339_or_none(schedule.next_tick_at) if schedule.enabled else None,
    }


def _collection(svc: Any, found: list[Collected]) -> JSONResponse:
    day = svc.settings.day_seconds
    return JSONResponse({"data": [collection_body(c, day) for c in found]})


@router.get(
    "/projects/{project_id}/collection",
    response_model=CollectionData,
    operation_id="get_collection",
)
def get_collection(project_id: ProjectId, user: User, svc: Svc) -> Response:
    """Per schedulable job type: whether the project collects it, how often, with which
    params, and when next. Reading it starts nothing."""
    return _collection(svc, svc.collection.get(user, project_id))


@router.put(
    "/projects/{project_id}/collection",
    response_model=CollectionData,
    responses=CONFLICT,
    operation_id="put_collection",
)
def put_collection(
    project_id: ProjectId, body: dict[str, CollectionEntry], user: User, svc: Svc
) -> Response:
    """Set how the job types the body names are collected (`{"rank_check": {"frequency":
    "daily"}, "site_audit": {"enabled": true, "frequency": "weekly"}}`); the others stay as
    they are. Each run is an ordinary job of the project, charged like any other, with the
    project's tracked keywords, prompts, domain and competitors as they are when it starts
    (params set here win). A new or changed timing runs first now."""
    return _collection(svc, svc.collection.put(user, project_id, body))


# -- found links monitored ----------------------------------------------------------------------


@router.post(
    "/projects/{project_id}/backlinks/analysis/monitor",
    status_code=201,
    response_model=MonitoredData,
    responses=CONFLICT,
    operation_id="monitor_found_backlinks",
    tags=["backlinks"],
)
def monitor_found_backlinks(
    project_id: ProjectId, body: MonitorLinks, user: User, svc: Svc
) -> Response:
    """Monitor links a backlink analysis found: add them, as (donor, target) pairs, to what
    the project's `backlink_refresh` collection checks. The analysis is the project's last
    completed one of `target` (or the newest of any; 404 before one); the links are those
    `links` names (each one it found, else 422 naming `links[N]`), or those the filters pick
    (live ones, strongest first, up to `limit`). A pair monitored already is skipped; past
    1,000 pairs, 409 `tracked_limit` and nothing changes. A project without a backlink
    refresh collection gets one, daily (change it with PUT /collection)."""
    done = svc.monitored.add_found(user, project_id, body)
    data = done.analysis.data if isinstance(done.analysis.data, dict) else {}
    body_out = {
        "target": data.get("target"),
        "analysis_job_id": done.analysis.job_id,
        "added": done.added,
        "already_monitored": done.already_monitored,
        "monitored": done.monitored,
        "collection": collection_body(done.collection, svc.settings.day_seconds),
    }
    return JSONResponse({"data": body_out}, status_code=201)
