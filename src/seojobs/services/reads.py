"""Declared reads (:mod:`seojobs.reads`) answered for a user: the project is theirs, filters are
prepared, and "nothing yet" is the 404 the read declares. Never starts work.

Functions of the services rather than methods, so that every read takes the same path
whatever the services facade is made of.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from seojobs.reads import JobCompare, JobRead, Key, Read, RowMatch, SubjectMatch
from seojobs.records import (
    ChangeCount,
    ChangedFinding,
    CollectionRecord,
    JobRecord,
    ProjectRecord,
    UserRecord,
)
from seojobs.services.errors import NotFound
from seojobs.store import reads as read_sql
from seojobs.store.db import Connection, Database
from seojobs.store.reads import Position

# An elements cursor is one number: the collection's id and the elements already served.
SPAN = 1_000_000


class _Services(Protocol):
    @property
    def db(self) -> Database: ...

    def project(self, user: UserRecord, project_id: int) -> ProjectRecord: ...


@dataclass(frozen=True)
class Rows:
    rows: list[CollectionRecord]
    after: Position | None


@dataclass(frozen=True)
class Elements:
    """A page of the elements of one collection (a keyword research's keywords)."""

    collection: CollectionRecord
    rows: list[dict[str, Any]]
    after: Position | None


def prepared(read: Read, values: Mapping[str, Any]) -> dict[str, Any]:
    """The filters' values as compared (``prepare``d), of the filters given."""
    found: dict[str, Any] = {}
    for spec in read.filters:
        value = values.get(spec.name)
        if value is not None:
            found[spec.name] = spec.prepare(value) if spec.prepare is not None else value
    return found


def _subject(read: Read, values: Mapping[str, Any]) -> str | None:
    """What a 404 of a ``one`` read names: the subject its filters ask for."""
    for spec in read.filters:
        if spec.name in values and isinstance(spec.match, SubjectMatch):
            return next(iter(spec.match.subjects(values[spec.name], values)), None)
    return None


def _none_yet(read: Read, project_id: int, subject: str | None = None) -> NotFound:
    what = f"{read.kind} data" + (f" for {subject!r}" if subject is not None else "")
    return NotFound(f"{what} in project {project_id} (no {read.kind} job has completed)")


def _none_of(read: Read, project_id: int, values: Mapping[str, Any]) -> NotFound:
    what = "".join(
        f" {spec.named} {values[spec.name]!r}"
        for spec in read.filters
        if spec.named and values.get(spec.name) is not None
    )
    return NotFound(f"{read.kind} data{what} in project {project_id} (none completed)")


def rows(
    svc: _Services,
    user: UserRecord,
    project_id: int,
    read: Read,
    values: Mapping[str, Any],
    *,
    sort: str | None = None,
    after: Position | None = None,
    limit: int | None = None,
) -> Rows:
    """A page of a list read (every row when ``limit`` is None), after ``after``."""
    svc.project(user, project_id)
    wanted = prepared(read, values)
    with svc.db.read() as conn:
        # A history's page past the end is an empty page, as before; a latest read with a
        # cursor still needs something collected.
        first = after is None or read.source == "latest"
        if "kind" in read.empty and first and not read_sql.any_collected(conn, read, project_id):
            raise _none_yet(read, project_id)
        try:
            found = read_sql.page(
                conn,
                read,
                project_id,
                wanted,
                sort=sort or read.default_sort,
                after=after,
                limit=limit,
            )
        except read_sql.BadPosition:  # a cursor of another read
            raise NotFound("the page this cursor names") from None
        empty = "rows" in read.empty and not found.rows and after is None
        if empty and _nothing_selected(conn, read, project_id, wanted):
            raise _none_of(read, project_id, values)
    return Rows(found.rows, found.after)


def _nothing_selected(
    conn: Connection, read: Read, project_id: int, wanted: Mapping[str, Any]
) -> bool:
    """Whether a first page came back empty because nothing was collected of what the
    selecting filters name (a 404), not only because a narrowing one left nothing (a page)."""
    if all(spec.selects for spec in read.filters if spec.name in wanted):
        return True
    some = read_sql.page(
        conn,
        read,
        project_id,
        wanted,
        sort=read.default_sort,
        after=None,
        limit=1,
        selecting=True,
    )
    return not some.rows


def one(
    svc: _Services, user: UserRecord, project_id: int, read: Read, values: Mapping[str, Any]
) -> CollectionRecord:
    """The newest collection a ``one`` read's filters match; 404 before the first."""
    svc.project(user, project_id)
    wanted = prepared(read, values)
    with svc.db.read() as conn:
        found = read_sql.newest(conn, read, project_id, wanted)
    if found is None:
        raise _none_yet(read, project_id, _subject(read, wanted))
    return found


def job_history(
    svc: _Services, user: UserRecord, project_id: int, read: Read, job_id: int, *, limit: int
) -> list[CollectionRecord]:
    """Job ``job_id``'s newest collection of ``read`` (a history read) and up to
    ``limit - 1`` of its subject before it, newest first; empty when it collected none."""
    svc.project(user, project_id)
    with svc.db.read() as conn:
        return read_sql.job_history(conn, read, project_id, job_id, limit=limit)


def read_tests(read: Read) -> set[str]:
    """The filters of a read that test rows rather than select collections."""
    return {spec.name for spec in read.filters if isinstance(spec.match, RowMatch)}


def _sort_value(row: Mapping[str, Any], key: Key) -> tuple[int, Any]:
    value = row.get(key.field)
    if key.type == "number":
        if isinstance(value, int | float) and not isinstance(value, bool):
            return (0, -value if key.descending else value)
        return (1, 0)
    text = str(value).lower() if value is not None else None
    return (0, text) if text is not None else (1, "")


def elements(
    svc: _Services,
    user: UserRecord,
    project_id: int,
    read: Read,
    values: Mapping[str, Any],
    *,
    sort: str | None = None,
    after: Position | None = None,
    limit: int = 100,
) -> Elements:
    """A page of the elements of the newest collection the filters match (``read.elements``),
    filtered by the read's row tests and sorted by its keys. The position names the collection
    and the elements already served: a collection never changes, so later pages read the same
    one however many are collected in between (a collection is read whole: its list is the
    one a job wrote, at most a few thousand elements)."""
    if after is not None and (len(after) != 1 or not isinstance(after[0], int)):
        raise NotFound("the page this cursor names")  # a cursor of another read
    svc.project(user, project_id)
    wanted = prepared(read, values)
    tests = [
        (spec.match, wanted[spec.name])
        for spec in read.filters
        if spec.name in wanted and isinstance(spec.match, RowMatch)
    ]  # of the elements, not of the collection
    chosen = {name: value for name, value in wanted.items() if name not in read_tests(read)}
    with svc.db.read() as conn:
        if after is None:
            found = read_sql.newest(conn, read, project_id, chosen)
        else:
            found = read_sql.collection(conn, read, project_id, int(after[0]) // SPAN)
    if found is None:
        if after is not None:
            raise NotFound(f"the cursor's {read.kind} collection of project {project_id}")
        raise _none_yet(read, project_id, _subject(read, chosen))
    data = found.data if isinstance(found.data, dict) else {}
    every = [e for e in data.get(read.elements or "") or [] if isinstance(e, dict)]
    kept = [e for e in every if all(match.test(e, v) for match, v in tests)]
    keys = read.orders[sort or read.default_sort]
    kept.sort(key=lambda e: [_sort_value(e, k) for k in keys])
    start = int(after[0]) % SPAN if after is not None else 0
    page = kept[start : start + limit]
    more = start + limit < len(kept)
    return Elements(found, page, [found.id * SPAN + start + limit] if more else None)


# -- reads of one job (JobRead) ----------------------------------------------------------


class _Jobs(Protocol):
    def get(self, user: UserRecord, job_id: int, *, summary: bool = False) -> JobRecord: ...


class _JobServices(_Services, Protocol):
    @property
    def jobs(self) -> _Jobs: ...


@dataclass(frozen=True)
class JobRows:
    """A page of a job's read: the job, when its collection was made, the rows (one more than
    asked, when there are more: the caller cuts the page)."""

    job: JobRecord
    collected_at: datetime | None
    rows: list[dict[str, Any]]


def completed(
    jobs: _Jobs, db: Database, user: UserRecord, project_id: int, job_id: int, kind: str, noun: str
) -> tuple[JobRecord, datetime | None]:
    """A completed ``kind`` job of the project (the caller checked the project is the user's)
    and when its collection was made; ``NotFound`` (naming it by ``noun``) whichever way it is
    not one: nothing collected is nothing to read."""
    try:
        job: JobRecord | None = jobs.get(user, job_id, summary=True)
    except NotFound:
        job = None
    if job is None or job.project_id != project_id or job.kind != kind or job.state != "completed":
        raise NotFound(f"{noun} {job_id} in project {project_id}")

    def collected_at() -> datetime | None:
        with db.read() as conn:
            return read_sql.job_collected_at(conn, job_id)

    return job, db.once(("collected_at", job_id), collected_at) or job.completed_at


def job_rows(
    svc: _JobServices,
    user: UserRecord,
    project_id: int,
    job_id: int,
    read: JobRead,
    values: Mapping[str, Any],
    *,
    after: int,
    limit: int,
    sort: str | None = None,
) -> JobRows:
    """Up to ``limit`` rows of ``read`` for one completed job of its kind in the user's
    project, after ``after`` (sorted: after that many rows)."""
    svc.project(user, project_id)
    job, collected = completed(svc.jobs, svc.db, user, project_id, job_id, read.kind, read.noun)
    wanted = {
        spec.name: spec.prepare(value) if spec.prepare is not None else value
        for spec in read.filters
        if (value := values.get(spec.name)) is not None
    }
    with svc.db.read() as conn:
        found = read_sql.job_rows(conn, read, job_id, wanted, after=after, limit=limit, sort=sort)
    return JobRows(job, collected, found)


@dataclass(frozen=True)
class Compared:
    """Two completed jobs (each with when its collection was made), how their findings
    changed per code, and a page of the pairs of one change (one more than asked, when there
    are more: the caller cuts the page)."""

    job: JobRecord
    collected_at: datetime | None
    other: JobRecord
    other_collected_at: datetime | None
    counts: list[ChangeCount]
    found: list[ChangedFinding]


def job_compare(
    svc: _JobServices,
    user: UserRecord,
    project_id: int,
    job_id: int,
    other_id: int,
    read: JobCompare,
    *,
    change: str,
    code: str | None,
    after: int,
    limit: int,
) -> Compared:
    """How ``job_id``'s findings differ from ``other_id``'s, both completed jobs of the
    read's kind in the user's project (``NotFound`` otherwise, the first job checked first)."""
    svc.project(user, project_id)
    job, collected = completed(svc.jobs, svc.db, user, project_id, job_id, read.kind, read.noun)
    other, other_collected = completed(
        svc.jobs, svc.db, user, project_id, other_id, read.kind, read.noun
    )
    with svc.db.read() as conn:
        counts = read_sql.change_counts(conn, read, job_id, other_id)
        found = read_sql.changed(
            conn, read, job_id, other_id, change=change, code=code, after_id=after, limit=limit
        )
    return Compared(job, collected, other, other_collected, counts, found)
