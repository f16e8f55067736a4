"""One router for every read a kind declares (:mod:`seojobs.reads`): each is mounted at
``/v1/projects/{project_id}/<path>`` with its own operation id, query parameters (its filters,
``sort`` when it has several orders, ``cursor`` and ``limit`` when it pages) and response model,
when the app is built from the registry. A plug-in's reads are mounted the same way.

Cursors are opaque: a history's is the last row's id (digits, as before); a read ordered by
something else, or of the newest collection of each subject, carries its keyset position.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import inspect
import json
import re
import sys
from collections.abc import Callable, Iterator
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Header, Path, Query
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, create_model

from seojobs import csvfile
from seojobs.api import problems
from seojobs.api.deps import Svc, User
from seojobs.api.ids import MAX_ID, IdDigits, digits, digits_pattern, parse_cursor
from seojobs.api.inputs import CheckedRoute
from seojobs.api.paging import paged
from seojobs.api.projects import ProjectId
from seojobs.api.reports import CSV_RESPONSE, MAX_SEQ
from seojobs.api.v1 import Cursor as IdCursor
from seojobs.api.v1 import JobId, Limit, SeqCursor
from seojobs.engine.registry import Registry
from seojobs.fielderrors import shown
from seojobs.reads import Filter, JobCompare, JobFilter, JobRead, Read
from seojobs.services import NotFound
from seojobs.services import reads as read_svc
from seojobs.timefmt import rfc3339_or_none

MAX_CURSOR = 2000
CSV_PAGE = 500
# A history's cursor is the last row's id; any other is "c" and the keyset position as
# base64url JSON. The pattern says exactly which strings are cursors: one it admits that names
# no page of this read is a 404 (as a keywords cursor naming no collection), never a 422.
KEYSET = "c"
CURSOR_PATTERN = f"^(?:{digits_pattern(1, MAX_ID)}|{KEYSET}[A-Za-z0-9_-]{{1,{MAX_CURSOR}}})$"
_CURSOR = re.compile(CURSOR_PATTERN)
Cursor = Annotated[
    str | None,
    Query(
        description="next_cursor of the previous page.",
        json_schema_extra={"pattern": CURSOR_PATTERN},
    ),
]
Accept = Annotated[str | None, Header()]


def encode(position: list[Any] | None) -> str | None:
    if position is None:
        return None
    if len(position) == 1 and isinstance(position[0], int):
        return str(position[0])  # a history's cursor: the last row's id
    text = json.dumps(position, separators=(",", ":"), ensure_ascii=False)
    return KEYSET + base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def decode(cursor: str | None) -> list[Any] | None:
    """A cursor's position: 422 naming ``cursor`` when it is no cursor's form, 404 when it
    is one but names no position (made by no read)."""
    if cursor is None:
        return None
    if not cursor.isascii() or _CURSOR.fullmatch(cursor) is None:
        raise problems.invalid(
            "cursor", f"use the next_cursor of a previous page (got {shown(cursor)})"
        )
    if cursor.isdigit():
        return [int(cursor)]
    try:
        text = base64.urlsafe_b64decode(cursor[1:] + "=" * (-len(cursor[1:]) % 4))
        found = json.loads(text)
    except (ValueError, binascii.Error):
        found = None
    if not isinstance(found, list) or not found or not all(_plain(v) for v in found):
        raise NotFound("the page this cursor names")
    return found


def _plain(value: Any) -> bool:
    return isinstance(value, int | str | float) and not isinstance(value, bool)


def _query(spec: Filter) -> Any:
    checks: dict[str, Any] = {
        k: v
        for k, v in (
            ("min_length", spec.min_length),
            ("max_length", spec.max_length),
            ("pattern", spec.pattern),
            ("ge", spec.ge),
            ("le", spec.le),
        )
        if v is not None
    }
    query = Query(description=spec.description, **checks)
    if spec.type is int:  # ASCII digits within the range, as every number a client spells
        lo, hi = spec.ge if spec.ge is not None else 0, spec.le if spec.le is not None else MAX_ID
        return Annotated[int | None, query, digits(lo, hi)]
    return Annotated[spec.type | None, query]


def _parameters(read: Read) -> list[inspect.Parameter]:
    keyword = inspect.Parameter.KEYWORD_ONLY
    found = [
        inspect.Parameter("project_id", keyword, annotation=ProjectId),
        inspect.Parameter("user", keyword, annotation=User),
        inspect.Parameter("svc", keyword, annotation=Svc),
    ]
    found += [
        inspect.Parameter(spec.name, keyword, annotation=_query(spec), default=None)
        for spec in read.filters
    ]
    if len(read.orders) > 1:
        sorts: Any = Literal[tuple(read.orders)]
        annotation = Annotated[sorts, Query(description=read.sort_description)]
        found.append(
            inspect.Parameter("sort", keyword, annotation=annotation, default=read.default_sort)
        )
    if read.pages:
        found.append(inspect.Parameter("cursor", keyword, annotation=Cursor, default=None))
        found.append(inspect.Parameter("limit", keyword, annotation=Limit, default=100))
    if read.csv:
        found.append(inspect.Parameter("accept", keyword, annotation=Accept, default=None))
    return found


def response_model(read: Read) -> type[BaseModel]:
    """The read's response: its own, or ``{data, next_cursor}`` of its rows."""
    if read.response is not None:
        return read.response
    name = read.row.__name__ + ("Page" if read.paged else "List")
    fields: dict[str, Any] = {"data": (list[read.row], ...)}  # type: ignore[name-defined]
    if read.paged:
        fields["next_cursor"] = (str | None, ...)
    return create_model(name, **fields)


def _cell(value: Any) -> csvfile.Cell:
    if value is None or isinstance(value, str | int | float):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _csv(read: Read, rows: Iterator[dict[str, Any]], project_id: int) -> Response:
    cells = ([_cell(row.get(c)) for c in read.csv] for row in rows)
    name = f"project-{project_id}-{read.path.replace('/', '-')}.csv"
    return StreamingResponse(
        csvfile.stream(read.csv, cells),
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="{name}"'},
    )


def _endpoint(read: Read) -> Callable[..., Response]:
    def answer(**given: Any) -> Response:
        project_id: int = given["project_id"]
        user, svc = given["user"], given["svc"]
        values = {spec.name: given[spec.name] for spec in read.filters}
        sort = given.get("sort")
        after = decode(given.get("cursor"))  # the request is checked before anything is read
        accept = given.get("accept")
        as_csv = bool(read.csv) and accept is not None and "text/csv" in accept.lower()
        if read.elements:
            found = read_svc.elements(
                svc,
                user,
                project_id,
                read,
                values,
                sort=sort,
                after=None if as_csv else after,
                # A collection is read whole anyway (its list is what one job wrote).
                limit=sys.maxsize if as_csv else given["limit"],
            )
            if as_csv:
                return _csv(read, iter(found.rows), project_id)
            whole = read.to_row(found.collection)
            whole |= {"data": found.rows, "next_cursor": encode(found.after)}
            return JSONResponse(whole)
        if read.source == "one":
            row = read.to_row(read_svc.one(svc, user, project_id, read, values))
            return JSONResponse({"data": row} if read.envelope else row)
        if as_csv:
            first = read_svc.rows(svc, user, project_id, read, values, sort=sort, limit=CSV_PAGE)
            rows = _every(svc, user, project_id, read, values, sort, first)  # 404s came first
            return _csv(read, rows, project_id)
        limit = given.get("limit") if read.paged else None
        page = read_svc.rows(
            svc, user, project_id, read, values, sort=sort, after=after, limit=limit
        )
        body: dict[str, Any] = {"data": [read.to_row(c) for c in page.rows]}
        if read.paged:
            body["next_cursor"] = encode(page.after)
        return JSONResponse(body)

    return _named(answer, _parameters(read), read)


def _every(
    svc: Any,
    user: Any,
    project_id: int,
    read: Read,
    values: dict[str, Any],
    sort: str | None,
    first: read_svc.Rows,
) -> Iterator[dict[str, Any]]:
    page: read_svc.Rows | None = first
    while page is not None:
        yield from (read.to_row(c) for c in page.rows)
        if page.after is None:
            return
        page = read_svc.rows(
            svc, user, project_id, read, values, sort=sort, after=page.after, limit=CSV_PAGE
        )


# -- reads of one job (JobRead) ----------------------------------------------------------


def _job_query(spec: JobFilter) -> Any:
    checks: dict[str, Any] = {
        k: v for k, v in (("max_length", spec.max_length), ("pattern", spec.pattern)) if v
    }
    return Annotated[spec.type | None, Query(description=spec.description, **checks)]


def _job_parameters(read: JobRead) -> list[inspect.Parameter]:
    keyword = inspect.Parameter.KEYWORD_ONLY
    cursor = SeqCursor if read.key == "seq" else IdCursor
    found = [
        inspect.Parameter("project_id", keyword, annotation=ProjectId),
        inspect.Parameter("job_id", keyword, annotation=JobId),
        inspect.Parameter("user", keyword, annotation=User),
        inspect.Parameter("svc", keyword, annotation=Svc),
    ]
    found += [
        inspect.Parameter(spec.name, keyword, annotation=_job_query(spec), default=None)
        for spec in read.filters
    ]
    if read.sorts:
        names = ", ".join(f"`{name}`" for name in read.sorts)
        sort = Annotated[
            str | None,
            Query(
                description=f"Order by {names} (ascending; `-` first: descending), nulls last, "
                f"ties by `{read.key}`. The cursor then counts the rows served.",
                max_length=100,
                pattern=read.sort_pattern(),
            ),
        ]
        found.append(inspect.Parameter("sort", keyword, annotation=sort, default=None))
    found.append(inspect.Parameter("cursor", keyword, annotation=cursor, default=None))
    found.append(inspect.Parameter("limit", keyword, annotation=Limit, default=100))
    if read.csv:
        found.append(inspect.Parameter("accept", keyword, annotation=Accept, default=None))
    return found


def _job_endpoint(read: JobRead) -> Callable[..., Response]:
    # An id cursor starts at 1 (rows after 0); a sequence number at 0 (rows after -1).
    lo, hi, start = (0, MAX_SEQ, -1) if read.key == "seq" else (1, MAX_ID, 0)

    def key(row: dict[str, Any]) -> int:
        return int(row[read.key])

    def answer(**given: Any) -> Response:
        project_id: int = given["project_id"]
        job_id: int = given["job_id"]
        user, svc, limit = given["user"], given["svc"], given["limit"]
        values = {spec.name: given[spec.name] for spec in read.filters}
        sort: str | None = given.get("sort")
        if sort is None:
            cursor = parse_cursor(given["cursor"], lo=lo, hi=hi)  # checked before any read
            after = start if cursor is None else cursor
        else:  # the rows served so far
            after = parse_cursor(given["cursor"], lo=0, hi=MAX_SEQ) or 0

        def rows(after: int, limit: int) -> read_svc.JobRows:
            return read_svc.job_rows(
                svc, user, project_id, job_id, read, values, after=after, limit=limit, sort=sort
            )

        accept = given.get("accept")
        if read.csv and accept is not None and "text/csv" in accept.lower():
            first = rows(after, CSV_PAGE)  # 404 here, before a CSV response starts
            every = _every_row(first.rows, rows, key) if sort is None else _sorted(after, rows)
            return _job_csv(read, job_id, every)
        found = rows(after, limit + 1)
        if sort is None:
            page, more = paged(found.rows, limit, key)
        else:
            page = found.rows[:limit]
            more = str(after + limit) if len(found.rows) > limit else None
        body = {
            "job_id": found.job.id,
            "collected_at": rfc3339_or_none(found.collected_at),
            "data": [read.to_row(row) for row in page],
            "next_cursor": more,
        }
        return JSONResponse(body)

    return _named(answer, _job_parameters(read), read)


def _every_row(
    first: list[dict[str, Any]],
    rows: Callable[[int, int], read_svc.JobRows],
    key: Callable[[dict[str, Any]], int],
) -> Iterator[dict[str, Any]]:
    """Every row from ``first`` on, read a page at a time."""
    page = first
    while page:
        yield from page
        page = rows(key(page[-1]), CSV_PAGE).rows


def _sorted(after: int, rows: Callable[[int, int], read_svc.JobRows]) -> Iterator[dict[str, Any]]:
    """Every row past the first ``after`` of a sorted read, a page at a time."""
    while page := rows(after, CSV_PAGE).rows:
        yield from page
        after += len(page)


def job_read_csv(
    svc: Any, user: Any, project_id: int, job_id: int, read: JobRead, values: dict[str, Any]
) -> Response:
    """Every row of one job's ``read`` (its filters' ``values``) as the CSV its endpoint
    answers ``Accept: text/csv`` with; the dashboard serves the same file. 404s come first."""
    start = -1 if read.key == "seq" else 0

    def rows(after: int, limit: int) -> read_svc.JobRows:
        return read_svc.job_rows(
            svc, user, project_id, job_id, read, values, after=after, limit=limit
        )

    first = rows(start, CSV_PAGE)
    return _job_csv(read, job_id, _every_row(first.rows, rows, lambda row: int(row[read.key])))


def _job_csv(read: JobRead, job_id: int, rows: Iterator[dict[str, Any]]) -> Response:
    to_cells = read.csv_cells or (lambda row: [_cell(row.get(c)) for c in read.csv])
    return StreamingResponse(
        csvfile.stream(read.csv, (to_cells(row) for row in rows)),
        media_type="text/csv; charset=utf-8",
        headers={
            "Content-Disposition": f'attachment; filename="{read.csv_name.format(job_id=job_id)}"'
        },
    )


# -- how one job's findings differ from another's (JobCompare) ------------------------------

Change = Annotated[
    Literal["new", "fixed", "unchanged"],
    Query(
        description="Which issues to list: `new` (found by job_id only), `fixed` (by "
        "other_job_id only) or `unchanged` (by both)."
    ),
]


def _compare_parameters(read: JobCompare) -> list[inspect.Parameter]:
    keyword = inspect.Parameter.KEYWORD_ONLY
    other = Annotated[int, Path(ge=1, le=MAX_ID, description=read.other_description), IdDigits]
    code = Annotated[str | None, Query(max_length=100, description=read.code_description)]
    return [
        inspect.Parameter("project_id", keyword, annotation=ProjectId),
        inspect.Parameter("job_id", keyword, annotation=JobId),
        inspect.Parameter("other_job_id", keyword, annotation=other),
        inspect.Parameter("user", keyword, annotation=User),
        inspect.Parameter("svc", keyword, annotation=Svc),
        inspect.Parameter("change", keyword, annotation=Change, default="new"),
        inspect.Parameter("code", keyword, annotation=code, default=None),
        inspect.Parameter("cursor", keyword, annotation=IdCursor, default=None),
        inspect.Parameter("limit", keyword, annotation=Limit, default=100),
    ]


def _compare_endpoint(read: JobCompare) -> Callable[..., Response]:
    def answer(**given: Any) -> Response:
        change: str = given["change"]
        limit: int = given["limit"]
        after = parse_cursor(given["cursor"]) or 0  # checked before anything is read
        found = read_svc.job_compare(
            given["svc"],
            given["user"],
            given["project_id"],
            given["job_id"],
            given["other_job_id"],
            read,
            change=change,
            code=given["code"],
            after=after,
            limit=limit + 1,
        )
        page, more = paged(found.found, limit, lambda pair: pair.id)
        by_code = [dataclasses.asdict(c) for c in found.counts]
        totals = {
            "new": sum(c.new for c in found.counts),
            "fixed": sum(c.fixed for c in found.counts),
            "unchanged": sum(c.unchanged for c in found.counts),
        }
        pairs = [{"id": f.id, "code": f.code, "severity": f.severity, "url": f.url} for f in page]
        data = {"counts": totals, "by_code": by_code, "change": change, read.listed: pairs}
        return JSONResponse(
            {
                "job_id": found.job.id,
                "collected_at": rfc3339_or_none(found.collected_at),
                "other_job_id": found.other.id,
                "other_collected_at": rfc3339_or_none(found.other_collected_at),
                "data": data,
                "next_cursor": more,
            }
        )

    return _named(answer, _compare_parameters(read), read)


def _mount(
    made: APIRouter,
    seen: dict[str, str],
    kind: str,
    read: Read | JobRead | JobCompare,
    endpoint: Callable[..., Response],
    model: type[BaseModel],
) -> None:
    for taken in (read.path, read.operation_id):
        if taken in seen:
            raise ValueError(f"{kind} declares the read {taken!r} of {seen[taken]}")
        seen[taken] = kind
    made.add_api_route(
        f"/projects/{{project_id}}/{read.path}",
        endpoint,
        methods=["GET"],
        response_model=model,
        operation_id=read.operation_id,
        summary=read.summary or None,
        tags=list(read.tags or (read.path.split("/")[0],)),
        responses=CSV_RESPONSE if isinstance(read, Read | JobRead) and read.csv else None,
    )


def _named(
    answer: Callable[..., Response],
    parameters: list[inspect.Parameter],
    read: Read | JobRead | JobCompare,
) -> Callable[..., Response]:
    """``answer`` as FastAPI reads an endpoint: these parameters, the read's name and doc."""
    answer.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    answer.__name__ = read.operation_id
    answer.__doc__ = read.description
    return answer


Declared = tuple[tuple[str, tuple[Read, ...], tuple[JobRead | JobCompare, ...]], ...]
# Routers already built, by the declarations they were built from (the reads themselves, by
# identity: each entry keeps its reads, so no other read takes an id while it is kept). Tests
# build hundreds of apps from a handful of registries; a few entries cover them.
_BUILT: dict[tuple[object, ...], tuple[Declared, APIRouter]] = {}
_KEEP = 8


def router(registry: Registry) -> APIRouter:
    """Every read the registry's kinds declare, mounted under ``/v1/projects/{project_id}``:
    built once per process for the same declarations. Its routes hold nothing of the registry
    or of an app (endpoints take the app's services from the request), so apps share them."""
    declared: Declared = tuple(
        (kind.name, tuple(kind.reads), tuple(kind.job_reads)) for kind in registry.kinds()
    )
    key = tuple(
        (name, *map(id, reads), None, *map(id, job_reads)) for name, reads, job_reads in declared
    )
    found = _BUILT.get(key)
    if found is not None:
        return found[1]
    made = _router(declared)
    if len(_BUILT) >= _KEEP:
        del _BUILT[next(iter(_BUILT))]
    _BUILT[key] = (declared, made)
    return made


def _router(declared: Declared) -> APIRouter:
    made = APIRouter(prefix="/v1", responses=problems.RESPONSES, route_class=CheckedRoute)
    seen: dict[str, str] = {}
    for name, reads, job_reads in declared:
        for read in reads:
            _mount(made, seen, name, read, _endpoint(read), response_model(read))
        for job_read in job_reads:
            if isinstance(job_read, JobCompare):
                endpoint = _compare_endpoint(job_read)
            else:
                endpoint = _job_endpoint(job_read)
            _mount(made, seen, name, job_read, endpoint, job_read.response)
    return made
