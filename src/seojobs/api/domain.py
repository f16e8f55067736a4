"""A project's domain data: what its last completed ``domain_lookup`` collected.

Started like any job (``POST /v1/projects/{id}/jobs`` with type ``domain_lookup``); this read
serves the latest completed lookup and never starts one.
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
from seojobs.kinds import domain_lookup
from seojobs.timefmt import rfc3339_or_none

router = APIRouter(
    prefix="/v1", tags=["domain"], responses=problems.RESPONSES, route_class=CheckedRoute
)

DomainQuery = Annotated[
    str | None,
    Query(
        max_length=500,
        description="Which domain, when the project has looked up several (Unicode or ASCII); "
        "default: the most recent lookup of any.",
    ),
]


class DomainData(BaseModel):
    domain: str = Field(description="The domain, in its ASCII (IDNA) form.")
    job_id: int | None = Field(description="The lookup that collected it (null once pruned).")
    collected_at: str
    data: dict[str, Any] = Field(
        description="`rdap` (registrar, created/expires/updated, status, nameservers, dnssec), "
        "`dns` (records A, AAAA, MX, NS, TXT, CAA, SOA; spf; dmarc), `tls` (issuer, subject, "
        "sans, not_before, not_after, days_to_expiry, protocol, cipher, verified), each with "
        "its `error` (null, or {code, message} when that part failed), and `errors`."
    )


def _subject(domain: str | None) -> str | None:
    """The stored spelling of ``domain``; a value that is no domain is looked up as written
    (it matches nothing: 404, as for any domain never looked up)."""
    if domain is None:
        return None
    try:
        return domain_lookup.normalise_domain(domain)
    except ValueError:
        return domain


@router.get(
    "/projects/{project_id}/domain", response_model=DomainData, operation_id="get_domain_data"
)
def domain_data(
    project_id: ProjectId, user: User, svc: Svc, domain: DomainQuery = None
) -> Response:
    """The project's latest domain lookup (of `domain`, if given): registration, DNS and TLS
    certificate, with the `job_id` and `collected_at` of that lookup. Never starts a lookup:
    404 until one has completed."""
    found = svc.collections.latest(user, project_id, domain_lookup.NAME, _subject(domain))
    return JSONResponse(
        {
            "domain": found.subject,
            "job_id": found.job_id,
            "collected_at": rfc3339_or_none(found.collected_at),
            "data": found.data,
        }
    )
