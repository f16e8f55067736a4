"""The one reader of declared reads (:mod:`seojobs.reads`): a read's filters and order become
SQL over the project's collections of its kind, and pages are keyset pages.

A page is read after a *position*: the values of the order's keys of the last row served,
the collection id last (it breaks ties), and, for a read of the newest collection of each
subject, the newest collection id the first page saw (its snapshot). Rows added later sort
before the position (a history's newer rows) or are not in the snapshot, so a cursor stays
valid while rows are added, and every filter is in the query or tested before the page is
cut, so a page is full unless it is the last.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    Select,
    String,
    and_,
    bindparam,
    case,
    cast,
    exists,
    func,
    literal,
    or_,
    select,
)

from seojobs.reads import (
    FieldMatch,
    Filter,
    JobCompare,
    JobRead,
    Key,
    Read,
    RowMatch,
    SubjectMatch,
)
from seojobs.records import ChangeCount, ChangedFinding, CollectionRecord, FindingRecord
from seojobs.store import kindrows
from seojobs.store.results import subject_key
from seojobs.store.tables import collections, findings, job_items

CHUNK = 500  # rows read at once while row tests (RowMatch) skip some
Position = list[Any]  # [snapshot?] + the sort columns' values of the last row served


class BadPosition(ValueError):
    """A cursor's position is not one this read's order makes."""


@dataclass(frozen=True)
class Page:
    rows: list[CollectionRecord]
    after: Position | None  # where the next page starts; None: this is the last


def _field(name: str) -> Any:
    return collections.c.data[name]


def _compare(match: FieldMatch, value: Any) -> Any:
    found = _field(match.field)
    if match.compare == "lower":
        return func.lower(found.as_string()) == str(value).lower()
    if match.compare == "contains":
        text = str(value).lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        return func.lower(found.as_string()).like(f"%{text}%", escape="\\")
    if match.compare == "text":
        return cast(found.as_string(), String) == str(value)
    if isinstance(value, bool):  # JSON true reads as 1 on SQLite, "true" on PostgreSQL
        flag = func.coalesce(cast(found.as_string(), String), "false").in_(("true", "1"))
        return flag if value else ~flag
    if isinstance(value, int):
        return found.as_integer() == value
    if isinstance(value, float):
        return found.as_float() == value
    return found.as_string() == value


def _condition(spec: Filter, values: Mapping[str, Any]) -> Any:
    value = values[spec.name]
    if isinstance(spec.match, FieldMatch):
        return _compare(spec.match, value)
    if isinstance(spec.match, SubjectMatch):
        keys = [subject_key(s) for s in spec.match.subjects(value, values)]
        return collections.c.subject.in_(keys)
    return None  # a RowMatch: tested on the rows


Column = tuple[ColumnElement[Any], bool, type]  # the SQL column, descending, its cursor type


def _columns(keys: Sequence[Key]) -> list[Column]:
    """The SQL columns a read is ordered by, each with its direction; nulls sort last."""
    columns: list[Column] = []
    for key in keys:
        if key.type == "id":
            columns.append((collections.c.id, key.descending, int))
            continue
        if key.type == "subject":
            columns.append((collections.c.subject, key.descending, str))
            continue
        found = _field(key.field)
        number = key.type == "number"
        value: ColumnElement[Any] = (
            found.as_float() if number else func.lower(cast(found.as_string(), String))
        )
        missing = case((value.is_(None), 1), else_=0)
        default: Any = 0 if number else ""
        columns.append((missing, False, int))
        columns.append((func.coalesce(value, default), key.descending, float if number else str))
    if not any(key.type == "id" for key in keys):
        columns.append((collections.c.id, False, int))
    return columns


def _fits(columns: list[Column], values: Sequence[Any]) -> bool:
    """Whether a position read from a cursor is one of this order's (else the cursor is not
    one this read made: refused before it reaches SQL)."""
    if len(values) != len(columns):
        return False
    for (_column, _desc, kind), value in zip(columns, values, strict=True):
        if isinstance(value, bool) or not isinstance(
            value, kind if kind is not float else (int, float)
        ):
            return False
    return True


def _after(columns: list[Column], values: Sequence[Any]) -> Any:
    """Rows past ``values`` in the order of ``columns``."""
    alternatives = []
    for i, (column, descending, _kind) in enumerate(columns):
        same = [columns[j][0] == values[j] for j in range(i)]
        alternatives.append(and_(*same, column < values[i] if descending else column > values[i]))
    return or_(*alternatives)


def _published(read: Read, project_id: int) -> list[ColumnElement[bool]]:
    found = [
        collections.c.project_id == project_id,
        collections.c.kind == read.kind,
        collections.c.committed.is_(True),
    ]
    if read.subject_prefixes:
        found.append(
            or_(
                *(
                    collections.c.subject.startswith(prefix, autoescape=True)
                    for prefix in read.subject_prefixes
                )
            )
        )
    return found


def snapshot(conn: Connection, read: Read, project_id: int) -> int:
    """The newest published collection id of the read's kind in the project (0: none)."""
    query = select(func.coalesce(func.max(collections.c.id), 0)).where(
        *_published(read, project_id)
    )
    return int(conn.execute(query).scalar_one())


def any_collected(conn: Connection, read: Read, project_id: int) -> bool:
    return bool(conn.execute(select(exists().where(*_published(read, project_id)))).scalar())


def _query(
    read: Read,
    project_id: int,
    values: Mapping[str, Any],
    newest: int | None,
    selecting: bool = False,
) -> Select[Any]:
    published = _published(read, project_id)
    if read.source == "latest":
        inner = select(func.max(collections.c.id)).where(*published)
        if newest is not None:
            inner = inner.where(collections.c.id <= newest)
        query = select(collections).where(
            collections.c.id.in_(inner.group_by(collections.c.subject))
        )
    else:
        query = select(collections).where(*published)
    for spec in read.filters:
        if spec.name in values and (spec.selects or not selecting):
            condition = _condition(spec, values)
            if condition is not None:
                query = query.where(condition)
    return query


def _tests(
    read: Read, values: Mapping[str, Any], selecting: bool = False
) -> list[tuple[RowMatch, Any]]:
    return [
        (spec.match, values[spec.name])
        for spec in read.filters
        if isinstance(spec.match, RowMatch)
        and spec.name in values
        and (spec.selects or not selecting)
    ]


def _wanted(found: CollectionRecord, tests: list[tuple[RowMatch, Any]]) -> bool:
    data = found.data if isinstance(found.data, dict) else {}
    return all(match.test(data, value) for match, value in tests)


def _scan(
    conn: Connection,
    query: Select[Any],
    columns: list[Column],
    start: Sequence[Any] | None,
    chunk: int,
) -> Iterator[tuple[CollectionRecord, list[Any]]]:
    """Every row of ``query`` past ``start`` in order, with its position, read ``chunk`` rows
    at a time."""
    labelled = [column.label(f"k{i}") for i, (column, _desc, _kind) in enumerate(columns)]
    ordered = [column.desc() if desc else column.asc() for column, desc, _kind in columns]
    position = list(start) if start is not None else None
    names = [c.name for c in collections.c]
    while True:
        page = query.add_columns(*labelled).order_by(*ordered).limit(chunk)
        if position is not None:
            page = page.where(_after(columns, position))
        rows = conn.execute(page).all()
        for row in rows:
            mapping = row._mapping
            position = [mapping[f"k{i}"] for i in range(len(columns))]
            yield CollectionRecord(**{name: mapping[name] for name in names}), position
        if len(rows) < chunk:
            return


def page(
    conn: Connection,
    read: Read,
    project_id: int,
    values: Mapping[str, Any],
    *,
    sort: str,
    after: Position | None,
    limit: int | None,
    selecting: bool = False,
) -> Page:
    """A page of ``read`` (every row when ``limit`` is None): ``values`` are the filters'
    prepared values (absent: not filtered), ``after`` the position a cursor gave.
    ``selecting``: only the filters that select (``Filter.selects``) apply; the others still
    name subjects with them (a URL's form factors)."""
    keys = read.orders[sort]
    columns = _columns(keys)
    uses_snapshot = read.source == "latest" and read.snapshot
    if uses_snapshot:
        newest = after[0] if after is not None else snapshot(conn, read, project_id)
        start = after[1:] if after is not None else None
    else:
        newest, start = None, after
    if not isinstance(newest, int | None) or (start is not None and not _fits(columns, start)):
        raise BadPosition(after)
    tests = _tests(read, values, selecting)
    want = None if limit is None else limit + 1
    chunk = CHUNK if tests or want is None else max(want, 1)
    found: list[tuple[CollectionRecord, list[Any]]] = []
    for record, position in _scan(
        conn, _query(read, project_id, values, newest, selecting), columns, start, chunk
    ):
        if tests and not _wanted(record, tests):
            continue
        found.append((record, position))
        if want is not None and len(found) >= want:
            break
    if limit is None or len(found) <= limit:
        return Page([r for r, _p in found], None)
    shown = found[:limit]
    last = shown[-1][1]
    return Page([r for r, _p in shown], ([newest] if uses_snapshot else []) + last)


def newest(
    conn: Connection, read: Read, project_id: int, values: Mapping[str, Any]
) -> CollectionRecord | None:
    """The newest published collection the read's filters match (a ``one`` read)."""
    query = _query(read, project_id, values, None).order_by(collections.c.id.desc())
    tests = _tests(read, values)
    for row in conn.execute(query.limit(None if tests else 1)):
        record = CollectionRecord(**row._asdict())
        if _wanted(record, tests):
            return record
    return None


def collection(
    conn: Connection, read: Read, project_id: int, collection_id: int
) -> CollectionRecord | None:
    """One published collection of the read's kind in the project, by id."""
    query = select(collections).where(
        *_published(read, project_id), collections.c.id == collection_id
    )
    row = conn.execute(query).first()
    return CollectionRecord(**row._asdict()) if row is not None else None


@functools.lru_cache(maxsize=64)
def _job_history_statement(kind: str, subject_prefixes: tuple[str, ...]) -> Select[Any]:
    """Built once per kind (and subject prefixes), its values bound at execution: building
    the join of a subquery again cost more than running it."""
    published = [
        collections.c.project_id == bindparam("project_id"),
        collections.c.kind == kind,
        collections.c.committed.is_(True),
    ]
    if subject_prefixes:
        published.append(
            or_(
                *(
                    collections.c.subject.startswith(prefix, autoescape=True)
                    for prefix in subject_prefixes
                )
            )
        )
    this = (
        select(collections.c.id, collections.c.subject)
        .where(*published, collections.c.job_id == bindparam("job_id"))
        .order_by(collections.c.id.desc())
        .limit(1)
        .subquery("this")
    )
    return (
        select(collections)
        .join(
            this,
            and_(collections.c.subject == this.c.subject, collections.c.id <= this.c.id),
        )
        .where(*published)
        .order_by(collections.c.id.desc())
        .limit(bindparam("depth"))
    )


def job_history(
    conn: Connection, read: Read, project_id: int, job_id: int, *, limit: int
) -> list[CollectionRecord]:
    """The newest published collection of job ``job_id`` the read selects, then up to
    ``limit - 1`` of the same subject before it, newest first, in one statement (a job
    view's score trend); empty when the job collected nothing the read selects."""
    query = _job_history_statement(read.kind, read.subject_prefixes)
    rows = conn.execute(query, {"project_id": project_id, "job_id": job_id, "depth": limit})
    return [CollectionRecord(**row._asdict()) for row in rows]


# -- reads of one job (JobRead) ----------------------------------------------------------


def job_collected_at(conn: Connection, job_id: int) -> datetime | None:
    """When the job's published collection was made (what its kind's ``latest`` says)."""
    query = select(func.max(collections.c.collected_at)).where(
        collections.c.job_id == job_id, collections.c.committed.is_(True)
    )
    found: datetime | None = conn.execute(query).scalar_one()
    return found


def job_rows(
    conn: Connection,
    read: JobRead,
    job_id: int,
    values: Mapping[str, Any],
    *,
    after: int,
    limit: int,
    sort: str | None = None,
) -> list[dict[str, Any]]:
    """Up to ``limit`` rows of the job's ``read.table`` past ``after`` (in ``read.key``
    order), the filters' prepared ``values`` (absent: not filtered) in the query. ``sort``
    (one of ``read.sorts``, ``-`` first for descending): in that column's order instead,
    ``after`` then the number of rows to skip."""
    table = findings if read.table == "findings" else kindrows.table(read.table)
    key = table.c[read.key]
    query = select(table).where(table.c.job_id == job_id)
    if sort is None:
        query = query.where(key > after)
    for spec in read.filters:
        if spec.name not in values:
            continue
        column, value = table.c[spec.match.column], values[spec.name]
        if spec.match.compare == "between":
            query = query.where(column.between(*value))
        elif spec.match.compare == "is":
            query = query.where(column.is_(value))
        else:
            query = query.where(column == value)
    if sort is not None:
        column = table.c[sort.removeprefix("-")]
        order = column.desc() if sort.startswith("-") else column.asc()
        query = query.order_by(order.nulls_last(), key).offset(after)
    else:
        query = query.order_by(key)
    rows = conn.execute(query.limit(limit))
    return [dict(row._mapping) for row in rows]


# -- how one job's findings differ from another's (JobCompare) ------------------------------
# Done in SQL, so a 5,000-page audit needs no more than a few indexed queries.

CHANGES = ("new", "fixed", "unchanged")


def _pairs(read: JobCompare, job_id: int, other_id: int) -> Any:
    """One row per (code, pair) either job found, in one pass over both jobs' findings:
    whether each found it, and the id of each one's first finding of it. A finding without
    ``read.pair`` in its data compares as ""."""
    pair = func.coalesce(findings.c.data[read.pair].as_string(), literal(""))
    found = (
        select(
            findings.c.job_id,
            findings.c.code,
            pair.label("pair"),
            findings.c.severity,
            findings.c.id,
        )
        .where(findings.c.job_id.in_((job_id, other_id)))
        .subquery()
    )
    # Two tests, not one and its negation: a job compared with itself is all unchanged.
    return (
        select(
            found.c.code,
            found.c.pair,
            func.min(found.c.severity).label("severity"),
            func.min(case((found.c.job_id == job_id, found.c.id))).label("id"),
            func.min(case((found.c.job_id == other_id, found.c.id))).label("other_id"),
        )
        .group_by(found.c.code, found.c.pair)
        .subquery()
    )


def _change(pairs: Any, change: str) -> ColumnElement[bool]:
    if change == "new":
        return and_(pairs.c.id.is_not(None), pairs.c.other_id.is_(None))
    if change == "fixed":
        return and_(pairs.c.id.is_(None), pairs.c.other_id.is_not(None))
    return and_(pairs.c.id.is_not(None), pairs.c.other_id.is_not(None))


def change_counts(
    conn: Connection, read: JobCompare, job_id: int, other_id: int
) -> list[ChangeCount]:
    """Per code: how many (code, pair)s ``job_id`` found that ``other_id`` did not (``new``),
    ``other_id`` found that ``job_id`` did not (``fixed``), and both found (``unchanged``)."""
    pairs = _pairs(read, job_id, other_id)
    counted = [func.sum(case((_change(pairs, c), 1), else_=0)) for c in CHANGES]
    query = (
        select(pairs.c.code, func.min(pairs.c.severity), *counted)
        .group_by(pairs.c.code)
        .order_by(pairs.c.code)
    )
    return [
        ChangeCount(
            code=code, severity=severity, new=int(new), fixed=int(fixed), unchanged=int(same)
        )
        for code, severity, new, fixed, same in conn.execute(query)
    ]


def changed(
    conn: Connection,
    read: JobCompare,
    job_id: int,
    other_id: int,
    *,
    change: str,
    code: str | None = None,
    after_id: int = 0,
    limit: int = 100,
) -> list[ChangedFinding]:
    """The (code, pair)s of one ``change`` (``new``, ``fixed`` or ``unchanged``), ordered by
    the id of the first finding of each (``other_id``'s for ``fixed``): also the cursor."""
    pairs = _pairs(read, job_id, other_id)
    key = pairs.c.other_id if change == "fixed" else pairs.c.id
    query = select(key, pairs.c.code, pairs.c.severity, pairs.c.pair).where(
        _change(pairs, change), key > after_id
    )
    if code is not None:
        query = query.where(pairs.c.code == code)
    rows = conn.execute(query.order_by(key).limit(limit))
    return [ChangedFinding(id=i, code=c, severity=s, url=u or None) for i, c, s, u in rows]


def findings_naming(conn: Connection, job_id: int, url: str, *, limit: int) -> list[FindingRecord]:
    """Up to ``limit`` of the job's findings about ``url`` (``data["url"]``: an item's own and
    the job-wide ones naming it), in the order found."""
    query = (
        select(findings)
        .where(findings.c.job_id == job_id, findings.c.data["url"].as_string() == url)
        .order_by(findings.c.id)
        .limit(limit)
    )
    return [FindingRecord(**row._asdict()) for row in conn.execute(query)]


def table_seqs(conn: Connection, job_id: int, table: str, urls: list[str]) -> dict[str, int]:
    """The ``seq`` of each of ``urls`` that the job's rows in a kind's ``table`` hold."""
    rows = kindrows.table(table)
    query = select(rows.c.url, rows.c.seq).where(rows.c.job_id == job_id, rows.c.url.in_(urls))
    return {url: int(seq) for url, seq in conn.execute(query)}


def item_seqs(conn: Connection, job_id: int, item_ids: list[int]) -> list[tuple[int, int]]:
    """``(item id, seq)`` of those of ``item_ids`` that are the job's items."""
    if not item_ids:
        return []
    query = select(job_items.c.id, job_items.c.seq).where(
        job_items.c.id.in_(item_ids), job_items.c.job_id == job_id
    )
    return [(int(i), int(seq)) for i, seq in conn.execute(query)]
