"""Site audits: the check catalogue and starting an audit (the project's audits, the latest
summary, an audit's issues and pages, and the comparison of two audits are the kind's declared
reads).

An audit is an ordinary ``site_audit`` job (``POST /v1/projects/{id}/audits`` starts the
same job as ``POST /v1/projects/{id}/jobs`` with that type); reads serve what the last
completed audit collected and never start one.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, Field

from seojobs.api import problems
from seojobs.api.deps import Svc, User
from seojobs.api.inputs import CheckedRoute
from seojobs.api.projects import ProjectId, start_job
from seojobs.api.projects_models import JobData, JobIn
from seojobs.kinds import site_audit

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
    category: str = Field(description="What it is about: `titles`, `links`, `security`, ...")
    description: str
    how_to_fix: str = Field(description="One line of advice on fixing what it finds.")
    threshold: Threshold | None


class AuditCheckList(BaseModel):
    data: list[AuditCheck]


@router.get("/audit-checks", response_model=AuditCheckList, operation_id="list_audit_checks")
def audit_checks(user: User) -> Response:
    """Every check a site audit runs: its code, severity, description and threshold."""
    return JSONResponse({"data": site_audit.catalogue()})


class AuditSettingsData(BaseModel):
    data: site_audit.AuditSettings = Field(
        description="Every setting, the server's defaults where the project set none."
    )
    set: list[str] = Field(description="The settings the project set (top-level names).")


def _settings_body(settings: site_audit.AuditSettings) -> dict[str, object]:
    data = settings.model_dump(mode="json")
    return {"data": data, "set": sorted(settings.model_fields_set)}


@router.get(
    "/projects/{project_id}/audit-settings",
    response_model=AuditSettingsData,
    operation_id="get_audit_settings",
)
def get_audit_settings(project_id: ProjectId, user: User, svc: Svc) -> Response:
    """The project's audit settings: the defaults of its audits (a request's own params win;
    `thresholds` and `severities` merge one by one)."""
    return JSONResponse(_settings_body(svc.audits.project_settings(user, project_id)))


@router.put(
    "/projects/{project_id}/audit-settings",
    response_model=AuditSettingsData,
    operation_id="put_audit_settings",
)
def put_audit_settings(
    project_id: ProjectId, body: site_audit.AuditSettings, user: User, svc: Svc
) -> Response:
    """Replace the project's audit settings: per-check severities and checks turned off (the
    health score follows them), thresholds, URL include/exclude patterns, query-parameter
    rules and a crawl time budget. Only the fields given are the project's; `{}` resets them.
    Audits started from then on get them; audits already started keep theirs."""
    return JSONResponse(_settings_body(svc.audits.set_project_settings(user, project_id, body)))


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
