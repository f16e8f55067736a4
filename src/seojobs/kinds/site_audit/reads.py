"""Site audit reads of what the audits collected: the project's completed audits, newest
first, each with its summary, and the summary of the last one. Never start an audit.

What one audit found, its issues and its pages, is read per job
(``/v1/projects/{id}/audits/{job_id}/...``: ``JOB_READS``), as pages of JSON or every row as
CSV with ``Accept: text/csv``; how its issues changed against another audit is a declared
comparison too (``COMPARE``, ``/audits/{job_id}/compare/{other_job_id}``)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from seojobs.kinds.site_audit.params import SEVERITIES
from seojobs.reads import (
    NEWEST_FIRST,
    ChangeEvent,
    Collected,
    CollectedData,
    CollectedPage,
    ColumnMatch,
    JobCompare,
    JobFilter,
    JobRead,
    Read,
    data_of,
)
from seojobs.records import CollectionRecord

READS = (
    Read(
        "audits",
        "list_audits",
        "site_audit",
        Collected,
        response=CollectedPage,
        source="history",
        orders=NEWEST_FIRST,
        empty=(),
        description="The project's completed audits, newest first, each with its summary (as "
        "`latest`).",
        tags=("audits",),
    ),
    Read(
        "audits/latest",
        "get_latest_audit",
        "site_audit",
        Collected,
        response=CollectedData,
        source="one",
        summary="Latest Audit",
        description="The summary of the project's last completed audit (pages crawled, issues "
        "by severity and code, health score), with its `job_id` and `collected_at`. Never "
        "starts an audit: 404 until one has completed.",
        tags=("audits",),
    ),
)


# -- what one audit found -------------------------------------------------------------------

AUDIT = "audits/{job_id}"
NOUN = "completed site audit"


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


def issue_row(finding: Mapping[str, Any]) -> dict[str, Any]:
    data = finding["data"] or {}
    return {
        "id": finding["id"],
        "code": finding["code"],
        "severity": finding["severity"],
        "url": data.get("url"),
        "evidence": data.get("evidence"),
    }


ISSUE_COLUMNS = ("id", "code", "severity", "url", "evidence")


def _issue_cells(finding: Mapping[str, Any]) -> list[Any]:
    row = issue_row(finding)
    evidence = row["evidence"]
    row["evidence"] = None if evidence is None else json.dumps(evidence, ensure_ascii=False)
    return [row[name] for name in ISSUE_COLUMNS]


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
    link_score: int | None = Field(
        default=None,
        description="Internal link score, 0-100: PageRank over the crawled pages' links, "
        "the best-linked page 100, on a logarithmic scale (null in audits stored before it "
        "was computed). Sort by it with `sort=-link_score`.",
    )


class AuditPage(BaseModel):
    job_id: int
    collected_at: str | None
    data: list[AuditPageRow]
    next_cursor: str | None


_LAST = ("issues", "link_score")  # issues last, as before; link_score came later
PAGE_COLUMNS = (*(name for name in AuditPageRow.model_fields if name not in _LAST), *_LAST)


def page_row(page: Mapping[str, Any]) -> dict[str, Any]:
    return {name: page[name] for name in PAGE_COLUMNS}


def _page_cells(page: Mapping[str, Any]) -> list[Any]:
    row = page_row(page)
    row["indexable"] = "true" if page["indexable"] else "false"
    row["issues"] = " ".join(page["issues"] or ())
    return [row[name] for name in PAGE_COLUMNS]


def statuses(status: str) -> tuple[int, int]:
    """``404`` -> (404, 404); ``4xx`` -> (400, 499). The pattern checked the form."""
    if status.endswith("xx"):
        first = int(status[0]) * 100
        return first, first + 99
    return int(status), int(status)


# A whole number (up to 9 digits), a range of two, or one and more: "2", "1-3", "4+".
RANGED = r"^[0-9]{1,9}(?:-[0-9]{1,9}|\+)?$"
MOST = 2**31 - 1


def ranged(text: str) -> tuple[int, int]:
    """``2`` -> (2, 2); ``1-3`` -> (1, 3); ``4+`` -> (4, MOST). The pattern checked the form."""
    if text.endswith("+"):
        return int(text[:-1]), MOST
    low, _, high = text.partition("-")
    return int(low), int(high or low)


ISSUES = JobRead(
    AUDIT + "/issues",
    "list_audit_issues",
    "site_audit",
    NOUN,
    table="findings",
    key="id",
    row=Issue,
    response=IssuePage,
    to_row=issue_row,
    filters=(
        JobFilter("code", str, "Only this check's issues.", ColumnMatch("code"), max_length=100),
        JobFilter(
            "severity",
            Literal["error", "warning", "notice"],
            "Only these.",
            ColumnMatch("severity"),
        ),
    ),
    csv=ISSUE_COLUMNS,
    csv_cells=_issue_cells,
    csv_name="audit-{job_id}-issues.csv",
    summary="Audit Issues",
    description="The issues a completed audit found, in the order found (filter by "
    "`code`,\n`severity`): pages of JSON, or every one as CSV with `Accept: text/csv`.",
    tags=("audits",),
)
PAGES = JobRead(
    AUDIT + "/pages",
    "list_audit_pages",
    "site_audit",
    NOUN,
    table="audit_pages",
    key="seq",
    row=AuditPageRow,
    response=AuditPage,
    to_row=page_row,
    filters=(
        JobFilter(
            "status",
            str,
            "Only pages whose last answer (redirects followed) had this HTTP status "
            "(`404`) or one of this class (`4xx`). Pages that gave no answer "
            "(unreachable, blocked by robots.txt) match none.",
            ColumnMatch("status", "between"),
            prepare=statuses,
            pattern=r"^[1-5](?:[0-9]{2}|xx)$",
        ),
        JobFilter(
            "indexable",
            bool,
            "Only indexable pages, or only the others.",
            ColumnMatch("indexable", "is"),
        ),
        JobFilter(
            "depth",
            str,
            "Only pages this many clicks from the start URL: `2`, a range `1-3`, or at least "
            "`4+`. Pages only a sitemap lists match none.",
            ColumnMatch("depth", "between"),
            prepare=ranged,
            max_length=21,
            pattern=RANGED,
        ),
        JobFilter(
            "in_links",
            str,
            "Only pages with this many in-links: `0` (orphans), a range `1-5`, or at least `10+`.",
            ColumnMatch("in_links", "between"),
            prepare=ranged,
            max_length=21,
            pattern=RANGED,
        ),
    ),
    csv=PAGE_COLUMNS,
    csv_cells=_page_cells,
    csv_name="audit-{job_id}-pages.csv",
    sorts=("link_score", "in_links", "depth", "response_ms", "words"),
    summary="Audit Pages",
    description="The pages a completed audit recorded, in the order they were found, "
    "with their\nin-link counts (filter by `status`, `indexable`): pages of JSON, or "
    "every one as CSV with\n`Accept: text/csv`.",
    tags=("audits",),
)


# -- how one audit's issues changed against another's -----------------------------------------


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


COMPARE = JobCompare(
    AUDIT + "/compare/{other_job_id}",
    "compare_audits",
    "site_audit",
    NOUN,
    response=Comparison,
    pair="url",
    listed="issues",
    other_description="The audit compared with (usually an earlier one).",
    code_description="Only this check's issues.",
    description="How the issues of audit `job_id` differ from those of audit `other_job_id` "
    "(both\ncompleted audits of the project), an issue being its (code, url): how many are "
    "new, fixed\nand unchanged, in all and per code, and a page of those of one `change` (of "
    "one\n`code`, if given; the counts are always of every issue).",
    tags=("audits",),
)
JOB_READS = (ISSUES, PAGES, COMPARE)


# -- what changed (webhooks: audit.issues_new) -----------------------------------------------


class AuditFilters(BaseModel):
    """An endpoint's conditions on ``audit.issues_new``."""

    model_config = ConfigDict(extra="forbid")

    severity: Literal["error", "warning", "notice"] = Field(
        default="notice", description="Only when issues of this severity or worse are new."
    )


def _counts(found: CollectionRecord) -> dict[str, int]:
    by_code = data_of(found).get("issues_by_code")
    if not isinstance(by_code, dict):
        return {}
    return {str(code): n for code, n in by_code.items() if isinstance(n, int)}


def issues_new(before: CollectionRecord | None, after: CollectionRecord) -> dict[str, Any] | None:
    """Codes with more issues than the previous audit of the site found (new codes, or more
    of one), errors first: ``issues`` lists each code's severity, how many are new (``new``,
    the count's rise) and the counts ``before`` and ``after``; ``new_by_severity`` sums them."""
    if before is None:
        return None
    from seojobs.kinds.site_audit.checks import SEVERITY  # the rules': a worker's, after an audit

    was, now = _counts(before), _counts(after)
    rank = {severity: i for i, severity in enumerate(SEVERITIES)}
    issues: list[dict[str, Any]] = [
        {
            "code": code,
            "severity": SEVERITY.get(code, "notice"),
            "new": n - was.get(code, 0),
            "before": was.get(code, 0),
            "after": n,
        }
        for code, n in now.items()
        if n > was.get(code, 0)
    ]
    if not issues:
        return None
    issues.sort(key=lambda i: (rank.get(i["severity"], len(rank)), -i["new"], i["code"]))
    totals: dict[str, int] = {severity: 0 for severity in SEVERITIES}
    for issue in issues:
        totals[issue["severity"]] = totals.get(issue["severity"], 0) + issue["new"]
    return {"issues": issues, "new_by_severity": totals}


def worse_than(filters: AuditFilters, data: Mapping[str, Any]) -> bool:
    allowed = SEVERITIES[: SEVERITIES.index(filters.severity) + 1]
    return any(issue["severity"] in allowed for issue in data["issues"])


CHANGES = (
    ChangeEvent(
        "audit.issues_new",
        "site_audit",
        issues_new,
        filters=AuditFilters,
        matches=worse_than,
        description=issues_new.__doc__ or "",
    ),
)
