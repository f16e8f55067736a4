"""Tables kinds own (a site audit's pages), and the rows a job writes to them by name.

Kinds import no SQLAlchemy: a kind declares its table as plain data (``seojobs.rowshape``,
``Kind.tables``) and this module builds it (:func:`declare`, when a registry adds the kind);
a plug-in may instead :func:`register` a table of its own. Every such table has a ``job_id``
column. A job replaces all of its rows at once: a phase that runs again after a rescue (the
audit's site-wide phase) then leaves one set of rows, not two.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    Column,
    Connection,
    ForeignKey,
    Integer,
    String,
    Table,
    Text,
    delete,
    insert,
    select,
)
from sqlalchemy.types import TypeEngine

from seojobs import jsontext
from seojobs.rowshape import ColumnShape, KindTable
from seojobs.store.jobs import _binder, bound_insert, fence, insert_rows
from seojobs.store.tables import BigId, metadata

_TABLES: dict[str, Table] = {}
_DECLARED: dict[str, KindTable[Any]] = {}
CHUNK = 500  # rows per INSERT: SQLite caps bound parameters per statement


def register(table: Table) -> None:
    """Let jobs write ``table`` (it must have a ``job_id`` column)."""
    if "job_id" not in table.c:
        raise ValueError(f"table {table.name} has no job_id column")
    _TABLES[table.name] = table


def _type(shape: ColumnShape) -> TypeEngine[Any]:
    if shape.type == "str":
        return String(shape.length) if shape.length else Text()
    types: dict[str, TypeEngine[Any]] = {"int": Integer(), "bool": Boolean(), "json": JSON()}
    return types[shape.type]


def _column(shape: ColumnShape, key: tuple[str, ...]) -> Column[Any]:
    if shape.name == "job_id":  # the job's rows go with it
        return Column("job_id", BigId, ForeignKey("jobs.id", ondelete="CASCADE"), primary_key=True)
    if shape.name in key:
        return Column(shape.name, _type(shape), primary_key=True, autoincrement=False)
    return Column(shape.name, _type(shape), nullable=shape.nullable)


def declare(shape: KindTable[Any]) -> Table:
    """The table of a kind's declaration, built once into seojobs' metadata (so migrations
    are compared with it) and registered for jobs to write. Declaring it again is a no-op;
    another declaration of the same name is refused."""
    known = _DECLARED.get(shape.name)
    if known is not None:
        if known != shape:
            raise ValueError(f"table {shape.name!r} is declared twice, differently")
        return _TABLES[shape.name]
    found = Table(shape.name, metadata, *(_column(c, shape.key) for c in shape.columns()))
    register(found)
    _DECLARED[shape.name] = shape
    return found


def table(name: str) -> Table:
    try:
        return _TABLES[name]
    except KeyError:
        raise ValueError(f"no kind table named {name!r}") from None


def replace(
    conn: Connection,
    job_id: int,
    attempt: int,
    name: str,
    rows: Sequence[Mapping[str, Any]],
    now: datetime,
    *,
    append: bool = False,
) -> None:
    """Replace the job's rows of table ``name`` with ``rows`` (``append``: add them), fenced
    by the job's claim."""
    found = table(name)
    fence(conn, job_id, attempt, now)
    if not append:
        conn.execute(delete(found).where(found.c.job_id == job_id))
    if rows and conn.dialect.name == "postgresql" and _copyable(found, rows[0]):
        _copy(conn, found, job_id, rows)
        return
    if rows and conn.dialect.name == "sqlite" and _copyable(found, rows[0]):
        _insert_sqlite(conn, found, job_id, rows)
        return
    for start in range(0, len(rows), CHUNK):
        chunk = [{**row, "job_id": job_id} for row in rows[start : start + CHUNK]]
        conn.execute(insert(found), chunk)


def _copyable(found: Table, first: Mapping[str, Any]) -> bool:
    """Whether COPY writes the rows as INSERT would: every column the rows leave out has no
    default to fill in (COPY applies the server's defaults, never SQLAlchemy's)."""
    return all(c.default is None for c in found.c if c.name not in first and c.name != "job_id")


def _copy(conn: Connection, found: Table, job_id: int, rows: Sequence[Mapping[str, Any]]) -> None:
    """The rows in one ``COPY ... FROM STDIN`` on the transaction's connection: one stream,
    where ``executemany`` sent each row as an INSERT of its own that the server parsed and
    planned (a 5,000-page audit's page table took 2 s of the worker's DB thread,
    bench/audit.py; COPY about a tenth). Values are adapted as SQLAlchemy binds them: a JSON
    column's value through ``jsontext.dumps`` (None is JSON null), a key a row leaves out NULL."""
    names = [c.name for c in found.c if c.name == "job_id" or c.name in rows[0]]
    as_json = {c.name for c in found.c if isinstance(c.type, JSON)}
    columns = ", ".join(conn.dialect.identifier_preparer.quote(n) for n in names)
    target = conn.dialect.identifier_preparer.format_table(found)
    driver = conn.connection.driver_connection
    assert driver is not None
    with driver.cursor() as cursor, cursor.copy(f"COPY {target} ({columns}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row(
                [
                    job_id
                    if n == "job_id"
                    else jsontext.dumps(row[n])
                    if n in as_json and n in row
                    else row.get(n)
                    for n in names
                ]
            )


def _insert_sqlite(
    conn: Connection, found: Table, job_id: int, rows: Sequence[Mapping[str, Any]]
) -> None:
    """The rows in INSERTs of many rows each (``jobs.insert_rows``), each value bound as its
    column's type binds it (a JSON column's through ``jsontext.dumps``, a boolean as 0 or
    1), a key a row leaves out NULL: SQLAlchemy's executemany ran the statement once a row,
    each row's parameters built and processed in Python (a 5,000-page audit's page table)."""
    names = [c.name for c in found.c if c.name == "job_id" or c.name in rows[0]]
    statement, order = _INSERTS.get((found.name, *names)) or _insert_of(found, names)
    binders = [(n, _binder(found.c[n], conn.dialect)) for n in names if n != "job_id"]
    values = [(job_id, *(bind(row.get(name)) for name, bind in binders)) for row in rows]
    insert_rows(conn, statement, order, values)


def _insert_of(found: Table, names: list[str]) -> tuple[Any, tuple[str, ...]]:
    """The INSERT of one row of ``names`` (job_id first), built once per table and names."""
    ordered = ["job_id", *(n for n in names if n != "job_id")]
    made = _INSERTS[(found.name, *names)] = bound_insert(insert(found), "k_", " ".join(ordered))
    return made


_INSERTS: dict[tuple[str, ...], tuple[Any, tuple[str, ...]]] = {}


def rows_of(
    conn: Connection, name: str, job_id: int, columns: Sequence[str], limit: int
) -> list[dict[str, Any]]:
    """``columns`` of the job's first ``limit`` rows of table ``name``, in key order."""
    found = table(name)
    query = (
        select(*(found.c[c] for c in columns))
        .where(found.c.job_id == job_id)
        .order_by(*found.primary_key.columns)
        .limit(limit)
    )
    return [dict(row._mapping) for row in conn.execute(query)]
