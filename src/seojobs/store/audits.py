"""Reads of site audits: an audit's pages (filtered, in the order found) and the comparison
of two audits' findings by (code, URL), both done in SQL so a 5,000-page audit needs no
more than a few indexed queries."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Select, and_, func, literal, select

from seojobs.store.records import AuditPageRecord, ChangeCount, ChangedFinding
from seojobs.store.tables import audit_pages, collections, findings


def collected_at(conn: Connection, job_id: int) -> datetime | None:
    """When the job's published collection was made (what ``audits/latest`` says)."""
    query = select(func.max(collections.c.collected_at)).where(
        collections.c.job_id == job_id, collections.c.committed.is_(True)
    )
    found: datetime | None = conn.execute(query).scalar_one()
    return found


def pages_page(
    conn: Connection,
    job_id: int,
    *,
    statuses: tuple[int, int] | None = None,
    indexable: bool | None = None,
    after_seq: int = -1,
    limit: int = 100,
) -> list[AuditPageRecord]:
    """``statuses``: the inclusive range of HTTP statuses to keep (a code or a class)."""
    query = select(audit_pages).where(audit_pages.c.job_id == job_id, audit_pages.c.seq > after_seq)
    if statuses is not None:
        query = query.where(audit_pages.c.status.between(*statuses))
    if indexable is not None:
        query = query.where(audit_pages.c.indexable.is_(indexable))
    rows = conn.execute(query.order_by(audit_pages.c.seq).limit(limit))
    return [AuditPageRecord(**r._asdict()) for r in rows]


def _keyed(job_id: int) -> Any:
    """One row per (code, url) a job found, with its severity and first finding's id. A
    finding's page is ``data["url"]``; one about no page compares as ""."""
    url = func.coalesce(findings.c.data["url"].as_string(), literal(""))
    found = (
        select(findings.c.code, url.label("url"), findings.c.severity, findings.c.id)
        .where(findings.c.job_id == job_id)
        .subquery()
    )
    return (
        select(
            found.c.code,
            found.c.url,
            func.min(found.c.severity).label("severity"),
            func.min(found.c.id).label("id"),
        )
        .group_by(found.c.code, found.c.url)
        .subquery()
    )


def _against(job_id: int, other_id: int) -> tuple[Any, Any, Any]:
    """``job_id``'s pairs left-joined to ``other_id``'s: (pairs, theirs, the join)."""
    mine, theirs = _keyed(job_id), _keyed(other_id)
    on = and_(mine.c.code == theirs.c.code, mine.c.url == theirs.c.url)
    return mine, theirs, mine.outerjoin(theirs, on)


def change_counts(conn: Connection, job_id: int, other_id: int) -> list[ChangeCount]:
    """Per code: how many (code, url) pairs ``job_id`` found that ``other_id`` did not
    (``new``), both found (``unchanged``), and ``other_id`` found that ``job_id`` did not
    (``fixed``)."""
    counts: dict[str, dict[str, Any]] = {}
    for first, second, absent, present in (
        (job_id, other_id, "new", "unchanged"),
        (other_id, job_id, "fixed", None),
    ):
        mine, theirs, joined = _against(first, second)
        query: Select[Any] = (
            select(mine.c.code, func.min(mine.c.severity), func.count(), func.count(theirs.c.code))
            .select_from(joined)
            .group_by(mine.c.code)
        )
        for code, severity, total, matched in conn.execute(query):
            row = counts.setdefault(
                code, {"code": code, "severity": severity, "new": 0, "fixed": 0, "unchanged": 0}
            )
            row[absent] = int(total) - int(matched)
            if present:
                row[present] = int(matched)
    return [ChangeCount(**row) for _code, row in sorted(counts.items())]


def changed(
    conn: Connection,
    job_id: int,
    other_id: int,
    *,
    change: str,
    code: str | None = None,
    after_id: int = 0,
    limit: int = 100,
) -> list[ChangedFinding]:
    """The (code, url) pairs of one ``change`` (``new``, ``fixed`` or ``unchanged``), ordered
    by the id of the first finding of each (``other_id``'s for ``fixed``): also the cursor."""
    first, second = (other_id, job_id) if change == "fixed" else (job_id, other_id)
    mine, theirs, joined = _against(first, second)
    kept = theirs.c.code.is_not(None) if change == "unchanged" else theirs.c.code.is_(None)
    query = (
        select(mine.c.id, mine.c.code, mine.c.severity, mine.c.url)
        .select_from(joined)
        .where(kept, mine.c.id > after_id)
    )
    if code is not None:
        query = query.where(mine.c.code == code)
    rows = conn.execute(query.order_by(mine.c.id).limit(limit))
    return [ChangedFinding(id=i, code=c, severity=s, url=u or None) for i, c, s, u in rows]
