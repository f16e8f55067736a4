"""Project pages: the list (and creating one), a project's page (rename, delete after a
confirmation step, its schedules, its latest jobs, what its kinds collected as tables and
charts) and starting a job of any type there from a form built from its params schema."""

from __future__ import annotations

from typing import Annotated, Any, Final

from fastapi import APIRouter, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import Response

from seojobs.api.dashboard import jobform, repeat
from seojobs.api.dashboard.auth import (
    DashboardError,
    Viewer,
    check_csrf,
    one_read,
    read_form,
    services_of,
)
from seojobs.api.dashboard.charts import bar_chart
from seojobs.api.dashboard.render import page
from seojobs.api.dashboard.repeat import Repeat, checked_name
from seojobs.api.dashboard.routes import Signed, enabled_field, see_other
from seojobs.api.inputs import CheckedRoute
from seojobs.api.projects import ProjectId, ScheduleId
from seojobs.engine.registry import json_schema
from seojobs.records import CollectionRecord, ProjectRecord
from seojobs.services import Conflict, Invalid, NotFound, QuotaExceeded, Services

router = APIRouter(route_class=CheckedRoute, include_in_schema=False)
LATEST_JOBS: Final = 10
MAX_COLUMNS: Final = 8
SEVERITIES: Final = ("error", "warning", "notice")


# -- the list -----------------------------------------------------------------------------------


@router.get("/dashboard/projects", name="dashboard_projects")
async def project_list(request: Request, who: Signed) -> Response:
    return await _list_page(request, who, name="", error=None, status_code=200)


async def _list_page(
    request: Request, who: Viewer, *, name: str, error: str | None, status_code: int
) -> Response:
    projects = await run_in_threadpool(services_of(request).projects, who.user)
    context = {"projects": projects, "name": name, "error": error}
    return page(request, "projects.html", context, status_code=status_code, viewer=who)


@router.post("/dashboard/projects", name="dashboard_project_create")
async def project_create(request: Request, who: Signed) -> Response:
    form = await read_form(request)
    check_csrf(who.csrf, form)
    sent = form.get("name", "")
    name, error = checked_name(sent)
    if error is None:
        try:
            project = await run_in_threadpool(
                services_of(request).accounts.create_project, who.user, name
            )
        except Conflict as exc:
            error = f"name: {exc}"
        else:
            return see_other(f"/dashboard/projects/{project.id}")
    return await _list_page(request, who, name=sent, error=error, status_code=422)


# -- one project --------------------------------------------------------------------------------


@router.get("/dashboard/projects/{project_id}", name="dashboard_project")
async def project_page(request: Request, who: Signed, project_id: ProjectId) -> Response:
    return await _project_page(request, who, project_id, name=None, error=None, status_code=200)


async def _project_page(
    request: Request,
    who: Viewer,
    project_id: int,
    *,
    name: str | None,
    error: str | None,
    status_code: int,
) -> Response:
    services = services_of(request)

    def read() -> dict[str, Any]:
        project = services.project(who.user, project_id)
        return {
            "project": project,
            "name": project.name if name is None else name,
            "error": error,
            "jobs": services.jobs.page(
                who.user, project_id=project_id, limit=LATEST_JOBS, summary=True
            ),
            "schedules": services.schedules.in_project(who.user, project_id),
            "collections": _collections(services, who, project_id),
        }

    context = await one_read(services, read)
    return page(request, "project.html", context, status_code=status_code, viewer=who)


def _collections(services: Services, who: Viewer, project_id: int) -> list[dict[str, Any]]:
    """Per kind that collected something here: its latest collection of each subject as a
    table (titled and with the columns its dashboard view declares), the chart its view
    declares of them (``summary``), and the findings of the job that collected them."""
    shown = []
    for kind in services.registry.names():
        view = services.registry.get(kind).view
        try:
            latest = services.collections.latest_each(who.user, project_id, kind)
        except NotFound:
            continue
        rows = [(c, _flat(c.data)) for c in latest]
        columns: list[str] = []
        for _, values in rows:
            columns += [k for k in values if k not in columns]
        charts = []
        if view.summary is not None and (summary := view.summary(latest))[1]:
            charts.append(bar_chart(*summary))
        newest = max(latest, key=lambda c: c.collected_at)
        if newest.job_id is not None:
            charts.insert(0, _findings_chart(services, who, kind, newest))
        shown.append(
            {
                "kind": kind,
                "title": view.heading(kind),
                "columns": view.pick(columns, MAX_COLUMNS),
                "rows": rows,
                "charts": [c for c in charts if c],
                "has_view": view.job is not None,
            }
        )
    return shown


def _findings_chart(
    services: Services, who: Viewer, kind: str, collection: CollectionRecord
) -> Any:
    assert collection.job_id is not None
    try:
        counts = services.jobs.finding_counts(who.user, collection.job_id)
    except NotFound:  # the job was pruned; its collection stays as history
        return None
    by_severity: dict[str, int] = {}
    for _code, severity, n in counts:
        by_severity[severity] = by_severity.get(severity, 0) + n
    if not by_severity:
        return None
    order = [s for s in SEVERITIES if s in by_severity] + sorted(
        s for s in by_severity if s not in SEVERITIES
    )
    title = f"{kind} findings by severity (job {collection.job_id})"
    return bar_chart(title, [(s, by_severity[s]) for s in order])


def _flat(data: Any, prefix: str = "", depth: int = 0) -> dict[str, Any]:
    """A collection's top-level values (and those of nested objects, one level down) as
    ``{"key" or "key.sub": scalar}``; lists show their length."""
    if isinstance(data, list):
        return {prefix or "entries": len(data)}
    if not isinstance(data, dict):
        return {prefix or "value": data}
    found: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, dict) and depth == 0:
            found.update(_flat(value, name, 1))
        elif isinstance(value, list):
            found[name] = f"{len(value)} entries"
        elif not isinstance(value, dict):
            found[name] = value
    return found


@router.post("/dashboard/projects/{project_id}/rename", name="dashboard_project_rename")
async def project_rename(request: Request, who: Signed, project_id: ProjectId) -> Response:
    form = await read_form(request)
    check_csrf(who.csrf, form)
    sent = form.get("name", "")
    name, error = checked_name(sent)
    if error is None:
        services = services_of(request)
        try:
            await run_in_threadpool(services.accounts.rename_project, who.user, project_id, name)
        except Conflict as exc:
            error = f"name: {exc}"
        else:
            return see_other(f"/dashboard/projects/{project_id}")
    return await _project_page(request, who, project_id, name=sent, error=error, status_code=422)


@router.get("/dashboard/projects/{project_id}/delete", name="dashboard_project_delete_form")
async def project_delete_form(request: Request, who: Signed, project_id: ProjectId) -> Response:
    services = services_of(request)
    project = await run_in_threadpool(services.project, who.user, project_id)
    return page(request, "project_delete.html", {"project": project}, viewer=who)


@router.post("/dashboard/projects/{project_id}/delete", name="dashboard_project_delete")
async def project_delete(request: Request, who: Signed, project_id: ProjectId) -> Response:
    form = await read_form(request)
    check_csrf(who.csrf, form)
    try:
        await run_in_threadpool(services_of(request).accounts.delete_project, who.user, project_id)
    except Conflict as exc:
        raise DashboardError(409, "Cannot delete this project", str(exc)) from None
    return see_other("/dashboard/projects")


@router.post(
    "/dashboard/projects/{project_id}/schedules/{schedule_id}",
    name="dashboard_schedule_enable",
)
async def schedule_enable(
    request: Request, who: Signed, project_id: ProjectId, schedule_id: ScheduleId
) -> Response:
    form = await read_form(request)
    check_csrf(who.csrf, form)
    enabled = enabled_field(form)
    services = services_of(request)
    await run_in_threadpool(
        services.schedules.set_enabled, who.user, project_id, schedule_id, enabled
    )
    return see_other(f"/dashboard/projects/{project_id}#schedules")


# -- starting a job -----------------------------------------------------------------------------


@router.get("/dashboard/projects/{project_id}/new", name="dashboard_project_new_job")
async def new_job_form(
    request: Request,
    who: Signed,
    project_id: ProjectId,
    kind: Annotated[str | None, Query(alias="type", max_length=100)] = None,
) -> Response:
    services = services_of(request)
    project = await run_in_threadpool(services.project, who.user, project_id)
    if kind is None:
        registry = services.registry
        kinds = [registry.get(name) for name in registry.names()]
        context = {"project": project, "kinds": kinds}
        return page(request, "project_kinds.html", context, viewer=who)
    spec = services.kind(kind)
    form_fields = jobform.fields(json_schema(spec.params))
    return _job_page(request, who, project, spec, form_fields, errors=[], status_code=200)


def _job_page(
    request: Request,
    who: Viewer,
    project: ProjectRecord,
    spec: Any,
    form_fields: list[jobform.Field],
    *,
    errors: list[str],
    status_code: int,
    schedule: Repeat | None = None,
) -> Response:
    context = {
        "project": project,
        "kind": spec,
        "fields": form_fields,
        "errors": errors,
        "schedule": schedule or Repeat(),
        "scheduling": schedule is not None,
    }
    return page(request, "project_new.html", context, status_code=status_code, viewer=who)


@router.post("/dashboard/projects/{project_id}/new", name="dashboard_project_start_job")
async def start_job(request: Request, who: Signed, project_id: ProjectId) -> Response:
    """Start one job, or (the form's "Create schedule" button, a schedulable type) create a
    collection schedule with the same params."""
    form = await read_form(request)
    check_csrf(who.csrf, form)
    services = services_of(request)
    project = await run_in_threadpool(services.project, who.user, project_id)
    spec = services.kind(form.get("type", ""))
    form_fields = jobform.fields(json_schema(spec.params))
    params, readable = jobform.read(form_fields, form)
    errors = [f.error for f in form_fields if f.error]
    schedule = repeat.read(form) if form.get("action") == "schedule" else None
    if schedule is not None:
        errors += schedule.messages
    if readable and not (schedule and schedule.errors):
        try:
            if schedule is None:
                job, _ = await run_in_threadpool(
                    lambda: services.jobs.create(who.user, spec.name, params, project_id=project_id)
                )
                return see_other(f"/dashboard/jobs/{job.id}")
            await run_in_threadpool(
                _create_schedule, services, who, project_id, spec, params, schedule
            )
            return see_other(f"/dashboard/projects/{project_id}#schedules")
        except Invalid as exc:
            errors = _place(form_fields, exc, schedule)
        except (Conflict, QuotaExceeded) as exc:
            taken = isinstance(exc, Conflict) and exc.code == "name_taken"
            errors = [schedule.refuse("name", str(exc)) if taken and schedule else str(exc)]
    page_fields = (request, who, project, spec, form_fields)
    return _job_page(*page_fields, errors=errors, status_code=422, schedule=schedule)


def _create_schedule(
    services: Services,
    who: Viewer,
    project_id: int,
    spec: Any,
    params: dict[str, Any],
    schedule: Repeat,
) -> None:
    services.schedules.create(
        who.user,
        name=schedule.name,
        kind=spec.name,
        params=params,
        project_id=project_id,
        every_days=schedule.every_days,
        cron=schedule.cron,
    )


def _place(form_fields: list[jobform.Field], exc: Invalid, schedule: Repeat | None) -> list[str]:
    """The refusal's messages, each on its field too when it names one of the form's (the
    params' fields, or the schedule's when the refusal is not about params)."""
    by_name = {f.name: f for f in form_fields}
    messages = []
    for error in exc.errors:
        path = ".".join(str(part) for part in error.path) or "params"
        if schedule is not None and not exc.in_params:
            messages.append(schedule.refuse(path, error.message))
            continue
        message = f"{path}: {error.message}"
        messages.append(message)
        found = by_name.get(str(error.path[0])) if error.path else None
        if found is not None:
            found.error = message if found.error is None else f"{found.error}; {message}"
    return messages
