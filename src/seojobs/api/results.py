"""Generic reads of what jobs produced, for every job type: a job's items (JSON pages or
CSV), its findings, and the data a kind collected for a project. Reads never start work."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Any

from fastapi import APIRouter, Header, Path, Query
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, Field

from seojobs import csvfile
from seojobs.api import problems
from seojobs.api.deps import Svc, User
from seojobs.api.ids import MAX_ID, IdDigits, parse_cursor
from seojobs.api.inputs import CheckedRoute
from seojobs.api.paging import by_id, by_seq, paged
from seojobs.api.reports import CSV_RESPONSE, MAX_SEQ, cell, item_status, report_columns
from seojobs.api.v1 import Cursor, JobId, Limit, SeqCursor
from seojobs.reads import CollectedData, CollectedPage, collection_row
from seojobs.records import FindingRecord, ItemRecord, JobRecord, UserRecord
from seojobs.services import Services
from seojobs.timefmt import rfc3339_or_none

router = APIRouter(
    prefix="/v1", tags=["results"], responses=problems.RESPONSES, route_class=CheckedRoute
)

PAGE = 500
ProjectId = Annotated[int, Path(ge=1, le=MAX_ID, description="The project's id."), IdDigits]
TypeName = Annotated[str, Path(max_length=100, description="A job type, as /v1/job-types names.")]
Outcome = Annotated[
    list[str] | None,
    Query(max_length=50, description="Only items with these outcomes (repeat the parameter)."),
]
Subject = Annotated[
    str | None, Query(max_length=500, description="What the data is about (a domain, a URL).")
]


class ItemError(BaseModel):
    code: str
    message: str | None


class Item(BaseModel):
    seq: int = Field(description="The item's place in the job; also the cursor.")
    input: Any = Field(description="A string (a URL) or a structured item (an object).")
    status: str = Field(
        description="The outcome (`indexed`, `crawled`, ...), `failed`, `pending`, or `not_run` "
        "for items of a job that ended before running them."
    )
    result: dict[str, Any] | None
    error: ItemError | None
    finished_at: str | None


class ItemPage(BaseModel):
    data: list[Item]
    next_cursor: str | None


class FindingCount(BaseModel):
    code: str
    severity: str
    count: int


class FindingSummary(BaseModel):
    data: list[FindingCount]


class FindingOut(BaseModel):
    id: int
    item_id: int | None
    code: str
    severity: str
    data: dict[str, Any] | None
    created_at: str


class FindingPage(BaseModel):
    data: list[FindingOut]
    next_cursor: str | None


class QuotaOut(BaseModel):
    quota: str
    period: str = Field(description="`day` (UTC) or `month` (calendar, UTC).")
    limit: int
    used: int
    remaining: int
    resets_at: str


class UsageData(BaseModel):
    data: list[QuotaOut]


ITEM_COLUMNS = ["seq", "input", "status", "error_code", "error_message", "finished_at"]


def item_body(item: ItemRecord, job_final: bool) -> dict[str, Any]:
    return {
        "seq": item.seq,
        "input": item.data if item.data is not None else item.input,
        "status": item_status(item, job_final),
        "result": item.result,
        "error": {"code": item.error_code, "message": item.error_message}
        if item.error_code
        else None,
        "finished_at": rfc3339_or_none(item.finished_at),
    }


def finding_body(finding: FindingRecord) -> dict[str, Any]:
    return {
        "id": finding.id,
        "item_id": finding.item_id,
        "code": finding.code,
        "severity": finding.severity,
        "data": finding.data,
        "created_at": rfc3339_or_none(finding.created_at),
    }


def items_csv(
    svc: Services, user: UserRecord, job: JobRecord, outcomes: list[str] | None
) -> Iterator[str]:
    columns = report_columns(svc, job)

    def rows() -> Iterator[list[csvfile.Cell]]:
        after = -1
        while page := svc.jobs.items(user, job.id, after_seq=after, limit=PAGE, outcomes=outcomes):
            for item in page:
                values: list[csvfile.Cell] = [
                    item.seq,
                    item.input,
                    item_status(item, job.is_final),
                    item.error_code,
                    item.error_message,
                    rfc3339_or_none(item.finished_at),
                ]
                yield values + [cell(c.value(item.result)) for c in columns]
            after = page[-1].seq

    return csvfile.stream(ITEM_COLUMNS + [c.name for c in columns], rows())


def items_csv_response(
    svc: Services, user: UserRecord, job: JobRecord, outcomes: list[str] | None
) -> StreamingResponse:
    """A job's items as a CSV download (the API's and the dashboard's)."""
    headers = {"Content-Disposition": f'attachment; filename="job-{job.id}-items.csv"'}
    return StreamingResponse(
        items_csv(svc, user, job, outcomes), media_type="text/csv", headers=headers
    )


@router.get(
    "/jobs/{job_id}/items",
    operation_id="list_job_items",
    response_model=ItemPage,
    responses=CSV_RESPONSE,
)
def list_items(
    job_id: JobId,
    user: User,
    svc: Svc,
    outcome: Outcome = None,
    cursor: SeqCursor = None,
    limit: Limit = 100,
    accept: Annotated[str | None, Header()] = None,
) -> Response:
    """A job's items in order, with their outcome and result: pages of JSON, or the whole
    list as CSV (`Accept: text/csv`) with the columns the job's type declares."""
    job = svc.jobs.get(user, job_id, summary=True)  # 404 before anything else
    if accept and "text/csv" in accept.lower():
        return items_csv_response(svc, user, job, outcome)
    after = parse_cursor(cursor, lo=0, hi=MAX_SEQ)
    found = svc.jobs.items(
        user, job_id, after_seq=-1 if after is None else after, limit=limit + 1, outcomes=outcome
    )
    page, more = paged(found, limit, by_seq)
    return JSONResponse({"data": [item_body(i, job.is_final) for i in page], "next_cursor": more})


@router.get(
    "/jobs/{job_id}/findings/summary",
    operation_id="summarise_job_findings",
    response_model=FindingSummary,
)
def findings_summary(job_id: JobId, user: User, svc: Svc) -> Response:
    """How many findings of each code (and severity) a job has, most frequent first."""
    counts = svc.jobs.finding_counts(user, job_id)
    data = [{"code": c, "severity": s, "count": n} for c, s, n in counts]
    return JSONResponse({"data": data})


@router.get("/jobs/{job_id}/findings", operation_id="list_job_findings", response_model=FindingPage)
def list_findings(
    job_id: JobId,
    user: User,
    svc: Svc,
    code: Annotated[str | None, Query(max_length=100, description="Only this code.")] = None,
    cursor: Cursor = None,
    limit: Limit = 100,
) -> Response:
    """A job's findings, oldest first (all of one code with `code`)."""
    after = parse_cursor(cursor) or 0
    found = svc.jobs.findings(user, job_id, code=code, after_id=after, limit=limit + 1)
    page, more = paged(found, limit, by_id)
    return JSONResponse({"data": [finding_body(f) for f in page], "next_cursor": more})


@router.get(
    "/projects/{project_id}/data/{type}",
    operation_id="get_collected_data",
    response_model=CollectedData,
)
def collected(
    project_id: ProjectId, type: TypeName, user: User, svc: Svc, subject: Subject = None
) -> Response:
    """What jobs of `type` last collected in the project (about `subject`, if given), with
    the `job_id` and `collected_at` of that collection. Never starts a job: 404 until one has
    completed."""
    return JSONResponse(
        {"data": collection_row(svc.collections.latest(user, project_id, type, subject))}
    )


@router.get(
    "/projects/{project_id}/data/{type}/history",
    operation_id="list_collected_data",
    response_model=CollectedPage,
)
def collected_history(
    project_id: ProjectId,
    type: TypeName,
    user: User,
    svc: Svc,
    subject: Subject = None,
    cursor: Cursor = None,
    limit: Limit = 100,
) -> Response:
    """Every completed collection (of one subject, if given), newest first."""
    before = parse_cursor(cursor)
    found = svc.collections.history(
        user, project_id, type, subject, before_id=before, limit=limit + 1
    )
    page, more = paged(found, limit, by_id)
    return JSONResponse({"data": [collection_row(c) for c in page], "next_cursor": more})


@router.get("/usage", operation_id="get_quota_usage", response_model=UsageData)
def quota_usage(user: User, svc: Svc) -> Response:
    """Every quota this server's job types charge: your limit, what you used this period,
    and when it resets (daily quotas at 00:00 UTC, monthly ones on the 1st)."""
    data = [
        {"quota": name, "period": use.period, **use.as_dict()}
        for name, use in sorted(svc.quotas.usage(user).items())
    ]
    return JSONResponse({"data": data})
