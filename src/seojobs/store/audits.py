"""The comparison of two site audits' findings by (code, URL), done in SQL so a 5,000-page
audit needs no more than a few indexed queries (an audit's issues and pages are declared reads:
``seojobs.store.reads``)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, and_, case, func, literal, select
from sqlalchemy.sql.elements import ColumnElement

from seojobs.records import ChangeCount, ChangedFinding, FindingRecord
from seojobs.store import kindrows
from seojobs.store.tables import findings

CHANGES = ("new", "fixed", "unchanged")


def _pairs(job_id: int, other_id: int) -> Any:
    """One row per (code, url) either job found, in one pass over both jobs' findings: whether
    each found it, and the id of each one's first finding of it. A finding's page is
    ``data["url"]``; one about no page compares as ""."""
    url = func.coalesce(findings.c.data["url"].as_string(), literal(""))
    found = (
        select(
            findings.c.job_id, findings.c.code, url.label("url"), findings.c.severity, findings.c.id
        )
        .where(findings.c.job_id.in_((job_id, other_id)))
        .subquery()
    )
    # Two tests, not one and its negation: an audit compared with itself is all unchanged.
    return (
        select(
            found.c.code,
            found.c.url,
            func.min(found.c.severity).label("severity"),
            func.min(case((found.c.job_id == job_id, found.c.id))).label("id"),
            func.min(case((found.c.job_id == other_id, found.c.id))).label("other_id"),
        )
        .group_by(found.c.code, found.c.url)
        .subquery()
    )


def _change(pairs: Any, change: str) -> ColumnElement[bool]:
    if change == "new":
        return and_(pairs.c.id.is_not(None), pairs.c.other_id.is_(None))
    if change == "fixed":
        return and_(pairs.c.id.is_(None), pairs.c.other_id.is_not(None))
    return and_(pairs.c.id.is_not(None), pairs.c.other_id.is_not(None))


def change_counts(conn: Connection, job_id: int, other_id: int) -> list[ChangeCount]:
    """Per code: how many (code, url) pairs ``job_id`` found that ``other_id`` did not
    (``new``), ``other_id`` found that ``job_id`` did not (``fixed``), and both found
    (``unchanged``)."""
    pairs = _pairs(job_id, other_id)
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
    pairs = _pairs(job_id, other_id)
    key = pairs.c.other_id if change == "fixed" else pairs.c.id
    query = select(key, pairs.c.code, pairs.c.severity, pairs.c.url).where(
        _change(pairs, change), key > after_id
    )
    if code is not None:
        query = query.where(pairs.c.code == code)
    rows = conn.execute(query.order_by(key).limit(limit))
    return [ChangedFinding(id=i, code=c, severity=s, url=u or None) for i, c, s, u in rows]


def findings_at(conn: Connection, job_id: int, url: str, *, limit: int) -> list[FindingRecord]:
    """Up to ``limit`` of the job's findings about ``url`` (``data["url"]``: its page's own
    and the site-wide ones naming it), in the order found."""
    query = (
        select(findings)
        .where(findings.c.job_id == job_id, findings.c.data["url"].as_string() == url)
        .order_by(findings.c.id)
        .limit(limit)
    )
    return [FindingRecord(**row._asdict()) for row in conn.execute(query)]


def page_seqs(conn: Connection, job_id: int, table: str, urls: list[str]) -> dict[str, int]:
    """The ``seq`` of each of ``urls`` the job's page table (``table``) holds."""
    pages = kindrows.table(table)
    query = select(pages.c.url, pages.c.seq).where(pages.c.job_id == job_id, pages.c.url.in_(urls))
    return {url: int(seq) for url, seq in conn.execute(query)}
