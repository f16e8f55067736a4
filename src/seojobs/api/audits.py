"""Site audits: the check catalogue, starting an audit, and the project's latest summary.

An audit is an ordinary ``site_audit`` job (``POST /v1/projects/{id}/audits`` starts the
same job as ``POST /v1/projects/{id}/jobs`` with that type); reads serve what the last
completed audit collected and never start one.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, Field

from seojobs.api import problems
from seojobs.api.deps import Svc, User
from seojobs.api.ids import parse_cursor
from seojobs.api.inputs import CheckedRoute
from seojobs.api.problems import Problem
from seojobs.api.projects import ProjectId, start_job
from seojobs.api.projects_models import JobData, JobIn
from seojobs.api.reports import MAX_SEQ
from seojobs.api.results import CollectedData, CollectedPage, collection_body
from seojobs.api.v1 import Cursor, JobId, Limit, SeqCursor
from seojobs.kinds import site_audit
from seojobs.services import Services
from seojobs.store.records import JobRecord, UserRecord
from seojobs.timefmt import rfc3339_or_none

router = APIRouter(
    prefix="/v1", tags=["audits"], responses=problems.RESPONSES, route_class=CheckedRoute
)


class Threshold(BaseModel):
    name: str = Field(description="Its field in the params' `thresholds`.")
    default: int


class AuditCheck(BaseModel):
    code: str
    severity: str = Field(description="`error`, `warning` or `notice`.")
    scope: str = Field(description="`page`: one page's; `site`: over every page, after the crawl.")
    description: str
    threshold: Threshold | None


class AuditCheckList(BaseModel):
    data: list[AuditCheck]


@router.get("/audit-checks", response_model=AuditCheckList, operation_id="list_audit_checks")
def audit_checks(user: User) -> Response:
    """Every check a site audit runs: its code, severity, description and threshold."""
    return JSONResponse({"data": site_audit.catalogue()})


@router.post(
    "/projects/{project_id}/audits",
    status_code=202,
    response_model=JobData,
    operation_id="start_site_audit",
)
def start_audit(
    project_id: ProjectId,
    request: Request,
    user: User,
    svc: Svc,
    params: site_audit.SiteAuditParams,
) -> Response:
    """Start a site audit: the same job as `POST /v1/projects/{id}/jobs` with type
    `site_audit` and these params. Answers 202 at once; poll the Location (`/v1/jobs/{id}`)."""
    body = JobIn(type=site_audit.NAME, params=params.model_dump(exclude_unset=True))
    return start_job(svc, user, project_id, body, request, params_at=None)


@router.get(
    "/projects/{project_id}/audits",
    response_model=CollectedPage,
    operation_id="list_audits",
)
def list_audits(
    project_id: ProjectId, user: User, svc: Svc, cursor: Cursor = None, limit: Limit = 100
) -> Response:
    """The project's completed audits, newest first, each with its summary (as `latest`)."""
    found = svc.collection_history(
        user, project_id, site_audit.NAME, before_id=parse_cursor(cursor), limit=limit + 1
    )
    page = found[:limit]
    more = str(page[-1].id) if len(found) > limit else None
    return JSONResponse({"data": [collection_body(c) for c in page], "next_cursor": more})


@router.get(
    "/projects/{project_id}/audits/latest",
    response_model=CollectedData,
    operation_id="get_latest_audit",
)
def latest_audit(project_id: ProjectId, user: User, svc: Svc) -> Response:
    """The summary of the project's last completed audit (pages crawled, issues by severity
    and code, health score), with its `job_id` and `collected_at`. Never starts an audit:
    404 until one has completed."""
    found = svc.collected(user, project_id, site_audit.NAME)
    return JSONResponse({"data": collection_body(found)})


class Issue(BaseModel):
    id: int = Field(description="Also the cursor.")
    code: str = Field(description="A code of GET /v1/audit-checks.")
    severity: str
    url: str
    evidence: dict[str, Any] | None


class IssuePage(BaseModel):
    job_id: int
    collected_at: str | None
    data: list[Issue]
    next_cursor: str | None


class AuditPage(BaseModel):
    job_id: int
    collected_at: str | None
    data: list[dict[str, Any]] = Field(
        description="One crawled page each: url, status, depth, response_ms, title, "
        "description, h1, canonical, indexable, indexability_reason, words, content_hash, "
        "out_links, issues, ... (and `seq`, the cursor)."
    )
    next_cursor: str | None


def _audit(svc: Services, user: UserRecord, project_id: int, job_id: int) -> JobRecord:
    """A completed audit of the project: what the reads of one audit serve (404 otherwise,
    whichever way it is not: nothing collected is nothing to read)."""
    svc.project(user, project_id)
    job = svc.job(user, job_id, summary=True)
    if job.project_id != project_id or job.kind != site_audit.NAME or job.state != "completed":
        detail = f"no completed site audit {job_id} in project {project_id}"
        raise Problem(404, "Not found", detail, code="not_found")
    return job


Severity = Annotated[Literal["error", "warning", "notice"] | None, Query(description="Only these.")]
Code = Annotated[str | None, Query(max_length=100, description="Only this check's issues.")]


@router.get(
    "/projects/{project_id}/audits/{job_id}/issues",
    response_model=IssuePage,
    operation_id="list_audit_issues",
)
def audit_issues(
    project_id: ProjectId,
    job_id: JobId,
    user: User,
    svc: Svc,
    code: Code = None,
    severity: Severity = None,
    cursor: Cursor = None,
    limit: Limit = 100,
) -> Response:
    """The issues a completed audit found, in the order found (filter by `code`,
    `severity`)."""
    after = parse_cursor(cursor) or 0  # the request is checked before anything is read
    job = _audit(svc, user, project_id, job_id)
    found = svc.findings(
        user, job_id, code=code, severity=severity, after_id=after, limit=limit + 1
    )
    page = found[:limit]
    data = [
        {
            "id": f.id,
            "code": f.code,
            "severity": f.severity,
            "url": (f.data or {}).get("url"),
            "evidence": (f.data or {}).get("evidence"),
        }
        for f in page
    ]
    more = str(page[-1].id) if len(found) > limit else None
    return JSONResponse(_listing(job, data, more))


@router.get(
    "/projects/{project_id}/audits/{job_id}/pages",
    response_model=AuditPage,
    operation_id="list_audit_pages",
)
def audit_pages(
    project_id: ProjectId,
    job_id: JobId,
    user: User,
    svc: Svc,
    cursor: SeqCursor = None,
    limit: Limit = 100,
) -> Response:
    """The pages a completed audit recorded, in the order they were found."""
    after = parse_cursor(cursor, lo=0, hi=MAX_SEQ)  # checked before anything is read
    job = _audit(svc, user, project_id, job_id)
    found = svc.items(user, job_id, after_seq=-1 if after is None else after, limit=limit + 1)
    page = found[:limit]
    data = [{"seq": item.seq, **(item.result or {})} for item in page]
    more = str(page[-1].seq) if len(found) > limit else None
    return JSONResponse(_listing(job, data, more))


def _listing(job: JobRecord, data: list[dict[str, Any]], more: str | None) -> dict[str, Any]:
    collected = rfc3339_or_none(job.completed_at)
    return {"job_id": job.id, "collected_at": collected, "data": data, "next_cursor": more}
