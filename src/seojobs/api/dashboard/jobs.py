"""The jobs pages: the list (filters, keyset pages both ways), one job (its parameters,
timings, items, CSV, follow-up check, cancel) and the form that starts an index submission
or check."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Annotated, Any, Final
from urllib.parse import urlencode

from fastapi import APIRouter, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import Response

from seojobs.api.dashboard import tables
from seojobs.api.dashboard.auth import (
    DashboardError,
    Viewer,
    check_csrf,
    one_read,
    read_form,
    services_of,
)
from seojobs.api.dashboard.render import page
from seojobs.api.dashboard.routes import Signed, see_other
from seojobs.api.dashboard.views import has_view
from seojobs.api.ids import MAX_ID, whole_number
from seojobs.api.inputs import CheckedRoute
from seojobs.api.reports import item_status, report_columns
from seojobs.api.results import items_csv_response
from seojobs.api.v1 import JobId
from seojobs.engine.registry import ReportColumn
from seojobs.records import JOB_STATES, ItemRecord, JobRecord, ProjectRecord
from seojobs.services import Invalid, Services, indexing
from seojobs.services.errors import JobFinished

router = APIRouter(route_class=CheckedRoute, include_in_schema=False)
PAGE: Final = 50
ITEMS_PAGE: Final = 50
NEW_KINDS: Final = {indexing.SUBMIT: "Index submission", indexing.CHECK: "Index check"}
Text = Annotated[str, Query(max_length=100)]


def _invalid(field: str, message: str) -> DashboardError:
    return DashboardError(422, "Invalid input", f"{field}: {message}")


def _whole(field: str, raw: str) -> int | None:
    if not raw:
        return None
    try:
        return whole_number(raw, 1, MAX_ID)
    except ValueError:
        raise _invalid(field, "must be a whole number from 1") from None


def _moment(field: str, raw: str, *, end_of_day: bool) -> datetime | None:
    """A date (YYYY-MM-DD: the whole day) or an ISO 8601 time (UTC unless it says)."""
    if not raw:
        return None
    try:
        if len(raw) == 10:
            day = date.fromisoformat(raw) + timedelta(days=1 if end_of_day else 0)
            return datetime.combine(day, time(), tzinfo=UTC)
        found = datetime.fromisoformat(raw)
    except ValueError:
        raise _invalid(field, "must be a date (YYYY-MM-DD) or a time (ISO 8601)") from None
    return found if found.tzinfo else found.replace(tzinfo=UTC)


@dataclass(frozen=True)
class Filters:
    project: int | None
    kind: str | None
    state: str | None
    since: datetime | None
    until: datetime | None
    shown: dict[str, str]  # as typed, for the form and the page links

    def link(self, **cursor: int) -> str:
        query = {k: v for k, v in self.shown.items() if v} | {k: str(v) for k, v in cursor.items()}
        return "/dashboard/jobs" + (f"?{urlencode(query)}" if query else "")


def _filters(services: Services, shown: dict[str, str]) -> Filters:
    kind = shown["type"] or None
    if kind is not None and kind not in services.registry:
        raise _invalid("type", f"no job type is named {kind!r}")
    state = shown["status"] or None
    if state is not None and state not in JOB_STATES:
        raise _invalid("status", f"must be one of {', '.join(JOB_STATES)}")
    return Filters(
        project=_whole("project", shown["project"]),
        kind=kind,
        state=state,
        since=_moment("since", shown["since"], end_of_day=False),
        until=_moment("until", shown["until"], end_of_day=True),
        shown=shown,
    )


@router.get("/dashboard/jobs", name="dashboard_jobs")
async def job_list(
    request: Request,
    who: Signed,
    project: Text = "",
    type: Text = "",
    status: Text = "",
    since: Text = "",
    until: Text = "",
    before: Text = "",
    after: Text = "",
) -> Response:
    services = services_of(request)
    shown = {"project": project, "type": type, "status": status, "since": since, "until": until}
    filters = _filters(services, {k: v.strip() for k, v in shown.items()})
    before_id, after_id = _whole("before", before), _whole("after", after)

    def read() -> dict[str, Any]:
        found = services.jobs.page(
            who.user,
            project_id=filters.project,
            kind=filters.kind,
            states=[filters.state] if filters.state else None,
            created_since=filters.since,
            created_until=filters.until,
            before_id=before_id,
            after_id=after_id,
            limit=PAGE + 1,
            summary=True,
        )
        # One more than a page says whether there is more in the direction we went.
        if after_id is not None:
            more_newer, found = len(found) > PAGE, found[-PAGE:]
            more_older = True
        else:
            more_older, found = len(found) > PAGE, found[:PAGE]
            more_newer = before_id is not None
        projects = services.projects(who.user)
        return {
            "jobs": found,
            "projects": projects,
            "project_names": {p.id: p.name for p in projects},
            "kinds": sorted(services.registry.names()),
            "states": JOB_STATES,
            "filters": filters,
            "older": filters.link(before=found[-1].id) if found and more_older else None,
            "newer": filters.link(after=found[0].id) if found and more_newer else None,
        }

    context = await one_read(services, read)
    return page(request, "jobs.html", context, viewer=who)


def _outcome(raw: str) -> str | None:
    if raw and (len(raw) > 50 or not raw.replace("_", "").isalnum()):
        raise _invalid("outcome", "must be an outcome's name, e.g. indexed")
    return raw or None


@router.get("/dashboard/jobs/{job_id}", name="dashboard_job")
async def job_page(
    request: Request, who: Signed, job_id: JobId, outcome: Text = "", after: Text = ""
) -> Response:
    services = services_of(request)
    wanted = _outcome(outcome.strip())
    start = _whole("after", after)

    def read() -> dict[str, Any]:
        job = services.jobs.get(who.user, job_id)
        found = services.jobs.items(
            who.user,
            job_id,
            after_seq=-1 if start is None else start,
            limit=ITEMS_PAGE + 1,
            outcomes=[wanted] if wanted else None,
        )
        items = found[:ITEMS_PAGE]
        more = None
        if len(found) > ITEMS_PAGE:
            query = {"outcome": wanted or "", "after": str(items[-1].seq)}
            more = f"/dashboard/jobs/{job_id}?{urlencode({k: v for k, v in query.items() if v})}"
        columns = report_columns(services, job)
        return {
            "job": job,
            "project": services.project(who.user, job.project_id).name,
            "params": _shown_params(job),
            "duration": _duration(job),
            "outcome": wanted,
            "outcomes": sorted(job.counters.items()),
            "columns": columns,
            "rows": [_item_row(item, job, columns) for item in items],
            "more": more,
            "follow_up": _follow_up(services, job),
            "view": f"/dashboard/jobs/{job_id}/view" if has_view(services, job) else None,
            "csv": f"/dashboard/jobs/{job_id}/items.csv"
            + (f"?{urlencode({'outcome': wanted})}" if wanted else ""),
        }

    context = await one_read(services, read)
    return page(request, "job.html", context, viewer=who)


def _shown_params(job: JobRecord) -> list[tuple[str, str]]:
    shown = []
    for name, value in sorted(job.params.items()):
        if isinstance(value, list):
            text = "\n".join(str(v) for v in value[:20])
            if len(value) > 20:
                text += f"\n… and {len(value) - 20} more"
        else:
            text = "—" if value is None else str(value)
        shown.append((name, text))
    return shown


def _duration(job: JobRecord) -> str | None:
    if job.started_at is None or job.completed_at is None:
        return None
    seconds = max(0.0, (job.completed_at - job.started_at).total_seconds())
    return f"{seconds:.1f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


def _item_row(
    item: ItemRecord, job: JobRecord, columns: tuple[ReportColumn, ...]
) -> dict[str, Any]:
    return {
        "seq": item.seq,
        "input": input_text(item.input),
        "status": item_status(item, job.is_final),
        "error": ": ".join(x for x in (item.error_code, item.error_message) if x),
        "finished_at": item.finished_at,
        # The report columns' values as text: yes/no, a list's entries, an object's values.
        "extra": [tables.plain(c.value(item.result)) for c in columns],
    }


def input_text(value: Any) -> str:
    """An item's input as text: a URL as it is; an object (stored as JSON) as its values
    (``url`` first), each other than the URL named, never as JSON."""
    if isinstance(value, str) and value[:1] in ("{", "["):
        try:
            value = json.loads(value)
        except ValueError:
            return str(value)
    if isinstance(value, dict):
        ordered = sorted(value.items(), key=lambda kv: kv[0] != "url")
        return ", ".join(
            input_text(v) if k == "url" else f"{k} {input_text(v)}" for k, v in ordered
        )
    if isinstance(value, list):
        return ", ".join(input_text(v) for v in value)
    return "—" if value is None else str(value)


def _follow_up(services: Services, job: JobRecord) -> dict[str, Any] | None:
    if job.kind != indexing.SUBMIT or not job.params.get("checker"):
        return None
    child = indexing.follow_up(services, job)
    return {"days": job.params["checker"], "job": child}


@router.get("/dashboard/jobs/{job_id}/items.csv", name="dashboard_job_csv")
async def job_csv(request: Request, who: Signed, job_id: JobId, outcome: Text = "") -> Response:
    services = services_of(request)
    wanted = _outcome(outcome.strip())
    job = await run_in_threadpool(services.jobs.get, who.user, job_id, summary=True)
    return items_csv_response(services, who.user, job, [wanted] if wanted else None)


@router.post("/dashboard/jobs/{job_id}/cancel", name="dashboard_job_cancel")
async def cancel(request: Request, who: Signed, job_id: JobId) -> Response:
    check_csrf(who.csrf, await read_form(request))
    try:
        await run_in_threadpool(services_of(request).jobs.cancel, who.user, job_id)
    except JobFinished as exc:
        raise DashboardError(409, "Already finished", str(exc)) from None
    return see_other(f"/dashboard/jobs/{job_id}")


# -- starting work ------------------------------------------------------------------------------


def _new_page(
    request: Request,
    who: Viewer,
    projects: list[ProjectRecord],
    form: dict[str, str],
    errors: dict[str, str],
    status_code: int = 200,
) -> Response:
    context = {"projects": projects, "kinds": NEW_KINDS, "form": form, "errors": errors}
    return page(request, "new_job.html", context, viewer=who, status_code=status_code)


@router.get("/dashboard/new", name="dashboard_new")
async def new_form(request: Request, who: Signed) -> Response:
    projects = await run_in_threadpool(services_of(request).projects, who.user)
    default = next((str(p.id) for p in projects if p.is_default), "")
    form = {"kind": indexing.CHECK, "project": default, "urls": "", "title": ""}
    return _new_page(request, who, projects, form, {})


def _form_errors(exc: Invalid) -> dict[str, str]:
    """Field -> message; a URL's error names its line (``urls.3`` is line 4)."""
    errors: dict[str, str] = {}
    for error in exc.errors:
        field = str(error.path[0]) if error.path else "urls"
        if field == "type":
            field = "kind"
        message = error.message
        if field == "urls" and len(error.path) > 1 and isinstance(error.path[1], int):
            message = f"line {error.path[1] + 1}: {message}"
        errors[field] = f"{errors[field]}; {message}" if field in errors else message
    return errors


@router.post("/dashboard/new", name="dashboard_new_post")
async def start(request: Request, who: Signed) -> Response:
    services = services_of(request)
    form = await read_form(request)
    check_csrf(who.csrf, form)
    typed = {k: form.get(k, "") for k in ("kind", "project", "urls", "title")}
    projects = await run_in_threadpool(services.projects, who.user)

    def refuse(errors: dict[str, str], status_code: int = 422) -> Response:
        return _new_page(request, who, projects, typed, errors, status_code)

    kind = typed["kind"]
    if kind not in NEW_KINDS:
        return refuse({"kind": "choose an index submission or an index check"})
    project = next((p for p in projects if str(p.id) == typed["project"].strip()), None)
    if project is None:
        return refuse({"project": "choose one of your projects"})
    urls = [line.strip() for line in typed["urls"].splitlines() if line.strip()]
    if not urls:
        return refuse({"urls": "paste at least one URL, one per line"})
    # Only spaces are trimmed: the services refuse a title with control characters, from
    # this form as from the API (issue 25.5); the request was charged to the user's budget
    # before the form was read (``viewer``).
    title = typed["title"].strip(" ")
    try:
        job, _ = await run_in_threadpool(
            lambda: services.jobs.create(
                who.user, kind, {"urls": urls}, project_id=project.id, title=title or None
            )
        )
    except Invalid as exc:
        return refuse(_form_errors(exc))
    # Over a quota the job exists already failed (quota_exceeded), as the API answers: its
    # page shows why.
    return see_other(f"/dashboard/jobs/{job.id}")
