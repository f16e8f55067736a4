"""Seed 000's v1 indexing API: index-submit and index-check jobs, reports, usage."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from enum import Enum
from typing import Annotated, Any, Literal, TypeVar

from fastapi import APIRouter, FastAPI, Header, Path, Query, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, Field

from seojobs.api import idempotency, problems, reports
from seojobs.api.deps import Svc, User, current_user, header
from seojobs.api.fastroute import PathIdRoute
from seojobs.api.ids import (
    MAX_ID,
    IdDigits,
    digits,
    digits_pattern,
    id_list_pattern,
    parse_cursor,
    parse_ids,
)
from seojobs.api.inputs import FORBID, CheckedRoute
from seojobs.api.paging import by_id, paged
from seojobs.api.problems import Problem
from seojobs.api.shared import add_routes
from seojobs.api.text import Title
from seojobs.kinds.urls import MAX_URLS, Url
from seojobs.records import JobRecord, UserRecord
from seojobs.services import Services, indexing
from seojobs.timefmt import DateTime

PREFIX = "/api/v1"
TAGS: list[str | Enum] = ["v1 indexing"]
router = APIRouter(prefix=PREFIX, tags=TAGS, responses=problems.RESPONSES, route_class=CheckedRoute)

KINDS = {"index-submit": indexing.SUBMIT, "index-check": indexing.CHECK}
RETRY_AFTER = {"pending": 5, "processing": 10}
MAX_WAIT = 30
MAX_IDS = 1000
R = TypeVar("R")
JobId = Annotated[int, Path(ge=1, le=MAX_ID, description="The job's id."), IdDigits]


class SubmitRequest(BaseModel):
    model_config = FORBID

    urls: list[Url] = Field(min_length=1, max_length=MAX_URLS, description="http(s) URLs.")
    checker: int | None = Field(
        default=None, ge=1, le=5, description="Check the URLs' index status N days later."
    )
    engine: Literal["google", "bing", "yandex"] = "google"
    title: Title | None = None
    webhook_url: Url | None = Field(
        default=None,
        description="Called (signed with your callback secret) when this job completes or fails.",
    )


class CheckRequest(BaseModel):
    model_config = FORBID

    urls: list[Url] = Field(min_length=1, max_length=MAX_URLS, description="http(s) URLs.")
    engine: Literal["google", "bing", "yandex"] = "google"
    title: Title | None = None
    webhook_url: Url | None = Field(
        default=None,
        description="Called (signed with your callback secret) when this job completes or fails.",
    )


class JobError(BaseModel):
    code: str
    message: str | None


class JobStatus(BaseModel):
    job_id: int
    status: str = Field(description="pending | processing | completed | failed")
    title: str | None
    total_urls: int
    failed_count: int
    progress_percent: int
    created_at: datetime
    completed_at: datetime | None
    error: JobError | None
    duplicates_removed: int = Field(description="Duplicate URLs dropped from the request.")


class SubmitStatus(JobStatus):
    submitted_urls: int
    successful_count: int
    success_percent: int
    scheduled_check_days: int | None
    scheduled_check_status: str | None
    scheduled_check_at: datetime | None
    scheduled_check_run_id: int | None


class CheckStatus(JobStatus):
    checked_urls: int
    indexed_count: int
    not_indexed_count: int


class SubmitList(BaseModel):
    jobs: list[SubmitStatus]
    next_cursor: str | None


class CheckList(BaseModel):
    jobs: list[CheckStatus]
    next_cursor: str | None


class Quota(BaseModel):
    limit: int
    used: int
    remaining: int
    resets_at: datetime


class Usage(BaseModel):
    submit: Quota
    check: Quota


# -- helpers ----------------------------------------------------------------------------------


def _body(svc: Services, job: JobRecord, child: JobRecord | bool | None = True) -> dict[str, Any]:
    if job.kind == indexing.SUBMIT:
        return indexing.submission_status(svc, job, child)
    return indexing.check_status(job)


# Submissions and checks share one sequence of ids: a job read under the other path is
# answered with where it is (it is the caller's own job, so nothing leaks).
_PATHS = {indexing.SUBMIT: "index-submit", indexing.CHECK: "index-check"}


def _of_kind(job: JobRecord, kind: str) -> JobRecord:
    if job.kind != kind:
        where = _PATHS.get(job.kind)
        detail = f"job {job.id} is a {job.kind} job, not {kind}" + (
            f": read it at /api/v1/{where}/jobs/{job.id}" if where else ""
        )
        raise Problem(404, "Not found", detail, code="not_found")
    return job


def _job(svc: Services, user: UserRecord, kind: str, job_id: int) -> JobRecord:
    return _of_kind(svc.jobs.get(user, job_id, summary=True), kind)  # NotFound: not the user's


def retry_headers(job: JobRecord) -> dict[str, str]:
    if job.is_final:
        return {}
    return {"Retry-After": str(RETRY_AFTER.get(job.state, 10))}


def _create(
    request: Request, svc: Services, user: UserRecord, kind: str, body: BaseModel, path: str
) -> Response:
    payload = body.model_dump()
    outside = ("title", "webhook_url")
    params = {k: v for k, v in payload.items() if k not in outside and v is not None}
    if payload.get("webhook_url") is not None:
        svc.webhooks.check_url(payload["webhook_url"], "webhook_url")

    def produce(job_key: str | None) -> JSONResponse:
        job, _created = svc.jobs.create(
            user,
            kind,
            params,
            title=payload.get("title"),
            idempotency_key=job_key,
            webhook_url=payload.get("webhook_url"),
        )
        content = _body(svc, job)  # the same body as a GET of the Location
        headers = {"Location": f"/api/v1/{path}/jobs/{job.id}"} | retry_headers(job)
        return JSONResponse(content, status_code=202, headers=headers)

    return idempotency.run(request, svc, user, {"kind": kind, **payload}, produce)


def _wait_seconds(prefer: str | None) -> float:
    """``Prefer: wait=N`` (RFC 7240), capped at 30 s; anything unparseable means no wait."""
    if not prefer:
        return 0.0
    for part in prefer.split(","):
        name, _, value = part.strip().partition("=")
        if name.strip().lower() == "wait":
            try:
                return max(0.0, min(float(value.strip().strip('"')), MAX_WAIT))
            except ValueError:
                return 0.0
    return 0.0


async def _read(svc: Services, user: UserRecord, kind: str, job_id: int) -> tuple[JobRecord, Any]:
    # On the event loop: through the thread pool the hand-off cost more than the read.
    job = _of_kind(await svc.jobs.summary(user, job_id), kind)  # NotFound: not the user's
    return job, await indexing.status_body(svc, job)


async def long_poll(
    request: Request, first: R, read: Callable[[], Awaitable[R]], job_of: Callable[[R], JobRecord]
) -> tuple[R, dict[str, str]]:
    """Hold a status read per ``Prefer: wait=N``: ``first`` (a fresh read), or a later read
    as soon as the job changes, or the last one when the wait is over; with the answer's
    headers (Retry-After while open, Preference-Applied when held)."""
    wait = _wait_seconds(header(request, b"prefer"))
    # RFC 7240: Preference-Applied says the preference shaped this answer. It is sent only
    # when the request was held, i.e. the job was still open when it arrived; a final job
    # (or no usable wait) is answered at once, and claiming the wait then would be false.
    got = first
    held = bool(wait) and not job_of(got).is_final
    if held:
        # Long-poll: answer as soon as the job changes, or when the wait is over.
        deadline = time.monotonic() + wait
        seen = (job_of(got).state, job_of(got).updated_at)
        while time.monotonic() < deadline:
            await asyncio.sleep(min(0.25, max(0.0, deadline - time.monotonic())))
            got = await read()
            if (job_of(got).state, job_of(got).updated_at) != seen:
                break
    headers = retry_headers(job_of(got))
    if held:
        headers["Preference-Applied"] = f"wait={wait:g}"  # the bound applied, after the cap
    return got, headers


# JSONResponse's own render: json.dumps with these options builds a JSONEncoder per call.
_ENCODE = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode


class StatusJSON(JSONResponse):
    """A ``JSONResponse``, byte for byte, rendered by one encoder built once."""

    def render(self, content: Any) -> bytes:
        return _ENCODE(content).encode("utf-8")


async def _status(request: Request, kind: str, job_id: int) -> Response:
    # The hot path of every poller: no Depends (see deps.current_user).
    user = await current_user(request)
    svc: Services = request.app.state.services

    def read() -> Awaitable[tuple[JobRecord, Any]]:
        return _read(svc, user, kind, job_id)

    (_job_read, body), headers = await long_poll(request, await read(), read, lambda r: r[0])
    return StatusJSON(body, headers=headers)


def _list(
    svc: Services,
    user: UserRecord,
    kind: str,
    status: Sequence[str] | None,
    ids: str | None,
    updated_since: datetime | None,
    cursor: str | None,
    limit: int,
) -> dict[str, Any]:
    id_list = parse_ids(ids, most=MAX_IDS)
    before = parse_cursor(cursor)
    found = svc.jobs.page(
        user,
        kind=kind,
        states=status,
        ids=id_list,
        updated_since=updated_since,
        before_id=before,
        limit=limit + 1,
        summary=True,
    )
    page, more = paged(found, limit, by_id)
    children = indexing.follow_ups(svc, page)
    bodies = [_body(svc, job, children.get(job.id)) for job in page]
    return {"jobs": bodies, "next_cursor": more}


StatusFilter = Annotated[
    list[Literal["pending", "processing", "completed", "failed"]] | None,
    Query(description="Only jobs in these states (repeat the parameter)."),
]
# The patterns only document what parse_ids/parse_cursor take (their own messages answer).
IdsFilter = Annotated[
    str | None,
    Query(
        description=f"Comma-separated job ids (at most {MAX_IDS}).",
        json_schema_extra={"pattern": id_list_pattern(MAX_IDS)},
    ),
]
Since = Annotated[
    DateTime | None, Query(description="Only jobs updated at or after this time (RFC 3339).")
]
Cursor = Annotated[
    str | None,
    Query(
        description="next_cursor of the previous page.",
        json_schema_extra={"pattern": f"^{digits_pattern(1, MAX_ID)}$"},
    ),
]
# A report's cursor is an item's sequence number, the first of which is 0.
SeqCursor = Annotated[
    str | None,
    Query(
        description="next_cursor of the previous page.",
        json_schema_extra={"pattern": f"^{digits_pattern(0, reports.MAX_SEQ)}$"},
    ),
]
Limit = Annotated[int, Query(ge=1, le=1000), digits(1, 1000)]
# Status GETs read ``Prefer`` themselves: a declared header parameter cost FastAPI ~150 us per
# request, half the budget of the whole poll (bench/api.py). It is documented here instead.
STATUS_OPENAPI: dict[str, Any] = {
    "parameters": [
        {
            "name": "prefer",
            "in": "header",
            "required": False,
            "schema": {"type": "string"},
            "description": (
                "`wait=N` (N ≤ 30): answer when the job changes or N s pass. The answer "
                "carries `Preference-Applied: wait=N` when it was held, i.e. the job was "
                "still open; a finished job is answered at once, without it."
            ),
        }
    ]
}
Accept = Annotated[str | None, Header()]

# -- status reads: installed on the app's own router, ahead of every other route, by
# install_status_routes (status polls are most of the traffic) ----------------------------------


async def get_submit(request: Request, job_id: JobId) -> Response:
    """A submission's status (200 in every state; `Retry-After` while not finished)."""
    return await _status(request, indexing.SUBMIT, job_id)


async def get_check(request: Request, job_id: JobId) -> Response:
    """A check's status (200 in every state; `Retry-After` while not finished)."""
    return await _status(request, indexing.CHECK, job_id)


# The two status GETs, on a router without prefix of its own (see install_status_routes).
status_router = APIRouter(route_class=PathIdRoute)
for _path, _endpoint, _model, _operation in (
    ("/index-submit/jobs/{job_id}", get_submit, SubmitStatus, "get_index_submit_job"),
    ("/index-check/jobs/{job_id}", get_check, CheckStatus, "get_index_check_job"),
):
    status_router.add_api_route(
        PREFIX + _path,
        _endpoint,
        methods=["GET"],
        response_model=_model,
        operation_id=_operation,
        openapi_extra=STATUS_OPENAPI,
        tags=TAGS,
        responses=problems.RESPONSES,
    )


def install_status_routes(app: FastAPI) -> None:
    """Put the two status GETs first on the app's own router, ahead of every other route
    (FastAPI's own, /openapi.json, /docs..., too).

    Routes of an included router are matched through FastAPI's inclusion layer (two more
    ``matches`` per route tried, ~30 us per poll); these are most of the traffic, so they sit
    on the app itself, with the same path, tags and documented errors as the rest of v1 (the
    routes built once, as the other routers' are: ``seojobs.api.shared``). They are
    ``PathIdRoute``s: documented like any route, run without FastAPI's per-request parameter
    handling (see ``seojobs.api.fastroute``).
    """
    add_routes(app, status_router, first=True)


# -- index-submit -------------------------------------------------------------------------------


@router.post(
    "/index-submit/jobs",
    status_code=202,
    response_model=SubmitStatus,
    operation_id="create_index_submit_job",
)
def create_submit(body: SubmitRequest, request: Request, user: User, svc: Svc) -> Response:
    """Submit URLs for crawling. Answers 202 at once; poll the Location."""
    return _create(request, svc, user, indexing.SUBMIT, body, "index-submit")


@router.get("/index-submit/jobs", response_model=SubmitList, operation_id="list_index_submit_jobs")
def list_submit(
    user: User,
    svc: Svc,
    status: StatusFilter = None,
    ids: IdsFilter = None,
    updated_since: Since = None,
    cursor: Cursor = None,
    limit: Limit = 100,
) -> dict[str, Any]:
    """Submission jobs, newest first; filter by status, ids or updated_since to poll many."""
    return _list(svc, user, indexing.SUBMIT, status, ids, updated_since, cursor, limit)


@router.get(
    "/index-submit/jobs/{job_id}/report",
    operation_id="get_index_submit_report",
    response_model=reports.ReportPage,
    responses=reports.CSV_RESPONSE,
)
def report_submit(
    job_id: JobId,
    user: User,
    svc: Svc,
    cursor: SeqCursor = None,
    limit: Limit = 500,
    accept: Accept = None,
) -> Response:
    """One row per URL; JSON pages (cursor) or, with `Accept: text/csv`, the whole CSV."""
    job = _job(svc, user, indexing.SUBMIT, job_id)
    return reports.respond(svc, user, job, cursor, limit, accept)


@router.post(
    "/index-submit/jobs/{job_id}/cancel",
    response_model=SubmitStatus,
    operation_id="cancel_index_submit_job",
    responses=problems.CANCEL_RESPONSES,
)
def cancel_submit(job_id: JobId, user: User, svc: Svc) -> dict[str, Any]:
    """Stop a submission (and its pending follow-up check): it ends `failed`/`cancelled`.

    Cancelling it again answers the same; a job that ended otherwise answers 409."""
    _job(svc, user, indexing.SUBMIT, job_id)
    return _body(svc, svc.jobs.cancel(user, job_id))


# -- index-check --------------------------------------------------------------------------------


@router.post(
    "/index-check/jobs",
    status_code=202,
    response_model=CheckStatus,
    operation_id="create_index_check_job",
)
def create_check(body: CheckRequest, request: Request, user: User, svc: Svc) -> Response:
    """Check whether URLs are indexed. Answers 202 at once; poll the Location."""
    return _create(request, svc, user, indexing.CHECK, body, "index-check")


@router.get("/index-check/jobs", response_model=CheckList, operation_id="list_index_check_jobs")
def list_check(
    user: User,
    svc: Svc,
    status: StatusFilter = None,
    ids: IdsFilter = None,
    updated_since: Since = None,
    cursor: Cursor = None,
    limit: Limit = 100,
) -> dict[str, Any]:
    """Check jobs, newest first; filter by status, ids or updated_since to poll many."""
    return _list(svc, user, indexing.CHECK, status, ids, updated_since, cursor, limit)


@router.get(
    "/index-check/jobs/{job_id}/report",
    operation_id="get_index_check_report",
    response_model=reports.ReportPage,
    responses=reports.CSV_RESPONSE,
)
def report_check(
    job_id: JobId,
    user: User,
    svc: Svc,
    cursor: SeqCursor = None,
    limit: Limit = 500,
    accept: Accept = None,
) -> Response:
    """One row per URL with its verdict and indexability diagnostics; JSON pages or CSV."""
    job = _job(svc, user, indexing.CHECK, job_id)
    return reports.respond(svc, user, job, cursor, limit, accept)


@router.post(
    "/index-check/jobs/{job_id}/cancel",
    response_model=CheckStatus,
    operation_id="cancel_index_check_job",
    responses=problems.CANCEL_RESPONSES,
)
def cancel_check(job_id: JobId, user: User, svc: Svc) -> dict[str, Any]:
    """Stop a check: it ends `failed` with code `cancelled`.

    Cancelling it again answers the same; a job that ended otherwise answers 409."""
    _job(svc, user, indexing.CHECK, job_id)
    return _body(svc, svc.jobs.cancel(user, job_id))


@router.get("/usage", response_model=Usage, operation_id="get_usage")
def usage(user: User, svc: Svc) -> dict[str, Any]:
    """Today's URL quota use (UTC day) and when it resets."""
    return {name: quota.as_dict() for name, quota in svc.quotas.usage(user).items()}
