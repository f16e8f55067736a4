"""Web-vitals reads: what the project's ``web_vitals`` jobs collected. Never starts one.

A measurement is started like any job (``POST /v1/projects/{id}/jobs`` with type
``web_vitals``); each URL and form factor it measured is a collection (subject
``"<form factor> <url>"``). ``/web-vitals`` serves the latest of each, ``/web-vitals/history``
every one of a URL, newest first.
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
from seojobs.api.projects import ProjectId
from seojobs.api.v1 import Cursor, Limit
from seojobs.kinds import web_vitals
from seojobs.kinds.urls import check_url
from seojobs.records import CollectionRecord
from seojobs.services.errors import NotFound
from seojobs.timefmt import rfc3339_or_none

router = APIRouter(
    prefix="/v1", tags=["web-vitals"], responses=problems.RESPONSES, route_class=CheckedRoute
)

FORM_FACTORS = ("mobile", "desktop")
FormFactor = Annotated[
    Literal["mobile", "desktop"] | None, Query(description="Only this form factor.")
]
PageUrl = Annotated[
    str | None,
    Query(max_length=2048, description="Only this page, as the job's `urls` gave it."),
]
DATA_DESCRIPTION = (
    "`url`, `form_factor`; `lab`: `performance_score` (0-100), `metrics` (lcp, cls, tbt, fcp, "
    "speed_index, ttfb: `value` as Lighthouse reports it, `simulated`, `observed`, `score`, "
    "`rating` good / needs_improvement / poor where web-vitals has thresholds), "
    "`opportunities` (id, title, savings_ms, savings_bytes), `lighthouse_version`, "
    "`run_warnings`, `errored_audits`; `field`: CrUX p75 and histograms with ratings and the "
    "`collection_period` (null without SEOJOBS_CRUX_API_KEY or when CrUX has no data)."
)


class Vitals(BaseModel):
    job_id: int | None = Field(description="The job that collected it (null once pruned).")
    collected_at: str | None
    url: str
    form_factor: str
    data: dict[str, Any] = Field(description=DATA_DESCRIPTION)


class VitalsList(BaseModel):
    data: list[Vitals]


class VitalsPage(BaseModel):
    data: list[Vitals]
    next_cursor: str | None


def _body(found: CollectionRecord) -> dict[str, Any]:
    data = found.data if isinstance(found.data, dict) else {}
    return {
        "job_id": found.job_id,
        "collected_at": rfc3339_or_none(found.collected_at),
        "url": data.get("url"),
        "form_factor": data.get("form_factor"),
        "data": data,
    }


def _stored(url: str) -> str:
    """The URL as a job stored it (IRIs as the URI they map to)."""
    try:
        return check_url(url)
    except ValueError:
        return url  # no job took it: nothing is found


@router.get(
    "/projects/{project_id}/web-vitals", response_model=VitalsList, operation_id="get_web_vitals"
)
def get_web_vitals(
    project_id: ProjectId, user: User, svc: Svc, form_factor: FormFactor = None
) -> Response:
    """The latest measurement of every URL and form factor the project's completed
    `web_vitals` jobs measured, with each metric rated. Never starts a job: 404 until one
    has completed."""
    found = svc.collections.latest_each(user, project_id, web_vitals.NAME)
    data = [_body(c) for c in found]
    if form_factor is not None:
        data = [d for d in data if d["form_factor"] == form_factor]
    return JSONResponse({"data": data})


@router.get(
    "/projects/{project_id}/web-vitals/history",
    response_model=VitalsPage,
    operation_id="list_web_vitals_history",
)
def web_vitals_history(
    project_id: ProjectId,
    user: User,
    svc: Svc,
    url: PageUrl = None,
    form_factor: FormFactor = None,
    cursor: Cursor = None,
    limit: Limit = 100,
) -> Response:
    """Every completed measurement of `url` (of every URL without it; of one form factor,
    if given), newest first. 404 until one has completed."""
    before = parse_cursor(cursor)
    factors = [form_factor] if form_factor else list(FORM_FACTORS)
    subjects = [web_vitals.subject(f, _stored(url)) for f in factors] if url else [None]
    page: list[CollectionRecord] = []
    for subject in subjects:
        page += svc.collections.history(
            user, project_id, web_vitals.NAME, subject, before_id=before, limit=limit + 1
        )
    if not page and before is None:
        what = f" for {url!r}" if url else ""
        raise NotFound(f"web_vitals data{what} in project {project_id} (none completed)")
    page = sorted(page, key=lambda c: c.id, reverse=True)[: limit + 1]
    more = len(page) > limit
    page = page[:limit]
    data = [_body(c) for c in page]
    if form_factor and not url:  # filtered after paging: a page may hold fewer than `limit`
        data = [d for d in data if d["form_factor"] == form_factor]
    return JSONResponse({"data": data, "next_cursor": str(page[-1].id) if more else None})
