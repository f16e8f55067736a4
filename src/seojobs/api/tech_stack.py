"""Tech-stack reads: what the project's last ``tech_stack`` job collected. Never starts one.

A lookup is started like any job (``POST /v1/projects/{id}/jobs`` with type ``tech_stack``);
each site (host) it looked at is a collection, and this read serves the latest one (of one
host with ``?host=``).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, Field

from seojobs.api import problems
from seojobs.api.deps import Svc, User
from seojobs.api.inputs import CheckedRoute
from seojobs.api.projects import ProjectId
from seojobs.kinds import tech_stack
from seojobs.timefmt import rfc3339_or_none

router = APIRouter(
    prefix="/v1", tags=["tech-stack"], responses=problems.RESPONSES, route_class=CheckedRoute
)

Host = Annotated[
    str | None,
    Query(
        max_length=300,
        pattern=r"^[A-Za-z0-9.\-]+(?::[0-9]{1,5})?$|^\[[0-9A-Fa-f:.]+\](?::[0-9]{1,5})?$",
        description="Only this site: its host as looked up (`example.com`, with `:port` when "
        "not the scheme's default).",
    ),
]


class TechStack(BaseModel):
    job_id: int | None = Field(description="The job that collected it (null once pruned).")
    collected_at: str | None
    subject: str = Field(description="The site: host, with the port when not the default.")
    data: dict[str, Any] = Field(
        description="`host`; `technologies` (name, categories, version, versions, confidence "
        "0-100, website, evidence: what matched on which page, implied_by, pages); "
        "`categories` (id, name, technologies); `pages` (url, final_url, status, error); "
        "`skipped` (patterns that timed out)."
    )


@router.get(
    "/projects/{project_id}/tech-stack",
    response_model=TechStack,
    operation_id="get_tech_stack",
)
def get_tech_stack(project_id: ProjectId, user: User, svc: Svc, host: Host = None) -> Response:
    """The technologies the project's last completed `tech_stack` job found (on `host`, if
    given), with the evidence that matched. Never starts a lookup: 404 until one has
    completed."""
    found = svc.collections.latest(
        user, project_id, tech_stack.NAME, host.lower() if host else None
    )
    return JSONResponse(
        {
            "job_id": found.job_id,
            "collected_at": rfc3339_or_none(found.collected_at),
            "subject": found.subject,
            "data": found.data,
        }
    )
