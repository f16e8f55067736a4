"""A kind's view of one completed job (``Kind.view.job``, :class:`seojobs.engine.views.JobView`):
the sections it declares, each read through the reads the kind declares and the services
(``seojobs.services.reads``, ``services.audits``), rendered here. Every page is a read: none
starts a job. Another user's job is the 404 page, as everywhere in the dashboard.

- ``/dashboard/jobs/{id}/view``: the score, large, with its trend over the project's jobs of
  the kind (an SVG and the same values as a table); the findings grouped by severity with
  their counts and one-line explanations; new and fixed against the previous job;
- ``.../view/issues/{code}``: the rows one code affects, with the evidence, in keyset pages,
  and the same CSV the API gives (``.../view/issues.csv?code=``);
- ``.../view/pages``: the job's pages (filters as the declared read's), each opening
  ``.../view/pages/{seq}``: that page and its issues; ``.../view/pages.csv``: the same
  filters' pages as the API's CSV;
- ``.../view/changes``: the new or fixed issues against the previous job, paged.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, Final, Literal
from urllib.parse import urlencode

from fastapi import APIRouter, Depends, Path, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import Response

from seojobs.api.dashboard import tables
from seojobs.api.dashboard.auth import DashboardError, one_read, services_of
from seojobs.api.dashboard.charts import line_chart
from seojobs.api.dashboard.render import page
from seojobs.api.dashboard.routes import Signed
from seojobs.api.ids import MAX_ID, whole_number
from seojobs.api.inputs import CheckedRoute
from seojobs.api.reads import job_read_csv
from seojobs.api.reports import MAX_SEQ
from seojobs.api.v1 import JobId
from seojobs.engine.registry import Kind
from seojobs.engine.views import Collected, JobView
from seojobs.reads import JobRead, Read
from seojobs.records import CollectionRecord, JobRecord, ProjectRecord, UserRecord
from seojobs.services import NotFound, Services
from seojobs.services import reads as read_svc

router = APIRouter(route_class=CheckedRoute, include_in_schema=False)
PAGE: Final = 50
TREND: Final = 12  # audits on the trend chart, this one and those before it
SEVERITIES: Final = ("error", "warning", "notice")
EVIDENCE_CHARS: Final = 300
Code = Annotated[str, Path(max_length=100, pattern=r"^[a-z0-9_]+$")]
CodeQuery = Annotated[str, Query(max_length=100, pattern=r"^[a-z0-9_]+$")]
Seq = Annotated[int, Path(ge=0, le=MAX_SEQ)]
Text = Annotated[str, Query(max_length=100)]
Subject = Annotated[str, Query(max_length=500)]
MAX_COLLECTIONS: Final = 5_000  # collections of one job a view reads


@dataclass(frozen=True)
class Opened:
    """A completed job of the user's whose kind declares a job view."""

    job: JobRecord
    kind: Kind[Any]
    view: JobView
    project: ProjectRecord

    @property
    def base(self) -> str:
        return f"/dashboard/jobs/{self.job.id}/view"

    def job_read(self, operation_id: str | None) -> JobRead:
        found = next(
            (
                r
                for r in self.kind.job_reads
                if isinstance(r, JobRead) and r.operation_id == operation_id
            ),
            None,
        )
        if found is None:
            raise NotFound(f"a view of job {self.job.id}")
        return found

    def rows(
        self,
        services: Services,
        user: UserRecord,
        read: JobRead,
        values: dict[str, Any],
        after: int,
    ) -> read_svc.JobRows:
        """A page of ``read`` of this job after ``after``, and one more row if there is."""
        return read_svc.job_rows(
            services, user, self.project.id, self.job.id, read, values, after=after, limit=PAGE + 1
        )

    def read(self, operation_id: str | None) -> Read:
        found = next((r for r in self.kind.reads if r.operation_id == operation_id), None)
        if found is None:
            raise NotFound(f"a view of job {self.job.id}")
        return found


def has_view(services: Services, job: JobRecord) -> bool:
    """Whether the job's page links to a view: its kind declares one and it completed."""
    return (
        job.state == "completed"
        and job.kind in services.registry
        and services.registry.get(job.kind).view.job is not None
    )


def _open(services: Services, user: UserRecord, job_id: int) -> Opened:
    # NotFound: not theirs. No params: no view shows them (the job's page does).
    job = services.jobs.get(user, job_id, params=False)
    if job.kind not in services.registry or services.registry.get(job.kind).view.job is None:
        raise NotFound(f"a view of job {job_id}")
    if job.state != "completed":
        raise DashboardError(
            404, "No results yet", f"Job {job_id} is {job.state}: its view opens once it completes."
        )
    kind = services.registry.get(job.kind)
    assert kind.view.job is not None
    return Opened(job, kind, kind.view.job, services.project(user, job.project_id))


def _after(field: str, raw: str, lo: int) -> int | None:
    if not raw:
        return None
    try:
        return whole_number(raw, lo, MAX_ID)
    except ValueError:
        raise DashboardError(
            422, "Invalid input", f"{field}: must be a whole number from {lo}"
        ) from None


def _text(value: Any) -> str:
    """A value of evidence as text: a list as its entries, an object as its named values."""
    if isinstance(value, list):
        text = ", ".join(_text(v) for v in value[:50])
    elif isinstance(value, dict):
        text = "; ".join(f"{k}: {_text(v)}" for k, v in list(value.items())[:50])
    elif isinstance(value, str):
        text = value
    else:
        text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= EVIDENCE_CHARS else text[: EVIDENCE_CHARS - 1] + "…"


def evidence(value: Any) -> list[tuple[str, str]]:
    """A finding's evidence as (name, text) lines: what the check saw, never raw JSON."""
    if value is None:
        return []
    if not isinstance(value, dict):
        return [("", _text(value))]
    return [(str(name), _text(v)) for name, v in list(value.items())[:20]]


# -- the history: the score's trend and the previous job --------------------------------------


@dataclass(frozen=True)
class History:
    this: CollectionRecord | None
    older: list[CollectionRecord]  # of the same subject, newest first, at most TREND - 1

    @property
    def previous(self) -> CollectionRecord | None:
        return next((c for c in self.older if c.job_id is not None), None)


def _history(services: Services, user: UserRecord, opened: Opened, depth: int = TREND) -> History:
    """This job's collection and up to ``depth - 1`` of the same subject before it (of the
    kind's history read), newest first: one statement."""
    if opened.view.history is None:
        return History(None, [])
    read = opened.read(opened.view.history)
    found = read_svc.job_history(
        services, user, opened.project.id, read, opened.job.id, limit=depth
    )
    if not found:
        return History(None, [])
    return History(found[0], found[1:])


def _score(opened: Opened, record: CollectionRecord) -> float | None:
    data = record.data if isinstance(record.data, dict) else {}
    value = data.get(opened.view.score or "")
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


@dataclass(frozen=True)
class Point:
    job_id: int | None
    collected_at: datetime
    score: float


def _trend(opened: Opened, history: History) -> dict[str, Any] | None:
    if history.this is None or _score(opened, history.this) is None:
        return None
    points = [
        Point(record.job_id, record.collected_at, score)
        for record in [*reversed(history.older), history.this]
        if (score := _score(opened, record)) is not None
    ]
    title = f"{opened.view.score_label} of the last {len(points)} audits of {history.this.subject}"
    chart = line_chart(
        title,
        [(f"#{p.job_id or '—'} {p.collected_at:%Y-%m-%d}", p.score) for p in points],
        opened.view.score_max,
    )
    return {"score": points[-1].score, "points": points, "chart": chart, "title": title}


# -- the view ---------------------------------------------------------------------------------


def _counts(
    services: Services, user: UserRecord, opened: Opened, record: CollectionRecord | None
) -> list[tuple[str, str, int]]:
    """``(code, severity, count)`` of a job's findings: from its collection's ``counts``
    (what the job counted as it ended) when the view names one, else counted in the store
    (a second read of every finding of a large job)."""
    data = record.data if record is not None and isinstance(record.data, dict) else {}
    by_code = data.get(opened.view.counts or "")
    if not isinstance(by_code, dict):
        job_id = record.job_id if record is not None and record.job_id else opened.job.id
        return services.jobs.finding_counts(user, job_id)
    return sorted(
        (
            (str(code), opened.view.severities.get(str(code), "notice"), n)
            for code, n in by_code.items()
            if isinstance(n, int) and not isinstance(n, bool) and n > 0
        ),
        key=lambda c: (-c[2], c[0]),
    )


def _groups(opened: Opened, counts: list[tuple[str, str, int]]) -> list[dict[str, Any]]:
    """Findings by severity (error, warning, notice, then any other), each code with its
    count and explanation, most found first."""
    by: dict[str, list[tuple[str, int]]] = {}
    for code, severity, n in counts:
        by.setdefault(severity, []).append((code, n))
    order = [s for s in SEVERITIES if s in by] + sorted(s for s in by if s not in SEVERITIES)
    return [
        {
            "severity": severity,
            "total": sum(n for _c, n in by[severity]),
            "codes": [
                {"code": code, "count": n, "about": opened.view.explanations.get(code, "")}
                for code, n in sorted(by[severity], key=lambda c: (-c[1], c[0]))
            ],
        }
        for severity in order
    ]


def _moved(
    now: list[tuple[str, str, int]], before: list[tuple[str, str, int]]
) -> list[dict[str, Any]]:
    """The codes whose count differs from the previous job's (both as each job counted its
    findings when it ended, so no finding is read): by severity, the largest move first."""
    was = {code: (severity, n) for code, severity, n in before}
    found = {code: (severity, n) for code, severity, n in now}
    rank = {s: i for i, s in enumerate(SEVERITIES)}
    moved = [
        {
            "code": code,
            "severity": (found.get(code) or was[code])[0],
            "before": was.get(code, ("", 0))[1],
            "now": found.get(code, ("", 0))[1],
        }
        for code in found.keys() | was.keys()
        if found.get(code, ("", 0))[1] != was.get(code, ("", 0))[1]
    ]
    return sorted(
        moved,
        key=lambda m: (
            rank.get(m["severity"], len(rank)),
            -abs(m["now"] - m["before"]),
            m["code"],
        ),
    )


def _collected(services: Services, user: UserRecord, opened: Opened) -> list[Collected]:
    found = services.collections.of_job(
        user, opened.project.id, opened.job.id, limit=MAX_COLLECTIONS, lowest=opened.view.lowest
    )
    return [Collected(this, previous, lowest) for this, previous, lowest in found]


def _sort(opened: Opened, sort: str, order: str) -> tuple[str, bool] | None:
    if not sort:
        return None
    keys = {c.key for t in opened.view.tables if t.sortable for c in t.columns}
    if sort not in keys:
        allowed = f"must be one of {', '.join(sorted(keys))}" if keys else "nothing here sorts"
        raise DashboardError(422, "Invalid input", f"sort: {allowed}")
    return sort, order == "desc"


def _charts(
    services: Services, user: UserRecord, opened: Opened, collected: list[Collected], subject: str
) -> list[dict[str, Any]]:
    """The chart of ``subject``'s history, or of the first few subjects the job collected."""
    chart = opened.view.chart
    if chart is None:
        return []
    if subject:
        chosen = [c for c in collected if c.this.subject == subject]
        if not chosen:
            raise NotFound(f"{subject!r} in job {opened.job.id}")
    else:
        chosen = collected[: tables.CHARTS]
    drawn = []
    for c in chosen:
        history = services.collections.history(
            user,
            opened.project.id,
            opened.kind.name,
            c.this.subject,
            before_id=c.this.id + 1,
            limit=tables.HISTORY,
        )
        label = chart.subject_label(c.this.data) if chart.subject_label else c.this.subject
        drawn.append(tables.history_chart(chart, c.this.subject, history[::-1], label))
    return drawn


@router.get("/dashboard/jobs/{job_id}/view", name="dashboard_job_view")
async def job_view(
    request: Request,
    who: Signed,
    job_id: JobId,
    sort: Text = "",
    order: Annotated[Literal["asc", "desc"], Query()] = "asc",
    subject: Subject = "",
) -> Response:
    services = services_of(request)

    def read() -> dict[str, Any]:
        opened = _open(services, who.user, job_id)
        shown_tables: list[dict[str, Any]] = []
        charts: list[dict[str, Any]] = []
        if opened.view.tables or opened.view.chart:
            collected = _collected(services, who.user, opened)
            ordered = _sort(opened, sort, order)
            shown_tables = [tables.shown(t, collected, ordered) for t in opened.view.tables]
            charts = _charts(services, who.user, opened, collected, subject)
        history = _history(services, who.user, opened)
        counts = _counts(services, who.user, opened, history.this)
        changes = None
        previous = history.previous
        if opened.view.compare and previous is not None and previous.job_id is not None:
            # The totals only: matching the two jobs' findings pair by pair costs a second
            # on a 5,000-page audit, so the exact new and fixed counts are on .../changes.
            before = _counts(services, who.user, opened, previous)
            changes = {
                "previous": previous,
                "now": sum(n for _c, _s, n in counts),
                "before": sum(n for _c, _s, n in before),
                "moved": _moved(counts, before),
            }
        return {
            "o": opened,
            "trend": _trend(opened, history) if opened.view.score else None,
            "groups": _groups(opened, counts) if opened.view.issues else [],
            "changes": changes,
            "collected": history.this,
            "tables": shown_tables,
            "charts": charts,
            "sorted": (sort, order),
        }

    return page(request, "job_view.html", await one_read(services, read), viewer=who)


# -- one issue's pages ------------------------------------------------------------------------


def _seqs(
    services: Services, user: UserRecord, opened: Opened, rows: list[dict[str, Any]]
) -> dict[str, int]:
    """The page (``seq``) of each row's ``url``: by its finding's item when it has one."""
    urls = [r["url"] for r in rows if r.get("url")]
    if opened.view.pages is None or not urls:
        return {}
    items = {int(r["item_id"]): r["url"] for r in rows if r.get("item_id") and r.get("url")}
    return services.audits.page_seqs(user, opened.project.id, opened.job.id, urls, items)


@router.get("/dashboard/jobs/{job_id}/view/issues/{code}", name="dashboard_job_view_issue")
async def issue_pages(
    request: Request, who: Signed, job_id: JobId, code: Code, after: Text = ""
) -> Response:
    services = services_of(request)
    start = _after("after", after, 1)

    def read() -> dict[str, Any]:
        opened = _open(services, who.user, job_id)
        read = opened.job_read(opened.view.issues)
        found_counts = _counts(
            services, who.user, opened, _history(services, who.user, opened, depth=1).this
        )
        counts = {c: (s, n) for c, s, n in found_counts}
        if code not in counts:
            raise NotFound(f"issue {code} in job {job_id}")
        found = opened.rows(services, who.user, read, {"code": code}, after=start or 0)
        rows = [read.to_row(r) for r in found.rows[:PAGE]]
        seqs = _seqs(
            services,
            who.user,
            opened,
            [
                {"url": r.get("url"), "item_id": f.get("item_id")}
                for r, f in zip(rows, found.rows, strict=False)
            ],
        )
        more = len(found.rows) > PAGE
        base = f"{opened.base}/issues/{code}"
        return {
            "o": opened,
            "code": code,
            "severity": counts[code][0],
            "count": counts[code][1],
            "about": opened.view.explanations.get(code, ""),
            "rows": [
                {
                    "url": r.get("url"),
                    "seq": seqs.get(r.get("url") or ""),
                    "evidence": evidence(r.get("evidence")),
                }
                for r in rows
            ],
            "more": f"{base}?{urlencode({'after': rows[-1]['id']})}" if more and rows else None,
            "first": base if start else None,
            "csv": f"{opened.base}/issues.csv?{urlencode({'code': code})}",
            "api": f"/v1/projects/{opened.project.id}/{read.path.format(job_id=job_id)}"
            f"?{urlencode({'code': code})}",
        }

    return page(request, "job_view_issue.html", await one_read(services, read), viewer=who)


@router.get("/dashboard/jobs/{job_id}/view/issues.csv", name="dashboard_job_view_issues_csv")
async def issues_csv(request: Request, who: Signed, job_id: JobId, code: CodeQuery) -> Response:
    services = services_of(request)

    def read() -> Response:
        opened = _open(services, who.user, job_id)
        read = opened.job_read(opened.view.issues)
        return job_read_csv(services, who.user, opened.project.id, job_id, read, {"code": code})

    return await run_in_threadpool(read)


# -- the pages --------------------------------------------------------------------------------


def _page_filters(read: JobRead, shown: dict[str, str]) -> dict[str, Any]:
    """The explorer's filters as the declared read's values: the 422 page naming a bad one."""
    values: dict[str, Any] = {}
    for spec in read.filters:
        raw = shown.get(spec.name, "")
        if not raw:
            continue
        if spec.type is bool:
            if raw not in ("true", "false"):
                raise DashboardError(422, "Invalid input", f"{spec.name}: must be true or false")
            values[spec.name] = raw == "true"
        elif spec.pattern is not None and not re.fullmatch(spec.pattern, raw):
            raise DashboardError(422, "Invalid input", f"{spec.name}: {spec.description}")
        else:
            values[spec.name] = raw
    return values


@dataclass(frozen=True)
class PageFilters:
    """The page explorer's filters as the query gives them (the form shows them back)."""

    status: Text = ""
    indexable: Text = ""
    depth: Text = ""
    in_links: Text = ""

    def shown(self) -> dict[str, str]:
        return {
            "status": self.status.strip(),
            "indexable": self.indexable.strip(),
            "depth": self.depth.strip(),
            "in_links": self.in_links.strip(),
        }


@router.get("/dashboard/jobs/{job_id}/view/pages", name="dashboard_job_view_pages")
async def pages(
    request: Request,
    who: Signed,
    job_id: JobId,
    filters: Annotated[PageFilters, Depends()],
    after: Text = "",
) -> Response:
    services = services_of(request)
    start = _after("after", after, 0)
    shown = filters.shown()

    def read() -> dict[str, Any]:
        opened = _open(services, who.user, job_id)
        read = opened.job_read(opened.view.pages)
        values = _page_filters(read, shown)
        found = opened.rows(services, who.user, read, values, after=-1 if start is None else start)
        rows = [read.to_row(r) for r in found.rows[:PAGE]]
        query = {k: v for k, v in shown.items() if v}
        more = None
        if len(found.rows) > PAGE and rows:
            more = f"{opened.base}/pages?{urlencode(query | {'after': rows[-1]['seq']})}"
        return {
            "o": opened,
            "rows": rows,
            "shown": shown,
            "more": more,
            "first": f"{opened.base}/pages" + (f"?{urlencode(query)}" if query else "")
            if start is not None
            else None,
            "csv": f"{opened.base}/pages.csv" + (f"?{urlencode(query)}" if query else ""),
        }

    return page(request, "job_view_pages.html", await one_read(services, read), viewer=who)


@router.get("/dashboard/jobs/{job_id}/view/pages.csv", name="dashboard_job_view_pages_csv")
async def pages_csv(
    request: Request, who: Signed, job_id: JobId, filters: Annotated[PageFilters, Depends()]
) -> Response:
    """The explorer's pages, filtered as shown, as the API's CSV of the same read."""
    services = services_of(request)
    shown = filters.shown()

    def read() -> Response:
        opened = _open(services, who.user, job_id)
        read = opened.job_read(opened.view.pages)
        values = _page_filters(read, shown)
        return job_read_csv(services, who.user, opened.project.id, job_id, read, values)

    return await run_in_threadpool(read)


@router.get("/dashboard/jobs/{job_id}/view/pages/{seq}", name="dashboard_job_view_page")
async def one_page(request: Request, who: Signed, job_id: JobId, seq: Seq) -> Response:
    services = services_of(request)

    def read() -> dict[str, Any]:
        opened = _open(services, who.user, job_id)
        if opened.view.pages is None:
            raise NotFound(f"a view of job {job_id}")
        _audit, record, found = services.audits.page(who.user, opened.project.id, job_id, seq)
        rank = {s: n for n, s in enumerate(SEVERITIES)}
        issues = sorted(found, key=lambda f: (rank.get(f.severity, len(SEVERITIES)), f.code, f.id))
        return {
            "o": opened,
            "p": record,
            "issues": [
                {
                    "code": f.code,
                    "severity": f.severity,
                    "about": opened.view.explanations.get(f.code, ""),
                    "evidence": evidence((f.data or {}).get("evidence")),
                }
                for f in issues
            ],
        }

    return page(request, "job_view_page.html", await one_read(services, read), viewer=who)


# -- against the previous job -----------------------------------------------------------------


@router.get("/dashboard/jobs/{job_id}/view/changes", name="dashboard_job_view_changes")
async def changes(
    request: Request,
    who: Signed,
    job_id: JobId,
    change: Annotated[Literal["new", "fixed"], Query()] = "new",
    after: Text = "",
) -> Response:
    services = services_of(request)
    start = _after("after", after, 1)

    def read() -> dict[str, Any]:
        opened = _open(services, who.user, job_id)
        if not opened.view.compare:
            raise NotFound(f"a view of job {job_id}")
        previous = _history(services, who.user, opened).previous
        if previous is None or previous.job_id is None:
            return {"o": opened, "previous": None}
        found = services.audits.compare(
            who.user,
            opened.project.id,
            job_id,
            previous.job_id,
            change=change,
            after_id=start or 0,
            limit=PAGE + 1,
        )
        rows = found.found[:PAGE]
        base = f"{opened.base}/changes?{urlencode({'change': change})}"
        return {
            "o": opened,
            "previous": previous,
            "change": change,
            "counts": [c for c in found.counts if c.new or c.fixed],
            "new": sum(c.new for c in found.counts),
            "fixed": sum(c.fixed for c in found.counts),
            "rows": [
                {
                    "code": r.code,
                    "severity": r.severity,
                    "url": r.url,
                    "about": opened.view.explanations.get(r.code, ""),
                }
                for r in rows
            ],
            "more": f"{base}&after={rows[-1].id}" if len(found.found) > PAGE and rows else None,
            "first": base if start else None,
        }

    return page(request, "job_view_changes.html", await one_read(services, read), viewer=who)


# -- a table of the view as CSV -----------------------------------------------------------------


@router.get("/dashboard/jobs/{job_id}/view/tables/{number}.csv", name="dashboard_job_view_csv")
async def table_csv(
    request: Request, who: Signed, job_id: JobId, number: Annotated[int, Path(ge=1, le=20)]
) -> Response:
    services = services_of(request)

    def read() -> Response:
        opened = _open(services, who.user, job_id)
        if number > len(opened.view.tables):
            raise NotFound(f"table {number} of job {job_id}")
        table = opened.view.tables[number - 1]
        name = f"{opened.kind.name}-{job_id}-{number}.csv"
        return tables.csv_response(table, _collected(services, who.user, opened), name)

    return await run_in_threadpool(read)
