"""What running jobs add besides item results: items found while running, findings, and
collected data; and the reads of them.

Every write names the claim it runs under (job id and ``attempt``) and is fenced like the
item results in ``jobs.record_items``: a worker that lost its job adds nothing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import orjson
from sqlalchemy import Connection, bindparam, delete, func, insert, select, text, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.sql.elements import TextClause

from seojobs.outside import storable, storable_json
from seojobs.records import (
    CollectionRecord,
    FindingRecord,
    ItemOutcome,
    NewFinding,
    NewItem,
)
from seojobs.store.db import Database
from seojobs.store.jobs import (
    _INSERT_FINDINGS,
    _RECORD_ITEM,
    _RECORD_JOB,
    INSERT_FINDINGS_ORDER,
    ITEM_INSERT_CHUNK,
    LeaseLost,
    _binder,
    bound_insert,
    fence,
    finding_row,
    insert_rows,
    item_rows,
    positional,
    record_items,
)
from seojobs.store.tables import collections, findings, job_items, jobs


def _insert(db: Database) -> Any:
    return postgresql.insert if db.dialect == "postgresql" else sqlite.insert


def add_items(
    db: Database,
    conn: Connection,
    job_id: int,
    attempt: int,
    items: Sequence[NewItem],
    now: datetime,
) -> int:
    """Add items to a running job; an item whose key the job already has is skipped.

    Returns how many were added. New items get sequence numbers after every existing one, so
    a job reading its open items in order meets them after what it had.
    """
    fence(conn, job_id, attempt, now)
    if not items:
        return 0
    last = conn.execute(_LAST_SEQ, {"l_job": job_id}).scalar_one()
    # One statement built once for every write, its rows sent as an executemany (SQLAlchemy
    # packs them into multi-row INSERTs): a statement with the rows in it was compiled
    # again for each write, most of a crawl's add_items CPU.
    insert_rows = _ADD_ITEMS[db.dialect]
    added = 0
    for start in range(0, len(items), ITEM_INSERT_CHUNK):
        rows = item_rows(job_id, items[start : start + ITEM_INSERT_CHUNK], last + 1 + start)
        added += len(conn.execute(insert_rows, rows).all())
    if added:
        conn.execute(_ITEMS_TOTAL, {"t_job": job_id, "t_added": added})
    return added


# SQLite's statements for a group (_write_sqlite), and the order of their parameters in
# the rows _sqlite_rows builds. The job's row as record_items updates it, with its items'
# total too.
_RECORD_GROUP_JOB = _RECORD_JOB.values(items_total=jobs.c.items_total + bindparam("j_added"))
_RECORD_GROUP_JOB_ORDER = (
    "j_id",
    "j_attempt",
    "j_done",
    "j_failed",
    "j_added",
    "j_counters",
    "j_at",
)
_RECORD_ITEM_ORDER = (
    "b_id",
    "b_job",
    "b_state",
    "b_outcome",
    "b_result",
    "b_code",
    "b_message",
    "b_at",
)
_NEW_ITEMS, _NEW_ITEMS_ORDER = bound_insert(
    sqlite.insert(job_items), "n_", "job_id seq input key data state"
)
_NEW_ITEMS = _NEW_ITEMS.on_conflict_do_nothing()
_LAST_SEQ = select(func.coalesce(func.max(job_items.c.seq), -1)).where(
    job_items.c.job_id == bindparam("l_job")
)
_ADD_ITEMS = {
    name: dialect.insert(job_items).on_conflict_do_nothing().returning(job_items.c.id)
    for name, dialect in (("postgresql", postgresql), ("sqlite", sqlite))
}
_ITEMS_TOTAL = (
    update(jobs)
    .where(jobs.c.id == bindparam("t_job"))
    .values(items_total=jobs.c.items_total + bindparam("t_added"))
)


def record(
    db: Database,
    conn: Connection,
    job_id: int,
    attempt: int,
    outcomes: Sequence[ItemOutcome],
    counters: dict[str, int],
    added: Sequence[NewItem],
    now: datetime,
) -> int:
    """Items' outcomes and findings, the job's counters, and the new items they found (those
    whose key the job has are skipped), or ``LeaseLost`` and nothing written. Returns how
    many items were added. Every string is written storable (``seojobs.outside``): on
    PostgreSQL as the JSON documents are encoded, in the same pass.

    On PostgreSQL it is one statement (``_RECORD_PG``), which the caller may run as its own
    transaction: a round trip, where the statements one by one took one each, and two more
    for BEGIN and COMMIT (a crawl's writes waited on them: bench/audit.py). Its new items'
    sequence numbers come from the statement's snapshot, so the caller must not run another
    write of the same job beside it (``JobContext`` writes one at a time).
    """
    if db.dialect == "postgresql":
        statement, params = _record_pg_statement(job_id, attempt, outcomes, counters, added, now)
        count = conn.execute(statement, params).scalar_one_or_none()
        if count is None:
            raise LeaseLost(job_id)
        return int(count)
    at = _binder(job_items.c.finished_at, conn.dialect)(now)
    rows = _sqlite_rows(job_id, attempt, outcomes, counters, added, at)
    if rows is not None:
        return _write_sqlite(conn, job_id, rows)
    outcomes, counters, added = storable((outcomes, counters, added))
    record_items(conn, job_id, attempt, outcomes, counters, now)
    return add_items(db, conn, job_id, attempt, added, now) if added else 0


_Rows = tuple[tuple[Any, ...], list[tuple[Any, ...]], list[tuple[Any, ...]], list[tuple[Any, ...]]]


def _sqlite_rows(
    job_id: int,
    attempt: int,
    outcomes: Sequence[ItemOutcome],
    counters: dict[str, int],
    added: Sequence[NewItem],
    at: str,
) -> _Rows | None:
    """A group's rows for SQLite (the job's, its findings, its items, its new items), each
    built once as the tuple the driver binds and each JSON value encoded once, as the
    column's type would (``jsontext.dumps``: orjson's text); None when some string is not
    storable as it is (one more look in C over the built rows, as
    :func:`seojobs.outside.storable_json` looks) or orjson cannot write a value: the caller
    then takes the general way, which makes the group storable first. The general way
    looked over the group's records (orjson takes about a microsecond per dataclass
    instance: a crawled page's dozen findings), then built every row as a dict, bound its
    values and made it a tuple."""
    try:
        found = [
            (job_id, o.item_id, f.code, f.severity, _json(f.data), at)
            for o in outcomes
            for f in o.findings
        ]
        done = [
            (
                o.item_id,
                job_id,
                "failed" if o.failed else "done",
                o.outcome,
                _json(o.result),
                o.error_code,
                o.error_message,
                at,
            )
            for o in outcomes
        ]
        new = [(job_id, 0, i.input, i.key, _json(i.data), "pending") for i in added]
        failed = sum(1 for o in outcomes if o.failed)
        job = (job_id, attempt, len(outcomes), failed, len(new), _json(counters), at)
        if b"\\u0000" in orjson.dumps((job, found, done, new)):
            return None
    except TypeError:  # a lone surrogate, or what orjson does not write
        return None
    return job, found, done, new


def _write_sqlite(conn: Connection, job_id: int, rows: _Rows) -> int:
    """A group's rows (:func:`_sqlite_rows`) in four statements; how many new items were
    added. The job's row is updated once, first (the fence), its new items counted as
    added (the general way fenced, counted the results, then added to the total in three
    updates), and corrected after in the rare group where some were the job's already.
    The findings go in INSERTs of many rows (:func:`~seojobs.store.jobs.insert_rows`)."""
    job, found, done, new = rows
    sql, order = positional(_RECORD_GROUP_JOB, conn.dialect, _RECORD_GROUP_JOB_ORDER)
    if conn.exec_driver_sql(sql, order(job)).rowcount != 1:
        raise LeaseLost(job_id)
    if found:
        insert_rows(conn, _INSERT_FINDINGS, INSERT_FINDINGS_ORDER, found)
    if done:
        sql, order = positional(_RECORD_ITEM, conn.dialect, _RECORD_ITEM_ORDER)
        conn.exec_driver_sql(sql, [order(row) for row in done])
    if not new:
        return 0
    first = conn.execute(_LAST_SEQ, {"l_job": job_id}).scalar_one() + 1
    sql, order = positional(_NEW_ITEMS, conn.dialect, _NEW_ITEMS_ORDER)
    count = conn.exec_driver_sql(
        sql, [order((j, first + n, *rest)) for n, (j, _seq, *rest) in enumerate(new)]
    ).rowcount
    if count != len(new):  # some were the job's already: not added after all
        conn.execute(_ITEMS_TOTAL, {"t_job": job_id, "t_added": count - len(new)})
    return int(count)


def _json(value: Any) -> str:
    """``value`` as a JSON column binds it (``jsontext.dumps``), or TypeError where orjson
    cannot write it (the general way then writes it)."""
    return orjson.dumps(value).decode()


# The job row is locked first (FOR UPDATE, re-checked against the claim after any wait, so a
# cancel or rescue either happened before, and nothing is written, or waits for the commit);
# every other part joins it. The job row is updated once, last: a statement may not update a
# row twice. New items are skipped on a key the job has; a clash of sequence numbers (which
# one writer per job rules out) raises instead of dropping them.
#
# Each set of rows travels as one JSON document (an array of objects, json_to_recordset),
# encoded once in C: as arrays (text[], json[]) psycopg escaped every quote of every result
# in Python, about a fifth of a crawled page's CPU (bench/audit.py). A JSON null read into a
# json column is SQL NULL: coalesce writes it as JSON null, as the arrays did. The items'
# ids also come as an array: the planner knows its length, where it takes a
# json_to_recordset for 100 rows and (before statistics) scanned the job's items for them.
_RECORD_PG = text(
    """
    WITH job AS (
        SELECT id FROM jobs
        WHERE id = :job AND attempt = :attempt AND state = 'processing'
        FOR UPDATE
    ),
    done AS (
        UPDATE job_items AS i
        SET state = r.state, outcome = r.outcome, result = coalesce(r.result, 'null'),
            error_code = r.code, error_message = r.message, finished_at = :now
        FROM job, json_to_recordset(CAST(:outcomes AS json))
            AS r(id bigint, state text, outcome text, result json, code text, message text)
        WHERE i.id = ANY(CAST(:ids AS bigint[])) AND i.id = r.id AND i.job_id + 0 = job.id
            AND i.state = 'pending'
    ),
    found AS (
        INSERT INTO findings (job_id, item_id, code, severity, data, created_at)
        SELECT job.id, f.item_id, f.code, f.severity, coalesce(f.data, 'null'), :now
        FROM job, ROWS FROM (
            json_to_recordset(CAST(:findings AS json))
            AS (item_id bigint, code text, severity text, data json)
        ) WITH ORDINALITY AS f(item_id, code, severity, data, n)
        ORDER BY f.n
    ),
    last AS (
        SELECT coalesce(max(seq), -1) AS seq FROM job_items WHERE job_id = :job
    ),
    added AS (
        INSERT INTO job_items (job_id, seq, input, key, data, state)
        SELECT job.id, last.seq + a.n, a.input, a.key, coalesce(a.data, 'null'), 'pending'
        FROM job, last, ROWS FROM (
            json_to_recordset(CAST(:added AS json)) AS (input text, key text, data json)
        ) WITH ORDINALITY AS a(input, key, data, n)
        ORDER BY a.n
        ON CONFLICT (job_id, key) DO NOTHING
        RETURNING 1
    )
    UPDATE jobs
    SET items_done = items_done + :done, items_failed = items_failed + :failed,
        items_total = items_total + (SELECT count(*) FROM added),
        counters = CAST(:counters AS json), updated_at = :now
    FROM job
    WHERE jobs.id = job.id
    RETURNING (SELECT count(*) FROM added)
    """
)


def _record_pg_statement(
    job_id: int,
    attempt: int,
    outcomes: Sequence[ItemOutcome],
    counters: dict[str, int],
    added: Sequence[NewItem],
    now: datetime,
) -> tuple[TextClause, dict[str, Any]]:
    found = [
        {"item_id": o.item_id, "code": f.code, "severity": f.severity, "data": f.data}
        for o in outcomes
        for f in o.findings
    ]
    done = [
        {
            "id": o.item_id,
            "state": "failed" if o.failed else "done",
            "outcome": o.outcome,
            "result": o.result,
            "code": o.error_code,
            "message": o.error_message,
        }
        for o in outcomes
    ]
    params = {
        "job": job_id,
        "attempt": attempt,
        "now": now,
        "done": len(outcomes),
        "failed": sum(1 for o in outcomes if o.failed),
        "counters": storable_json(counters),
        "ids": [o.item_id for o in outcomes],
        # Every string of the group is in these documents, made storable as they are encoded.
        "outcomes": storable_json(done),
        "findings": storable_json(found),
        "added": storable_json([{"input": i.input, "key": i.key, "data": i.data} for i in added]),
    }
    return _RECORD_PG, params


def add_finished_item(
    db: Database,
    conn: Connection,
    job_id: int,
    attempt: int,
    item: NewItem,
    outcome: ItemOutcome,
    counters: dict[str, int],
    now: datetime,
) -> bool:
    """Add an item already finished, with its result and findings, and the job's counters
    (``counters``: the snapshot that counts it); never run. Returns False, writing nothing
    but the fence, when the job already has an item with that key."""
    fence(conn, job_id, attempt, now)
    last = conn.execute(
        select(func.coalesce(func.max(job_items.c.seq), -1)).where(job_items.c.job_id == job_id)
    ).scalar_one()
    [row] = item_rows(job_id, [item], last + 1)
    row.update(
        state="failed" if outcome.failed else "done",
        outcome=outcome.outcome,
        result=outcome.result,
        error_code=outcome.error_code,
        error_message=outcome.error_message,
        finished_at=now,
    )
    stmt = _insert(db)(job_items).values(**row).on_conflict_do_nothing()
    item_id = conn.execute(stmt.returning(job_items.c.id)).scalar_one_or_none()
    if item_id is None:
        return False
    if outcome.findings:
        rows = [finding_row(job_id, f, now, item_id=item_id) for f in outcome.findings]
        conn.execute(insert(findings), rows)
    conn.execute(
        update(jobs)
        .where(jobs.c.id == job_id)
        .values(
            items_total=jobs.c.items_total + 1,
            items_done=jobs.c.items_done + 1,
            items_failed=jobs.c.items_failed + int(outcome.failed),
            counters=counters,
        )
    )
    return True


def set_job_findings(
    conn: Connection,
    job_id: int,
    attempt: int,
    found: Sequence[NewFinding],
    now: datetime,
    *,
    append: bool = False,
) -> None:
    """Replace the job's findings about the whole job (those of no item) with ``found``: a
    job resumed after a crash that writes them again (an audit's site-wide checks) replaces
    what the dead worker wrote instead of adding to it. ``append``: add ``found`` to them (a
    later chunk of the same write, whose first chunk replaced them)."""
    fence(conn, job_id, attempt, now)
    if not append:
        job_level = findings.c.item_id.is_(None)
        conn.execute(delete(findings).where(findings.c.job_id == job_id, job_level))
    if found:  # about the job: an item_id a caller set is not kept (nor would be replaced)
        rows = [{**finding_row(job_id, f, now), "item_id": None} for f in found]
        conn.execute(insert(findings), rows)


SUBJECT_MAX = 500  # collections.subject is String(500)


def subject_key(subject: str) -> str:
    """How ``subject`` is stored and looked up: as it is, or, past the column's 500
    characters (a web-vitals or tech-stack subject holds a URL of up to 2,048), a digest of
    it, so a long subject is kept apart from one sharing its first 500 characters on both
    stores (PostgreSQL would refuse the value; SQLite would keep it whole)."""
    if len(subject) <= SUBJECT_MAX:
        return subject
    return "sha256:" + hashlib.sha256(subject.encode("utf-8", "surrogatepass")).hexdigest()


def collect(
    db: Database,
    conn: Connection,
    *,
    job_id: int,
    attempt: int,
    project_id: int,
    kind: str,
    rows: Sequence[tuple[str, Any]],
    now: datetime,
) -> None:
    """Store what a job collected about each subject of ``rows`` (subject, data), fenced once
    and written in one statement; published when the job completes. A job that collects the
    same subject again (or is resumed and does) replaces its own row; within ``rows`` the last
    of a subject wins."""
    fence(conn, job_id, attempt, now)
    once = {subject_key(subject): data for subject, data in rows}
    if not once:
        return
    values = [
        {
            "project_id": project_id,
            "kind": kind,
            "subject": subject,
            "job_id": job_id,
            "data": data,
            "committed": False,
            "collected_at": now,
        }
        for subject, data in once.items()
    ]
    stmt = _insert(db)(collections)
    stmt = stmt.on_conflict_do_update(
        index_elements=[collections.c.job_id, collections.c.subject],
        set_={"data": stmt.excluded.data, "collected_at": stmt.excluded.collected_at},
    )
    conn.execute(stmt, values)


# -- reads ----------------------------------------------------------------------------------


def finding_counts(conn: Connection, job_id: int) -> list[tuple[str, str, int]]:
    """``(code, severity, count)`` for one job, most frequent first."""
    count = func.count().label("n")
    rows = conn.execute(
        select(findings.c.code, findings.c.severity, count)
        .where(findings.c.job_id == job_id)
        .group_by(findings.c.code, findings.c.severity)
        .order_by(count.desc(), findings.c.code)
    )
    return [(str(code), str(severity), int(n)) for code, severity, n in rows]


def findings_page(
    conn: Connection,
    job_id: int,
    *,
    code: str | None = None,
    severity: str | None = None,
    after_id: int = 0,
    limit: int = 100,
) -> list[FindingRecord]:
    query = select(findings).where(findings.c.job_id == job_id, findings.c.id > after_id)
    if code is not None:
        query = query.where(findings.c.code == code)
    if severity is not None:
        query = query.where(findings.c.severity == severity)
    rows = conn.execute(query.order_by(findings.c.id).limit(limit))
    return [FindingRecord(**r._asdict()) for r in rows]


def latest(
    conn: Connection, project_id: int, kind: str, subject: str | None = None
) -> CollectionRecord | None:
    """The newest published collection of a kind in a project (of one subject, if given)."""
    found = history(conn, project_id, kind, subject, limit=1)
    return found[0] if found else None


def history(
    conn: Connection,
    project_id: int,
    kind: str,
    subject: str | None = None,
    *,
    before_id: int | None = None,
    limit: int = 100,
) -> list[CollectionRecord]:
    """Published collections (of one subject, if given), newest first."""
    query = select(collections).where(
        collections.c.project_id == project_id,
        collections.c.kind == kind,
        collections.c.committed.is_(True),
    )
    if subject is not None:
        query = query.where(collections.c.subject == subject_key(subject))
    if before_id is not None:
        query = query.where(collections.c.id < before_id)
    rows = conn.execute(query.order_by(collections.c.id.desc()).limit(limit))
    return [CollectionRecord(**r._asdict()) for r in rows]


def latest_each(conn: Connection, project_id: int, kind: str) -> list[CollectionRecord]:
    """The newest published collection of every subject of a kind in a project, by subject."""
    newest = (
        select(func.max(collections.c.id))
        .where(
            collections.c.project_id == project_id,
            collections.c.kind == kind,
            collections.c.committed.is_(True),
        )
        .group_by(collections.c.subject)
    )
    rows = conn.execute(
        select(collections).where(collections.c.id.in_(newest)).order_by(collections.c.subject)
    )
    return [CollectionRecord(**r._asdict()) for r in rows]


def job_collections(
    conn: Connection, project_id: int, job_id: int, *, limit: int, lowest: Sequence[str] = ()
) -> list[tuple[CollectionRecord, CollectionRecord | None, dict[str, float]]]:
    """What one job collected (published), by subject, each with the published collection of
    the same subject before it (None: the first) and the ``lowest`` value each named number
    of its data had in that subject's collections up to this one (a best position): one
    statement, on the subject index."""
    this = collections.alias("this")
    before = collections.alias("before")

    def same_subject(*more: Any) -> Any:
        return select(*more).where(
            before.c.project_id == this.c.project_id,
            before.c.kind == this.c.kind,
            before.c.subject == this.c.subject,
            before.c.committed.is_(True),
        )

    previous_id = (
        same_subject(func.max(before.c.id)).where(before.c.id < this.c.id).scalar_subquery()
    )
    least = [
        same_subject(func.min(before.c.data[name].as_float()))
        .where(before.c.id <= this.c.id)
        .scalar_subquery()
        .label(f"lowest_{n}")
        for n, name in enumerate(lowest)
    ]
    found = conn.execute(
        select(this, previous_id.label("previous_id"), *least)
        .where(
            this.c.job_id == job_id,
            this.c.project_id == project_id,
            this.c.committed.is_(True),
        )
        .order_by(this.c.subject)
        .limit(limit)
    ).all()
    wanted = [r.previous_id for r in found if r.previous_id is not None]
    previous: dict[int, CollectionRecord] = {}
    for start in range(0, len(wanted), ITEM_INSERT_CHUNK):
        rows = conn.execute(
            select(collections).where(
                collections.c.id.in_(wanted[start : start + ITEM_INSERT_CHUNK])
            )
        )
        previous.update({r.id: CollectionRecord(**r._asdict()) for r in rows})
    names = [c.name for c in collections.c]
    return [
        (
            CollectionRecord(**{n: getattr(r, n) for n in names}),
            previous.get(r.previous_id) if r.previous_id is not None else None,
            {
                name: float(value)
                for n, name in enumerate(lowest)
                if (value := getattr(r, f"lowest_{n}")) is not None
            },
        )
        for r in found
    ]
