"""Rows a job writes to a table its kind owns (a site audit's pages), by the table's name.

Kinds import no SQLAlchemy, so they name the table and hand plain dicts over; the table is
defined in the store (or, for a plug-in, registered here by the plug-in) and has a ``job_id``
column. A job replaces all of its rows at once: a phase that runs again after a rescue (the
audit's site-wide phase) then leaves one set of rows, not two.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Table, delete, insert

from seojobs.store.jobs import fence
from seojobs.store.tables import audit_pages

_TABLES: dict[str, Table] = {}
CHUNK = 500  # rows per INSERT: SQLite caps bound parameters per statement


def register(table: Table) -> None:
    """Let jobs write ``table`` (it must have a ``job_id`` column)."""
    if "job_id" not in table.c:
        raise ValueError(f"table {table.name} has no job_id column")
    _TABLES[table.name] = table


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
) -> None:
    """Replace the job's rows of table ``name`` with ``rows``, fenced by the job's claim."""
    found = table(name)
    fence(conn, job_id, attempt, now)
    conn.execute(delete(found).where(found.c.job_id == job_id))
    for start in range(0, len(rows), CHUNK):
        chunk = [{**row, "job_id": job_id} for row in rows[start : start + CHUNK]]
        conn.execute(insert(found), chunk)


register(audit_pages)
