"""AI search (GEO) reads: what the project's ``geo_lookup`` jobs collected. Never starts one.

A lookup is started like any job (``POST /v1/projects/{id}/jobs`` with type ``geo_lookup``)
or by a collection schedule; each answered prompt is a collection (subject ``"<provider>
<prompt>"``). ``/geo`` serves the latest of each provider and prompt, oldest collection
first: its cursor is a collection id, so a prompt collected again while a client pages
comes again with its newer answer and none is skipped. ``/geo/history`` serves every
collection of a prompt (of every prompt without it), newest first.
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
from seojobs.kinds import geo_lookup
from seojobs.kinds.geo_lookup.params import MAX_PROMPT, PROVIDERS
from seojobs.kinds.keyword_research.params import ASCII_SPACE, TEXT_PATTERN
from seojobs.records import CollectionRecord
from seojobs.services.errors import NotFound
from seojobs.timefmt import rfc3339_or_none

router = APIRouter(
    prefix="/v1", tags=["geo"], responses=problems.RESPONSES, route_class=CheckedRoute
)

Provider = Annotated[
    Literal["openai", "perplexity"] | None, Query(description="Only this provider's answers.")
]
Cited = Annotated[
    bool | None,
    Query(description="Only prompts whose answers cite the domain (true), or only the others."),
]
PromptQuery = Annotated[
    str | None,
    Query(
        min_length=1,
        max_length=MAX_PROMPT,
        pattern=TEXT_PATTERN,
        description="Only this prompt, as the job's `prompts` gave it (trimmed).",
    ),
]


class Citation(BaseModel):
    url: str
    domain: str | None = Field(description="The URL's host, without `www.`.")
    title: str | None


class GeoAnswer(BaseModel):
    text: str = Field(description="The answer (its first 4,000 characters).")
    truncated: bool
    citations: list[Citation] = Field(description="Cited sources in order, each URL once.")
    domain_cited: bool
    citation_position: int | None = Field(description="1-based: the domain's first citation.")
    brand_mentioned: bool
    mention_count: int
    model: str | None
    checked_at: str


class GeoRow(BaseModel):
    job_id: int | None = Field(description="The job that collected it (null once pruned).")
    collected_at: str | None
    prompt: str
    provider: str
    model: str | None
    domain: str | None
    brand: list[str] | None
    domain_cited: bool = Field(description="Some answer cites the domain (or a subdomain).")
    citation_position: int | None = Field(description="The best position among the answers.")
    brand_mentioned: bool = Field(description="Some answer names the brand.")
    mention_count: int = Field(description="Mentions over all the answers.")
    cited_share: float = Field(description="Share of the answers citing the domain, 0 to 1.")
    mentioned_share: float = Field(description="Share of the answers naming the brand, 0 to 1.")
    repeats: int = Field(description="Answers the shares are over.")
    checked_at: str | None
    answers: list[GeoAnswer]


class GeoPage(BaseModel):
    data: list[GeoRow]
    next_cursor: str | None


FIELDS = tuple(n for n in GeoRow.model_fields if n not in ("job_id", "collected_at"))


def _row(found: CollectionRecord) -> dict[str, Any]:
    data = found.data if isinstance(found.data, dict) else {}
    return {
        "job_id": found.job_id,
        "collected_at": rfc3339_or_none(found.collected_at),
        **{name: data.get(name) for name in FIELDS},
    }


def _page(found: list[CollectionRecord], limit: int) -> tuple[list[CollectionRecord], bool]:
    return found[:limit], len(found) > limit


@router.get("/projects/{project_id}/geo", response_model=GeoPage, operation_id="list_geo")
def list_geo(
    project_id: ProjectId,
    user: User,
    svc: Svc,
    provider: Provider = None,
    cited: Cited = None,
    cursor: Cursor = None,
    limit: Limit = 100,
) -> Response:
    """The latest answer of every prompt (per provider) the project's completed `geo_lookup`
    jobs asked: cited?, position, mentioned?, the shares over repeats, with `job_id` and
    `collected_at`. Never starts a job: 404 until one has completed."""
    after = parse_cursor(cursor)  # the request is checked before anything is read
    found = sorted(
        svc.collections.latest_each(user, project_id, geo_lookup.NAME), key=lambda c: c.id
    )
    if after is not None:
        found = [c for c in found if c.id > after]
    rows = [(c, _row(c)) for c in found]
    if provider is not None:
        rows = [(c, r) for c, r in rows if r["provider"] == provider]
    if cited is not None:
        rows = [(c, r) for c, r in rows if bool(r["domain_cited"]) is cited]
    page = rows[:limit]
    more = len(rows) > limit
    body = {"data": [r for _c, r in page], "next_cursor": str(page[-1][0].id) if more else None}
    return JSONResponse(body)


@router.get(
    "/projects/{project_id}/geo/history",
    response_model=GeoPage,
    operation_id="list_geo_history",
)
def geo_history(
    project_id: ProjectId,
    user: User,
    svc: Svc,
    prompt: PromptQuery = None,
    provider: Provider = None,
    cursor: Cursor = None,
    limit: Limit = 100,
) -> Response:
    """Every completed answer of `prompt` (of every prompt without it; of one provider, if
    given), newest first. 404 until one has completed."""
    before = parse_cursor(cursor)
    asked = prompt.strip(ASCII_SPACE) if prompt is not None else None
    names = [provider] if provider else list(PROVIDERS)
    subjects = [geo_lookup.subject(n, asked) for n in names] if asked else [None]
    found: list[CollectionRecord] = []
    for subject in subjects:
        found += svc.collections.history(
            user, project_id, geo_lookup.NAME, subject, before_id=before, limit=limit + 1
        )
    if not found and before is None:
        what = f" for {asked!r}" if asked else ""
        raise NotFound(f"geo_lookup data{what} in project {project_id} (none completed)")
    found = sorted(found, key=lambda c: c.id, reverse=True)
    page, more = _page(found, limit)
    rows = [_row(c) for c in page]
    if provider and not asked:  # filtered after paging: a page may hold fewer than `limit`
        rows = [r for r in rows if r["provider"] == provider]
    return JSONResponse({"data": rows, "next_cursor": str(page[-1].id) if more else None})
