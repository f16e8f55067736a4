"""Seed 001's projects API: projects, their jobs of any type and their collection schedules.

Every answer wraps its payload in ``{"data": ...}`` (lists add ``next_cursor``); errors are the
same problem+json as the rest of the API. ``GET /v1/jobs/{id}`` is what seed 001's poller
reads: 200 in every state, ``Retry-After`` while the job is not finished.
"""

from __future__ import annotations

from collections.abc import Awaitable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import JSONResponse, Response

from seojobs.api import idempotency, problems
from seojobs.api.deps import Svc, User, current_user
from seojobs.api.fastroute import PathIdRoute
from seojobs.api.ids import MAX_ID, IdDigits, parse_cursor
from seojobs.api.inputs import CheckedRoute
from seojobs.api.paging import by_id, paged
from seojobs.api.problems import Problem, invalid
from seojobs.api.projects_models import (
    INTERVALS,
    JobData,
    JobIn,
    JobPage,
    JobTypeList,
    ProjectData,
    ProjectIn,
    ProjectPage,
    ProjectPatch,
    ScheduleData,
    ScheduleEnabledIn,
    ScheduleIn,
    SchedulePage,
)

# v1's list and status conventions, shared so that both surfaces page and pace polls alike.
from seojobs.api.v1 import Cursor, JobId, Limit, StatusFilter, long_poll, retry_headers
from seojobs.engine.registry import json_schema

# Seed 001's job body: also the data of a job's webhook events (seojobs.jobbody).
from seojobs.jobbody import job_body
from seojobs.records import JobRecord, ProjectRecord, ScheduleRecord, UserRecord
from seojobs.services import Invalid, Services
from seojobs.timefmt import rfc3339, rfc3339_or_none

router = APIRouter(
    prefix="/v1", tags=["projects"], responses=problems.RESPONSES, route_class=CheckedRoute
)

ProjectId = Annotated[int, Path(ge=1, le=MAX_ID, description="The project's id."), IdDigits]
ScheduleId = Annotated[int, Path(ge=1, le=MAX_ID, description="The schedule's id."), IdDigits]
CONFLICT: dict[int | str, dict[str, Any]] = {
    409: problems.problem_response("Conflicts with what exists (see `type`)")
}


# -- bodies -------------------------------------------------------------------------------------


def project_body(project: ProjectRecord) -> dict[str, Any]:
    return {
        "id": project.id,
        "name": project.name,
        "is_default": project.is_default,
        "created_at": rfc3339_or_none(project.created_at),
        "domain": project.domain,
        "brand_names": list(project.brand_names),
        "competitors": list(project.competitors),
    }


def schedule_body(schedule: ScheduleRecord) -> dict[str, Any]:
    return {
        "id": schedule.id,
        "project_id": schedule.project_id,
        "name": schedule.name,
        "type": schedule.kind,
        "params": schedule.params,
        "every_seconds": schedule.interval_seconds,
        "cron": schedule.cron,
        "start_at": rfc3339_or_none(schedule.start_at),
        "next_run_at": rfc3339_or_none(schedule.next_tick_at),
        "enabled": schedule.enabled,
        "created_at": rfc3339_or_none(schedule.created_at),
        "collection": schedule.collection,
    }


R = TypeVar("R", ProjectRecord, ScheduleRecord)


def _page(records: Sequence[R], cursor: str | None, limit: int) -> tuple[list[R], str | None]:
    """Oldest first; the cursor is the last id of the previous page. Users have few projects
    and schedules, so the store hands all of them over and the page is cut here."""
    after = parse_cursor(cursor) or 0
    return paged([r for r in records if r.id > after], limit, by_id)


# -- errors -------------------------------------------------------------------------------------


@contextmanager
def _answers(params_at: str | None = "params") -> Iterator[None]:
    """Refusals about a job's params name their field inside the body's ``params``
    (``params.urls[0]``), or as they are when the body is the params (``params_at`` None);
    the app's handlers answer the rest."""
    try:
        yield
    except Invalid as exc:
        if exc.in_params and params_at:
            raise exc.within(params_at) from None
        raise


def _created(location: str, data: dict[str, Any]) -> JSONResponse:
    return JSONResponse({"data": data}, status_code=201, headers={"Location": location})


# -- projects -----------------------------------------------------------------------------------


@router.get("/projects", response_model=ProjectPage, operation_id="list_projects")
def list_projects(user: User, svc: Svc, cursor: Cursor = None, limit: Limit = 100) -> Response:
    """Your projects, oldest first (the default project is the first)."""
    page, next_cursor = _page(svc.projects(user), cursor, limit)
    return JSONResponse({"data": [project_body(p) for p in page], "next_cursor": next_cursor})


@router.post(
    "/projects",
    status_code=201,
    response_model=ProjectData,
    responses=CONFLICT,
    operation_id="create_project",
)
def create_project(body: ProjectIn, request: Request, user: User, svc: Svc) -> Response:
    """Create a project (names are unique per user: 409 when taken)."""

    def produce(_job_key: str | None) -> JSONResponse:
        with _answers():
            tracked = body.model_dump(mode="json", exclude_unset=True, exclude={"name"})
            project = svc.accounts.create_project(user, body.name, tracked)
        return _created(f"/v1/projects/{project.id}", project_body(project))

    return idempotency.run(request, svc, user, body.model_dump(), produce)


@router.get("/projects/{project_id}", response_model=ProjectData, operation_id="get_project")
def get_project(project_id: ProjectId, user: User, svc: Svc) -> Response:
    """One of your projects."""
    return JSONResponse({"data": project_body(svc.project(user, project_id))})


@router.patch(
    "/projects/{project_id}",
    response_model=ProjectData,
    responses=CONFLICT,
    operation_id="rename_project",
)
def rename_project(project_id: ProjectId, body: ProjectPatch, user: User, svc: Svc) -> Response:
    """Rename one of your projects (names are unique per user: 409 when taken) or set what it
    tracks: its `domain`, `brand_names` and `competitors` (fields left out stay; `null`
    clears one). Jobs of the project take them as defaults (params on a job win)."""
    changes = body.model_dump(mode="json", exclude_unset=True)
    if changes.get("name", "") is None:
        changes.pop("name")  # a name cannot be cleared
    with _answers():
        project = svc.accounts.update_project(user, project_id, changes)
    return JSONResponse({"data": project_body(project)})


@router.delete(
    "/projects/{project_id}",
    status_code=204,
    response_class=Response,
    responses=CONFLICT,
    operation_id="delete_project",
)
def delete_project(project_id: ProjectId, user: User, svc: Svc) -> Response:
    """Delete a project with its jobs (running ones too) and schedules. The default project,
    which holds the indexing API's jobs, cannot be deleted (409)."""
    with _answers():
        svc.accounts.delete_project(user, project_id)
    return Response(status_code=204)


# -- job types and jobs -------------------------------------------------------------------------


@router.get("/job-types", response_model=JobTypeList, operation_id="list_job_types")
def list_job_types(user: User, svc: Svc) -> Response:
    """The job types this server runs, with the JSON Schema of their params and how often to
    read one of their jobs (``poll_hint``)."""
    registry = svc.registry
    types = [registry.get(name) for name in registry.names()]
    data = [
        {
            "name": kind.name,
            "description": kind.description,
            "params_schema": json_schema(kind.params),
            "poll_hint": kind.poll_hint.as_dict(),
        }
        for kind in types
    ]
    return JSONResponse({"data": data, "next_cursor": None})


def _start(
    svc: Services,
    user: UserRecord,
    project_id: int,
    body: JobIn,
    job_key: str | None,
    params_at: str | None = "params",
) -> JobRecord:
    with _answers(params_at):
        job, _created = svc.jobs.create(
            user,
            body.type,
            body.params,
            project_id=project_id,
            title=body.title,
            idempotency_key=job_key,
            webhook_url=body.webhook_url,
        )
    return job


@router.post(
    "/projects/{project_id}/jobs",
    status_code=202,
    response_model=JobData,
    operation_id="create_project_job",
)
def create_job(
    project_id: ProjectId, body: JobIn, request: Request, user: User, svc: Svc
) -> Response:
    """Start a job in a project. Answers 202 at once; poll the Location (`/v1/jobs/{id}`)."""
    return start_job(svc, user, project_id, body, request)


def start_job(
    svc: Services,
    user: UserRecord,
    project_id: int,
    body: JobIn,
    request: Request,
    params_at: str | None = "params",
) -> Response:
    """A 202 with the started job (or the one an Idempotency-Key already started)."""
    svc.project(user, project_id)  # 404 first, whatever the body: not the user's project
    if body.webhook_url is not None:
        svc.webhooks.check_url(body.webhook_url, "webhook_url")

    def produce(job_key: str | None) -> JSONResponse:
        job = _start(svc, user, project_id, body, job_key, params_at)
        headers = {"Location": f"/v1/jobs/{job.id}"} | retry_headers(job)
        return JSONResponse({"data": job_body(job)}, status_code=202, headers=headers)

    return idempotency.run(request, svc, user, body.model_dump(), produce)


@router.get("/projects/{project_id}/jobs", response_model=JobPage, operation_id="list_project_jobs")
def list_jobs(
    project_id: ProjectId,
    user: User,
    svc: Svc,
    status: StatusFilter = None,
    type: Annotated[str | None, Query(max_length=100, description="Only this job type.")] = None,
    cursor: Cursor = None,
    limit: Limit = 100,
) -> Response:
    """A project's jobs, newest first."""
    found = svc.jobs.page(
        user,
        project_id=project_id,
        kind=type,
        states=status,
        before_id=parse_cursor(cursor),
        limit=limit + 1,
        summary=True,
    )
    page, next_cursor = paged(found, limit, by_id)
    return JSONResponse({"data": [job_body(j) for j in page], "next_cursor": next_cursor})


async def get_job(request: Request, job_id: JobId) -> Response:
    """Any job of yours, of any type and project: 200 in every state, `Retry-After` while it
    is pending or processing. Seed 001's pollers read `data.status`. `Prefer: wait=N` (up to
    30 s) holds the answer until the job changes, as on the indexing API's status reads (then
    `Preference-Applied: wait=N`)."""
    # The hot path of every poller: no Depends (see deps.current_user), read on the event loop.
    user = await current_user(request)
    svc: Services = request.app.state.services

    def read() -> Awaitable[JobRecord]:
        return svc.jobs.summary(user, job_id)

    job, headers = await long_poll(request, await read(), read, lambda job: job)
    return JSONResponse({"data": job_body(job)}, headers=headers)


router.add_api_route(
    "/jobs/{job_id}",
    get_job,
    methods=["GET"],
    response_model=JobData,
    operation_id="get_job",
    route_class_override=PathIdRoute,
)


@router.post(
    "/jobs/{job_id}/cancel",
    response_model=JobData,
    operation_id="cancel_job",
    responses=problems.CANCEL_RESPONSES,
)
def cancel_job(job_id: JobId, user: User, svc: Svc) -> Response:
    """Stop a job: it ends `failed` with code `cancelled`.

    Cancelling it again answers the same; a job that ended otherwise answers 409
    (`job_finished`, with `job_status` and `error_code`)."""
    job = svc.jobs.cancel(user, job_id)
    return JSONResponse({"data": job_body(job)}, headers=retry_headers(job))


# -- schedules ----------------------------------------------------------------------------------


def _interval_fields(body: ScheduleIn) -> None:
    given = [f for f in INTERVALS if getattr(body, f) is not None]
    if len(given) == 1:
        return
    message = "give exactly one of every_days, every_seconds or cron"
    named = given or list(INTERVALS)
    raise Problem(
        422,
        "Invalid request",
        code="validation_error",
        errors=[{"field": f, "message": message} for f in named],
    )


def _start_at(value: datetime | None, now: datetime) -> datetime | None:
    """From a day ago to ten years ahead: the engine steps cron ticks from there, and ticks
    must stay representable."""
    if value is not None and not now - timedelta(days=1) <= value <= now + timedelta(days=3650):
        raise invalid(
            "start_at", f"a time from one day ago to ten years ahead (got {rfc3339(value)})"
        )
    return value


@router.get(
    "/projects/{project_id}/schedules",
    response_model=SchedulePage,
    operation_id="list_schedules",
)
def list_schedules(
    project_id: ProjectId, user: User, svc: Svc, cursor: Cursor = None, limit: Limit = 100
) -> Response:
    """A project's collection schedules, oldest first."""
    page, next_cursor = _page(svc.schedules.in_project(user, project_id), cursor, limit)
    return JSONResponse({"data": [schedule_body(s) for s in page], "next_cursor": next_cursor})


@router.post(
    "/projects/{project_id}/schedules",
    status_code=201,
    response_model=ScheduleData,
    responses=CONFLICT,
    operation_id="create_schedule",
)
def create_schedule(
    project_id: ProjectId, body: ScheduleIn, request: Request, user: User, svc: Svc
) -> Response:
    """Collect on a schedule: one job of `type` every N days, every N seconds, or on a UTC
    cron expression. Each tick starts one job, however many workers run."""
    svc.project(user, project_id)  # 404 first, whatever the body
    _interval_fields(body)
    start_at = _start_at(body.start_at, svc.clock())

    def produce(_job_key: str | None) -> JSONResponse:
        with _answers():
            schedule = svc.schedules.create(
                user,
                name=body.name,
                kind=body.type,
                params=body.params,
                project_id=project_id,
                every_days=body.every_days,
                every_seconds=body.every_seconds,
                cron=body.cron,
                start_at=start_at,
            )
        location = f"/v1/projects/{project_id}/schedules/{schedule.id}"
        return _created(location, schedule_body(schedule))

    return idempotency.run(request, svc, user, body.model_dump(mode="json"), produce)


@router.get(
    "/projects/{project_id}/schedules/{schedule_id}",
    response_model=ScheduleData,
    operation_id="get_schedule",
)
def get_schedule(project_id: ProjectId, schedule_id: ScheduleId, user: User, svc: Svc) -> Response:
    """One schedule, with when it runs next."""
    return JSONResponse({"data": schedule_body(svc.schedules.get(user, project_id, schedule_id))})


@router.patch(
    "/projects/{project_id}/schedules/{schedule_id}",
    response_model=ScheduleData,
    operation_id="set_schedule_enabled",
)
def set_schedule_enabled(
    project_id: ProjectId, schedule_id: ScheduleId, body: ScheduleEnabledIn, user: User, svc: Svc
) -> Response:
    """Pause (`enabled: false`) or resume a schedule. A resumed schedule that missed ticks
    while paused starts one job for the latest of them."""
    found = svc.schedules.set_enabled(user, project_id, schedule_id, body.enabled)
    return JSONResponse({"data": schedule_body(found)})


@router.delete(
    "/projects/{project_id}/schedules/{schedule_id}",
    status_code=204,
    response_class=Response,
    operation_id="delete_schedule",
)
def delete_schedule(
    project_id: ProjectId, schedule_id: ScheduleId, user: User, svc: Svc
) -> Response:
    """Stop a schedule. Jobs it already started stay in the project."""
    svc.schedules.delete(user, project_id, schedule_id)
    return Response(status_code=204)
