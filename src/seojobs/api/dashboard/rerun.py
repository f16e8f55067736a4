""" "Run again" on a job's view: a POST (with the form's CSRF token) that creates a job of the
same kind in the same project with the same params and title, then opens its page. The view
itself never creates one (a read); this form is the only way it does."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import Response

from seojobs.api.dashboard.auth import DashboardError, check_csrf, read_form, services_of
from seojobs.api.dashboard.routes import Signed, see_other
from seojobs.api.inputs import CheckedRoute
from seojobs.api.v1 import JobId
from seojobs.records import JobRecord
from seojobs.services import Invalid, NotFound

router = APIRouter(route_class=CheckedRoute, include_in_schema=False)


@router.post("/dashboard/jobs/{job_id}/view/rerun", name="dashboard_job_view_rerun")
async def rerun(request: Request, who: Signed, job_id: JobId) -> Response:
    services = services_of(request)
    check_csrf(who.csrf, await read_form(request))

    def create() -> JobRecord:
        job = services.jobs.get(who.user, job_id)  # NotFound: not theirs
        kind = services.registry.get(job.kind) if job.kind in services.registry else None
        if kind is None or kind.view.job is None or not kind.view.job.rerun:
            raise NotFound(f"a view of job {job_id}")
        try:
            made, _ = services.jobs.create(
                who.user, job.kind, job.params, project_id=job.project_id, title=job.title
            )
        except Invalid as exc:
            raise DashboardError(422, "Cannot run again", str(exc)) from None
        return made

    made = await run_in_threadpool(create)
    # Over a quota the job exists already failed (quota_exceeded): its page says why.
    return see_other(f"/dashboard/jobs/{made.id}")
