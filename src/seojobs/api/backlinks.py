"""Backlink reads: what the project's ``backlink_refresh`` jobs collected. Never starts one.

A refresh is started like any job (``POST /v1/projects/{id}/jobs`` with type
``backlink_refresh``) or by a collection schedule; each (donor, target) pair it checked is a
collection (subject: normalised donor, a space, normalised target). ``/backlinks`` serves the
latest of every pair, filtered and paged in subject order; ``/backlinks/history`` every check
of one pair, newest first.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, Field

from seojobs.api import problems
from seojobs.api.deps import Svc, User
from seojobs.api.ids import parse_cursor
from seojobs.api.inputs import CheckedRoute
from seojobs.api.projects import ProjectId
from seojobs.api.v1 import Cursor, Limit
from seojobs.kinds import backlink_refresh
from seojobs.kinds.backlink_refresh.match import host_of, on_site, same_page
from seojobs.kinds.backlink_refresh.params import normalised
from seojobs.kinds.urls import check_url
from seojobs.records import CollectionRecord
from seojobs.services.errors import NotFound
from seojobs.timefmt import rfc3339_or_none

router = APIRouter(
    prefix="/v1", tags=["backlinks"], responses=problems.RESPONSES, route_class=CheckedRoute
)

LinkStatus = Annotated[
    Literal["found", "missing", "donor_error", "donor_redirected", "blocked"] | None,
    Query(description="Only pairs whose latest check has this `link_status`."),
]
Target = Annotated[
    str | None,
    Query(
        max_length=2048,
        description="Only pairs of this target (scheme, `www.`, a trailing slash and tracking "
        "parameters ignored).",
    ),
]
DonorDomain = Annotated[
    str | None,
    Query(
        max_length=253,
        pattern=r"^[A-Za-z0-9.\-]+$",
        description="Only pairs whose donor is on this host or its subdomains (`www.` ignored).",
    ),
]
PairUrl = Annotated[
    str | None,
    Query(
        max_length=2048,
        description="Only checks of this donor / target, as the job's params gave them "
        "(both: one pair's history).",
    ),
]
HISTORY_CHUNK = 1_000  # checks read at once when a history is filtered by donor or target
HISTORY_FIELDS = ("first_seen", "last_checked", "last_changed", "previous_status")
DATA_DESCRIPTION = (
    "The check: `donor`, `target`, `match`, `link_status`, `reason`; the link that counts "
    "(the first without nofollow/sponsored/ugc, else the first): `href_raw`, `href`, `rel` "
    "(tokens, lowercased), `anchor_text` (or the image's alt), `is_image_link`, `nofollow` "
    "(its rel or the page's); `page_nofollow` (meta robots or X-Robots-Tag), "
    "`link_count_to_target`, `links` (up to 20 matching links); the donor: `status_code`, "
    "`final_url`, `redirect_chain`, `indexable`, `indexability_reason`, `canonical`, "
    "`canonical_state`, `robots_txt_state`, `fetch_error_kind`; `checked_at` and the history "
    "fields."
)


class Backlink(BaseModel):
    job_id: int | None = Field(description="The job that checked it (null once pruned).")
    collected_at: str | None
    donor: str
    target: str
    link_status: str = Field(description="found, missing, donor_error, donor_redirected, blocked")
    first_seen: str | None = Field(description="When the link was first found (null: never).")
    last_checked: str | None
    last_changed: str | None = Field(
        description="When `link_status` took its value (the first check, or the one that saw "
        "it change)."
    )
    previous_status: str | None = Field(description="`link_status` before its last change.")
    data: dict[str, Any] = Field(description=DATA_DESCRIPTION)


class BacklinkPage(BaseModel):
    data: list[Backlink]
    next_cursor: str | None


def _body(found: CollectionRecord) -> dict[str, Any]:
    data = found.data if isinstance(found.data, dict) else {}
    return {
        "job_id": found.job_id,
        "collected_at": rfc3339_or_none(found.collected_at),
        "donor": data.get("donor"),
        "target": data.get("target"),
        "link_status": data.get("link_status"),
        **{name: data.get(name) for name in HISTORY_FIELDS},
        "data": data,
    }


def _stored(url: str) -> str:
    """The URL as a job stored it (IRIs as the URI they map to), normalised."""
    try:
        return normalised(check_url(url))
    except ValueError:
        return url  # no job took it: nothing is found


def _wanted(
    row: dict[str, Any], status: str | None, target: str | None, domain: str | None
) -> bool:
    if status is not None and row["link_status"] != status:
        return False
    if target is not None and not same_page(str(row["target"] or ""), target):
        return False
    if domain is None:
        return True
    host = host_of(str(row["donor"] or ""))
    return host is not None and on_site(host, domain)


@router.get(
    "/projects/{project_id}/backlinks", response_model=BacklinkPage, operation_id="list_backlinks"
)
def list_backlinks(
    project_id: ProjectId,
    user: User,
    svc: Svc,
    link_status: LinkStatus = None,
    target: Target = None,
    donor_domain: DonorDomain = None,
    cursor: Cursor = None,
    limit: Limit = 100,
) -> Response:
    """The latest check of every (donor, target) pair the project's completed
    `backlink_refresh` jobs checked, in donor order, with `first_seen`, `last_checked` and
    `last_changed`. Never starts a job: 404 until one has completed."""
    offset = parse_cursor(cursor) or 0  # the request is checked before anything is read
    found = svc.collections.latest_each(user, project_id, backlink_refresh.NAME)
    wanted = _stored(target) if target is not None else None
    rows = [body for body in map(_body, found) if _wanted(body, link_status, wanted, donor_domain)]
    page = rows[offset : offset + limit]
    more = offset + limit < len(rows)
    return JSONResponse({"data": page, "next_cursor": str(offset + limit) if more else None})


def _filtered_history(
    svc: Svc,
    user: User,
    project_id: int,
    donor: str | None,
    target: str | None,
    before: int | None,
    wanted: int,
) -> list[CollectionRecord]:
    """Up to ``wanted`` checks of every pair (of one donor or one target), newest first."""
    found: list[CollectionRecord] = []
    name = backlink_refresh.NAME
    while len(found) < wanted:
        chunk = svc.collections.history(
            user, project_id, name, before_id=before, limit=HISTORY_CHUNK
        )
        for record in chunk:
            data = record.data if isinstance(record.data, dict) else {}
            if donor is not None and not same_page(str(data.get("donor") or ""), donor):
                continue
            if target is not None and not same_page(str(data.get("target") or ""), target):
                continue
            found.append(record)
        if len(chunk) < HISTORY_CHUNK:
            break
        before = chunk[-1].id
    return found[:wanted]


@router.get(
    "/projects/{project_id}/backlinks/history",
    response_model=BacklinkPage,
    operation_id="list_backlink_history",
)
def backlink_history(
    project_id: ProjectId,
    user: User,
    svc: Svc,
    donor: PairUrl = None,
    target: PairUrl = None,
    cursor: Cursor = None,
    limit: Limit = 100,
) -> Response:
    """Every completed check of one (donor, target) pair (of one donor's or one target's
    pairs, or of every pair), newest first. 404 until one has completed."""
    before = parse_cursor(cursor)
    if donor is not None and target is not None:
        key = backlink_refresh.subject(_stored(donor), _stored(target))
        page = svc.collections.history(
            user, project_id, backlink_refresh.NAME, key, before_id=before, limit=limit + 1
        )
    else:
        page = _filtered_history(svc, user, project_id, donor, target, before, limit + 1)
    if not page and before is None:
        what = "".join(
            f" {name} {value!r}" for name, value in (("for", donor), ("to", target)) if value
        )
        raise NotFound(f"backlink_refresh data{what} in project {project_id} (none completed)")
    more = len(page) > limit
    page = page[:limit]
    return JSONResponse(
        {"data": [_body(c) for c in page], "next_cursor": str(page[-1].id) if more else None}
    )
