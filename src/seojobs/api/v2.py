"""SpeedyIndex API v2, served by our jobs (reference/providers.md §1; seed 000 "Polling on v2").

``indexer`` tasks are ``index_submit`` jobs and ``checker`` tasks are ``index_check`` jobs, in
separate lists per engine. Deliberate choices, kept compatible with SpeedyIndex clients:

- Verdicts travel in ``code`` with HTTP 200, as SpeedyIndex sends them: 0 created, 1 the daily
  quota (our "balance") is too small. -2 ("overloaded, retry later") is sent when the database
  cannot take the write (locked past its busy timeout, connection lost), with HTTP 503 and
  ``Retry-After`` so both ``code``-reading and status-reading clients back off.
- Malformed requests are RFC 9457 problems (422), like the rest of the API: SpeedyIndex documents
  no ``code`` for them, and a client that checks ``code == 0`` finds none and stops.
- ``indexed_count`` of an indexer task is what a check found, as SpeedyIndex reports it: the
  follow-up check's count when the task was created with ``checker`` (our extension), else 0.
  Being accepted by IndexNow or Google's Indexing API is not being indexed.
- Unknown ids, other users' ids, ids of another engine or type, and tasks refused for quota are
  all "not found": omitted from a ``task_ids`` answer, 404 for a single ``task_id`` or a report.
  Nothing tells another user's task apart from a missing one. A task id that cannot be one of
  ours (not ASCII digits from 1 to 2**63-1, e.g. a SpeedyIndex hex id) is a 422 naming it.
- A refused create (code 1) gives out no task id, so v2 lists never show the refused job that
  the quota check stores for v1's sake.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Annotated, Any

from fastapi import APIRouter, Path, Request
from fastapi.responses import JSONResponse, Response

from seojobs.api import idempotency, problems
from seojobs.api.deps import Svc, User
from seojobs.api.ids import MAX_ID, digits
from seojobs.api.inputs import CheckedRoute
from seojobs.api.v2_models import (
    KINDS,
    OK,
    PAGE_SIZE,
    Engine,
    TaskType,
    V2AccountResponse,
    V2Created,
    V2CreateRequest,
    V2FullReportResponse,
    V2Overloaded,
    V2Refused,
    V2ReportRequest,
    V2ShortReportResponse,
    V2StatusRequest,
    V2StatusResponse,
    V2TaskList,
    V2UrlCreated,
    V2UrlRequest,
    engine_of,
    page_error_code,
    refused,
    report_head,
    task,
)
from seojobs.records import ItemRecord, JobRecord, UserRecord
from seojobs.services import NotFound, Services, Unavailable, indexing

log = logging.getLogger("seojobs.api.v2")
router = APIRouter(
    prefix="/v2",
    tags=["v2 SpeedyIndex-compatible"],
    responses=problems.RESPONSES,
    route_class=CheckedRoute,
)

SCAN_BATCH = 1000
ITEM_BATCH = 1000
RETRY_AFTER_OVERLOADED = 5

EnginePath = Annotated[
    Engine, Path(description="google or yandex (SpeedyIndex); bing is a seojobs extension.")
]
TypePath = Annotated[
    TaskType, Path(alias="type", description="indexer (index submission) or checker (index check).")
]
CREATE_RESPONSES: dict[int | str, dict[str, Any]] = {
    503: {"model": V2Overloaded, "description": "`code` -2: overloaded, retry after Retry-After."}
}
NOT_FOUND: dict[int | str, dict[str, Any]] = {
    404: {"description": "No such task of yours (problem+json)."}
}


# -- lookups --------------------------------------------------------------------------------------


def _visible(job: JobRecord, engine: str) -> bool:
    return engine_of(job) == engine and not refused(job)


def _scan(
    svc: Services, user: UserRecord, kind: str, engine: str, page: int
) -> tuple[list[JobRecord], int]:
    """The tasks on ``page`` (newest first) and how many tasks the list holds in all.

    The engine lives in the job's params, which the service cannot filter on, so this walks the
    user's jobs of the kind in id order, newest first.
    """
    start, total, picked = page * PAGE_SIZE, 0, []
    before: int | None = None
    while True:
        batch = svc.jobs.page(user, kind=kind, before_id=before, limit=SCAN_BATCH, summary=True)
        for job in batch:
            if not _visible(job, engine):
                continue
            if start <= total < start + PAGE_SIZE:
                picked.append(job)
            total += 1
        if len(batch) < SCAN_BATCH:
            return picked, total
        before = batch[-1].id


def _one(svc: Services, user: UserRecord, engine: str, task_type: str, job_id: int) -> JobRecord:
    try:
        job: JobRecord | None = svc.jobs.get(user, job_id, summary=True)
    except NotFound:
        job = None
    if job is None or job.kind != KINDS[task_type] or not _visible(job, engine):
        raise NotFound(f"task {job_id}")
    return job


def _many(
    svc: Services, user: UserRecord, engine: str, task_type: str, asked: list[int]
) -> list[JobRecord]:
    """The caller's tasks among ``asked``, in the order asked, each once; the rest are left
    out."""
    wanted = list(dict.fromkeys(asked))
    if not wanted:
        return []
    found = svc.jobs.page(user, kind=KINDS[task_type], ids=wanted, limit=len(wanted), summary=True)
    by_id = {job.id: job for job in found if _visible(job, engine)}
    return [by_id[i] for i in wanted if i in by_id]


def _items(svc: Services, user: UserRecord, job_id: int) -> Iterator[ItemRecord]:
    after = -1
    while True:
        page = svc.jobs.items(user, job_id, after_seq=after, limit=ITEM_BATCH)
        yield from page
        if len(page) < ITEM_BATCH:
            return
        after = page[-1].seq


def _verdicts(
    svc: Services, user: UserRecord, job: JobRecord
) -> Iterator[tuple[str, bool, ItemRecord | None]]:
    """(url, indexed, the check item that decided it) for each processed URL of a task.

    A checker task decides by its own items; an indexer task by its follow-up check's items when
    it has one (a URL counts as unindexed until its check says otherwise), else never.
    """
    checks: dict[str, ItemRecord] = {}
    if job.kind == indexing.SUBMIT:
        follow_up = indexing.follow_up(svc, job)
        if follow_up is not None:
            checks = {item.input: item for item in _items(svc, user, follow_up.id)}
    for item in _items(svc, user, job.id):
        if item.state == "pending":
            continue
        check = item if job.kind == indexing.CHECK else checks.get(item.input)
        yield item.input, check is not None and check.outcome == "indexed", check


# -- creating -------------------------------------------------------------------------------------


def _overloaded(exc: Exception) -> JSONResponse:
    log.warning("v2 create refused, the database could not take the write: %s", exc)
    body = V2Overloaded(message="the service is overloaded; retry later").model_dump()
    return JSONResponse(body, status_code=503, headers={"Retry-After": str(RETRY_AFTER_OVERLOADED)})


def _create(
    request: Request,
    svc: Services,
    user: UserRecord,
    engine: str,
    task_type: str,
    body: V2CreateRequest,
    answer: Callable[[JobRecord], dict[str, Any]],
) -> Response:
    params: dict[str, Any] = {"urls": body.urls, "engine": engine}
    if body.checker is not None and task_type == "indexer":  # checker tasks ignore it
        params["checker"] = body.checker

    def produce(job_key: str | None) -> JSONResponse:
        job, _created = svc.jobs.create(
            user, KINDS[task_type], params, title=body.title, idempotency_key=job_key
        )
        if refused(job):
            message = job.error_message or "your daily quota is used up"
            return JSONResponse(V2Refused(message=message).model_dump())
        return JSONResponse(answer(job))

    fingerprint = {"v2": f"{engine}/{task_type}", "title": body.title, **params}
    try:
        return idempotency.run(request, svc, user, fingerprint, produce)
    except Unavailable as exc:
        return _overloaded(exc)


# -- routes ---------------------------------------------------------------------------------------


@router.get("/account", response_model=V2AccountResponse, operation_id="v2_get_account")
def account(user: User, svc: Svc) -> dict[str, Any]:
    """Balance: the URLs left in today's submission (indexer) and check (checker) quotas."""
    quotas = svc.quotas.usage(user)
    balance = {"indexer": quotas["submit"].remaining, "checker": quotas["check"].remaining}
    return {"code": OK, "balance": balance}


@router.post(
    "/task/{engine}/{type}/create",
    response_model=V2Created | V2Refused,
    responses=CREATE_RESPONSES,
    operation_id="v2_create_task",
)
def create_task(
    engine: EnginePath,
    task_type: TypePath,
    body: V2CreateRequest,
    request: Request,
    user: User,
    svc: Svc,
) -> Response:
    """Create a task. `code` 0 with its id, or 1 when the daily quota is too small (HTTP 200)."""

    def answer(job: JobRecord) -> dict[str, Any]:
        return V2Created(task_id=str(job.id), type=f"{engine}/{task_type}").model_dump()

    return _create(request, svc, user, engine, task_type, body, answer)


@router.get(
    "/task/{engine}/{type}/list/{page}", response_model=V2TaskList, operation_id="v2_list_tasks"
)
def list_tasks(
    engine: EnginePath,
    task_type: TypePath,
    page: Annotated[
        int, Path(ge=0, le=MAX_ID, description="0 is the newest 1000 tasks."), digits(0, MAX_ID)
    ],
    user: User,
    svc: Svc,
) -> dict[str, Any]:
    """The caller's tasks of this engine and type, newest first, 1000 per page."""
    picked, total = _scan(svc, user, KINDS[task_type], engine, page)
    follow_ups = indexing.follow_ups(svc, picked)
    return {
        "code": OK,
        "page": page,
        "last_page": max(0, (total - 1) // PAGE_SIZE),
        "result": [task(job, task_type, follow_ups.get(job.id)) for job in picked],
    }


@router.post(
    "/task/{engine}/{type}/status",
    response_model=V2StatusResponse,
    responses=NOT_FOUND,
    operation_id="v2_task_status",
)
def task_status(
    engine: EnginePath, task_type: TypePath, body: V2StatusRequest, user: User, svc: Svc
) -> dict[str, Any]:
    """Status of up to 1000 tasks (`task_ids`: unknown ids are left out), or of one (`task_id`:
    404 when unknown). Poll until `is_completed`."""
    if body.task_id is not None:
        job = _one(svc, user, engine, task_type, body.task_id)
        return {"code": OK, "result": task(job, task_type, indexing.follow_up(svc, job))}
    jobs = _many(svc, user, engine, task_type, body.task_ids or [])
    follow_ups = indexing.follow_ups(svc, jobs)
    return {"code": OK, "result": [task(job, task_type, follow_ups.get(job.id)) for job in jobs]}


@router.post(
    "/task/{engine}/{type}/fullreport",
    response_model=V2FullReportResponse,
    responses=NOT_FOUND,
    operation_id="v2_full_report",
)
def full_report(
    engine: EnginePath, task_type: TypePath, body: V2ReportRequest, user: User, svc: Svc
) -> Response:
    """Every processed URL, as indexed or unindexed (for an indexer task: per its follow-up
    check). `title` comes with google links, `error_code` with google/indexer ones."""
    job = _one(svc, user, engine, task_type, body.task_id)
    google = engine == "google"
    with_code = google and task_type == "indexer"
    indexed: list[dict[str, Any]] = []
    unindexed: list[dict[str, Any]] = []
    for url, is_indexed, check in _verdicts(svc, user, job):
        if is_indexed:
            indexed.append({"url": url, "title": ""} if google else {"url": url})
        elif with_code:
            unindexed.append({"url": url, "error_code": page_error_code(check)})
        else:
            unindexed.append({"url": url})
    head = report_head(job, task_type)
    result = {
        **{k: head[k] for k in ("id", "size", "processed_count")},
        "indexed_links": indexed,
        "unindexed_links": unindexed,
        **{k: head[k] for k in ("title", "type", "created_at")},
    }
    return JSONResponse({"code": OK, "result": result})


@router.post(
    "/task/{engine}/{type}/report",
    response_model=V2ShortReportResponse,
    responses=NOT_FOUND,
    operation_id="v2_report",
)
def short_report(
    engine: EnginePath, task_type: TypePath, body: V2ReportRequest, user: User, svc: Svc
) -> dict[str, Any]:
    """The older report: the same split, with links as plain URL strings."""
    job = _one(svc, user, engine, task_type, body.task_id)
    indexed: list[str] = []
    unindexed: list[str] = []
    for url, is_indexed, _check in _verdicts(svc, user, job):
        (indexed if is_indexed else unindexed).append(url)
    head = report_head(job, task_type)
    return {"code": OK, "result": head | {"indexed_links": indexed, "unindexed_links": unindexed}}


@router.post(
    "/{engine}/url",
    response_model=V2UrlCreated | V2Refused,
    responses=CREATE_RESPONSES,
    operation_id="v2_index_url",
)
def index_url(
    engine: EnginePath, body: V2UrlRequest, request: Request, user: User, svc: Svc
) -> Response:
    """Index one URL: a one-URL indexer task. `code` 0 (with its `task_id`) or 1 (quota)."""

    def answer(job: JobRecord) -> dict[str, Any]:
        return {"code": OK, "task_id": str(job.id)}

    task_body = V2CreateRequest(urls=[body.url])
    return _create(request, svc, user, engine, "indexer", task_body, answer)
