"""How one completed audit's issues changed against another audit of the project: counts
new, fixed and unchanged, in all and per code, and a page of those of one change.

Not a declared read (``seojobs.kinds.site_audit.reads`` declares an audit's issues and pages):
it is a diff of two jobs, counted over both, not a page of one job's rows. It checks its input
first (422 naming the field), then looks both audits up (404 unless each is a completed site
audit of the project), and never starts work.
"""

from __future__ import annotations

import dataclasses
from typing import Annotated, Literal

from fastapi import APIRouter, Path, Query
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, Field

from seojobs.api import problems
from seojobs.api.deps import Svc, User
from seojobs.api.ids import MAX_ID, IdDigits, parse_cursor
from seojobs.api.inputs import CheckedRoute
from seojobs.api.paging import by_id, paged
from seojobs.api.projects import ProjectId
from seojobs.api.v1 import Cursor, JobId, Limit
from seojobs.timefmt import rfc3339_or_none

router = APIRouter(
    prefix="/v1", tags=["audits"], responses=problems.RESPONSES, route_class=CheckedRoute
)
AUDIT = "/projects/{project_id}/audits/{job_id}"

Code = Annotated[str | None, Query(max_length=100, description="Only this check's issues.")]
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
