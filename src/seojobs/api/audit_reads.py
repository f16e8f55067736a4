"""What one completed audit found: its issues and pages (pages of JSON, or CSV streamed with
``Accept: text/csv``), and how its issues changed against another audit of the project.

Every read checks its input first (422 naming the field), then looks the audit up (404 when
it is not a completed site audit of the project), and never starts work.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterator
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Header, Path, Query
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, Field

from seojobs import csvfile
from seojobs.api import problems
from seojobs.api.deps import Svc, User
from seojobs.api.ids import MAX_ID, IdDigits, parse_cursor
from seojobs.api.inputs import CheckedRoute
from seojobs.api.paging import by_id, by_seq, paged
from seojobs.api.projects import ProjectId
from seojobs.api.reports import CSV_RESPONSE, MAX_SEQ
from seojobs.api.v1 import Cursor, JobId, Limit, SeqCursor
from seojobs.kinds.site_audit.pagetable import AuditPageRecord
from seojobs.records import FindingRecord
from seojobs.services.audits import Audit
from seojobs.timefmt import rfc3339_or_none

router = APIRouter(
    prefix="/v1", tags=["audits"], responses=problems.RESPONSES, route_class=CheckedRoute
)
CSV_PAGE = 500
AUDIT = "/projects/{project_id}/audits/{job_id}"

Severity = Annotated[Literal["error", "warning", "notice"] | None, Query(description="Only these.")]
Code = Annotated[str | None, Query(max_length=100, description="Only this check's issues.")]
StatusFilter = Annotated[
    str | None,
    Query(
        pattern=r"^[1-5](?:[0-9]{2}|xx)$",
        description="Only pages whose last answer (redirects followed) had this HTTP status "
        "(`404`) or one of this class (`4xx`). Pages that gave no answer (unreachable, blocked "
        "by robots.txt) match none.",
    ),
]
Indexable = Annotated[bool | None, Query(description="Only indexable pages, or only the others.")]
OtherJobId = Annotated[
    int,
    Path(ge=1, le=MAX_ID, description="The audit compared with (usually an earlier one)."),
    IdDigits,
]
Change = Annotated[
    Literal["new", "fixed", "unchanged"],
    Query(
        description="Which issues to list: `new` (found by job_id only), `fixed` (by "
        "other_job_id only) or `unchanged` (by both)."
    ),
]
Accept = Annotated[str | None, Header()]


class Issue(BaseModel):
    id: int = Field(description="Also the cursor.")
    code: str = Field(description="A code of GET /v1/audit-checks.")
    severity: str
    url: str | None
    evidence: dict[str, Any] | None


class IssuePage(BaseModel):
    job_id: int
    collected_at: str | None
    data: list[Issue]
    next_cursor: str | None


class AuditPageRow(BaseModel):
    seq: int = Field(description="The order the page was found in; also the cursor.")
    url: str
    final_url: str | None
    status: int | None = Field(
        description="The last answer's, redirects followed (`redirects` counts them); null: "
        "no answer, or blocked by robots.txt."
    )
    depth: int | None = Field(
        description="Clicks from the start URL; null: only a sitemap lists it."
    )
    response_ms: int | None
    redirects: int | None
    content_type: str | None
    title: str | None
    description: str | None
    h1: str | None = Field(description="The first h1.")
    canonical: str | None
    indexable: bool
    indexability_reason: str | None = Field(
        description="Why not indexable: `blocked_by_robots`, `unreachable`, `redirected`, "
        "`client_error`, `server_error`, `non_html`, `noindex`, `canonicalised`."
    )
    words: int | None
    content_hash: str | None
    in_links: int = Field(description="Crawled pages linking to it (each counted once).")
    out_links: int = Field(description="Internal links on it.")
    external_links: int
    issues: list[str] | None = Field(description="The codes of the page's own issues.")


class AuditPage(BaseModel):
    job_id: int
    collected_at: str | None
    data: list[AuditPageRow]
    next_cursor: str | None


class ChangeCounts(BaseModel):
    new: int
    fixed: int
    unchanged: int


class CodeChanges(ChangeCounts):
    code: str
    severity: str


class ChangedIssue(BaseModel):
    id: int = Field(
        description="The first finding of the pair (of other_job_id's when fixed); also the cursor."
    )
    code: str
    severity: str
    url: str | None


class ComparisonData(BaseModel):
    counts: ChangeCounts = Field(description="Issues counted by (code, url).")
    by_code: list[CodeChanges]
    change: str
    issues: list[ChangedIssue] = Field(description="A page of the issues of `change`.")


class Comparison(BaseModel):
    job_id: int
    collected_at: str | None
    other_job_id: int
    other_collected_at: str | None
    data: ComparisonData
    next_cursor: str | None


def _listing(audit: Audit, data: list[dict[str, Any]], more: str | None) -> dict[str, Any]:
    collected = rfc3339_or_none(audit.collected_at)
    return {"job_id": audit.id, "collected_at": collected, "data": data, "next_cursor": more}


def _wants_csv(accept: str | None) -> bool:
    return accept is not None and "text/csv" in accept.lower()


def _csv(name: str, columns: list[str], rows: Iterator[list[csvfile.Cell]]) -> Response:
    return StreamingResponse(
        csvfile.lines(columns, rows),
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="{name}"'},
    )


def _all(read: Callable[[int], list[Any]], key: Callable[[Any], int], start: int) -> Iterator[Any]:
    """Every row of a list, read a page at a time (``read(after)``)."""
    after = start
    while page := read(after):
        yield from page
        after = key(page[-1])


# -- issues ---------------------------------------------------------------------------------

ISSUE_COLUMNS = ["id", "code", "severity", "url", "evidence"]


def issue_body(finding: FindingRecord) -> dict[str, Any]:
    data = finding.data or {}
    return {
        "id": finding.id,
        "code": finding.code,
        "severity": finding.severity,
        "url": data.get("url"),
        "evidence": data.get("evidence"),
    }


def _issue_cells(finding: FindingRecord) -> list[csvfile.Cell]:
    body = issue_body(finding)
    evidence = body["evidence"]
    shown = None if evidence is None else json.dumps(evidence, ensure_ascii=False)
    return [body["id"], body["code"], body["severity"], body["url"], shown]


@router.get(
    AUDIT + "/issues",
    response_model=IssuePage,
    responses=CSV_RESPONSE,
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
    accept: Accept = None,
) -> Response:
    """The issues a completed audit found, in the order found (filter by `code`,
    `severity`): pages of JSON, or every one as CSV with `Accept: text/csv`."""
    after = parse_cursor(cursor) or 0  # the request is checked before anything is read
    job = svc.audits.get(user, project_id, job_id)

    def read(after: int, limit: int = limit + 1) -> list[FindingRecord]:
        return svc.jobs.findings(
            user, job_id, code=code, severity=severity, after_id=after, limit=limit
        )

    if _wants_csv(accept):
        rows = (_issue_cells(f) for f in _all(lambda a: read(a, CSV_PAGE), by_id, after))
        return _csv(f"audit-{job_id}-issues.csv", ISSUE_COLUMNS, rows)
    page, more = paged(read(after), limit, by_id)
    return JSONResponse(_listing(job, [issue_body(f) for f in page], more))


# -- pages ----------------------------------------------------------------------------------

PAGE_COLUMNS = [name for name in AuditPageRow.model_fields if name != "issues"] + ["issues"]


def page_body(page: AuditPageRecord) -> dict[str, Any]:
    return {name: getattr(page, name) for name in PAGE_COLUMNS}


def _page_cells(page: AuditPageRecord) -> list[csvfile.Cell]:
    body = page_body(page)
    body["indexable"] = "true" if page.indexable else "false"
    body["issues"] = " ".join(page.issues or ())
    return [body[name] for name in PAGE_COLUMNS]


def statuses(status: str | None) -> tuple[int, int] | None:
    """``404`` -> (404, 404); ``4xx`` -> (400, 499). The pattern checked the form."""
    if status is None:
        return None
    if status.endswith("xx"):
        first = int(status[0]) * 100
        return first, first + 99
    return int(status), int(status)


@router.get(
    AUDIT + "/pages",
    response_model=AuditPage,
    responses=CSV_RESPONSE,
    operation_id="list_audit_pages",
)
def audit_pages(
    project_id: ProjectId,
    job_id: JobId,
    user: User,
    svc: Svc,
    status: StatusFilter = None,
    indexable: Indexable = None,
    cursor: SeqCursor = None,
    limit: Limit = 100,
    accept: Accept = None,
) -> Response:
    """The pages a completed audit recorded, in the order they were found, with their
    in-link counts (filter by `status`, `indexable`): pages of JSON, or every one as CSV with
    `Accept: text/csv`."""
    after = parse_cursor(cursor, lo=0, hi=MAX_SEQ)  # checked before anything is read
    start = -1 if after is None else after
    wanted = statuses(status)

    def read(after: int, limit: int = limit + 1) -> tuple[Audit, list[AuditPageRecord]]:
        return svc.audits.pages(
            user,
            project_id,
            job_id,
            statuses=wanted,
            indexable=indexable,
            after_seq=after,
            limit=limit,
        )

    job, found = read(start)  # 404 here, before a CSV response starts
    if _wants_csv(accept):
        rows = (_page_cells(p) for p in _all(lambda a: read(a, CSV_PAGE)[1], by_seq, start))
        return _csv(f"audit-{job_id}-pages.csv", PAGE_COLUMNS, rows)
    page, more = paged(found, limit, by_seq)
    return JSONResponse(_listing(job, [page_body(p) for p in page], more))


# -- compare --------------------------------------------------------------------------------


@router.get(
    AUDIT + "/compare/{other_job_id}",
    response_model=Comparison,
    operation_id="compare_audits",
)
def compare_audits(
    project_id: ProjectId,
    job_id: JobId,
    other_job_id: OtherJobId,
    user: User,
    svc: Svc,
    change: Change = "new",
    code: Code = None,
    cursor: Cursor = None,
    limit: Limit = 100,
) -> Response:
    """How the issues of audit `job_id` differ from those of audit `other_job_id` (both
    completed audits of the project), an issue being its (code, url): how many are new, fixed
    and unchanged, in all and per code, and a page of those of one `change` (of one
    `code`, if given; the counts are always of every issue)."""
    after = parse_cursor(cursor) or 0
    found = svc.audits.compare(
        user,
        project_id,
        job_id,
        other_job_id,
        change=change,
        code=code,
        after_id=after,
        limit=limit + 1,
    )
    page, more = paged(found.found, limit, by_id)
    by_code = [dataclasses.asdict(c) for c in found.counts]
    totals = {
        "new": sum(c.new for c in found.counts),
        "fixed": sum(c.fixed for c in found.counts),
        "unchanged": sum(c.unchanged for c in found.counts),
    }
    issues = [{"id": f.id, "code": f.code, "severity": f.severity, "url": f.url} for f in page]
    return JSONResponse(
        {
            "job_id": found.audit.id,
            "collected_at": rfc3339_or_none(found.audit.collected_at),
            "other_job_id": found.other.id,
            "other_collected_at": rfc3339_or_none(found.other.collected_at),
            "data": {"counts": totals, "by_code": by_code, "change": change, "issues": issues},
            "next_cursor": more,
        }
    )
