"""Job and item SQL: create, claim, heartbeat, finish, rescue, cancel, prune.

Every change a worker makes names the state and the claim (``attempt``, the fencing token) it
expects, so a worker that lost its lease cannot overwrite what happened since. Rows in
``completed`` or ``failed`` are never updated: every statement here excludes them, and a database
trigger (see the migrations) refuses any update that tries.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime, timedelta
from itertools import chain
from typing import Any, TypedDict, Unpack

from sqlalchemy import (
    BigInteger,
    Connection,
    Integer,
    Row,
    Select,
    and_,
    bindparam,
    cast,
    delete,
    func,
    insert,
    literal,
    select,
    tuple_,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite

from seojobs.records import (
    ItemOutcome,
    ItemRecord,
    JobRecord,
    NewFinding,
    NewItem,
    NewJob,
)
from seojobs.store import webhooks
from seojobs.store.coltypes import UTCDateTime
from seojobs.store.db import NOTIFY_CHANNEL, Database, notify
from seojobs.store.errors import Unavailable
from seojobs.store.tables import collections, findings, job_items, jobs, projects

# The event a follow-up job's completion makes besides job.completed (seed 000's checker).
SCHEDULED_CHECK = "scheduled_check.completed"
OPEN_STATES = ("pending", "processing")
FINAL_STATES = ("completed", "failed")
ITEM_INSERT_CHUNK = 1000


class LeaseLost(Exception):
    """The job is no longer ``processing`` under this claim (rescued, cancelled or finished)."""


def _job(row: Row[Any]) -> JobRecord:
    # Positional: JobRecord's fields are the jobs columns in table order (a unit test checks),
    # and building by keyword costs a third of a 500-row claim.
    return JobRecord(*row)  # type: ignore[call-arg]  # arity checked by a unit test


def _item(row: Row[Any]) -> ItemRecord:
    # Positional too (the items of a job are read in pages of hundreds); a unit test checks.
    return ItemRecord(*row)  # type: ignore[call-arg]  # arity checked by a unit test


# -- create ---------------------------------------------------------------------------------


def _job_values(new: NewJob, now: datetime) -> dict[str, Any]:
    values: dict[str, Any] = {
        "project_id": new.project_id,
        "kind": new.kind,
        "params": new.params,
        "state": "pending",
        "priority": new.priority,
        "title": new.title,
        "run_at": new.run_at,
        "created_at": now,
        "updated_at": now,
        "attempt": 0,
        "rescue_count": 0,
        "items_total": len(new.items),
        "items_done": 0,
        "items_failed": 0,
        "counters": {},
        "parent_id": new.parent_id,
        "idempotency_key": new.idempotency_key,
        "schedule_id": new.schedule_id,
        "schedule_tick": new.schedule_tick,
        "request_id": new.request_id,
        # Always given, so that every job is one INSERT statement (see _insert_statement).
        "completed_at": None,
        "error_code": None,
        "error_message": None,
    }
    if new.failure is not None:
        code, message = new.failure
        values.update(state="failed", completed_at=now, error_code=code, error_message=message)
    return values


@functools.cache
def _insert_statement(dialect: str, notify: bool, columns: tuple[str, ...]) -> Any:
    """The INSERT of one job, built once with a bind parameter per column: built per call
    from its values, it cost ~0.7 ms of CPU, more than the round trip (bench/queue.py's
    wake-up). ``notify`` (PostgreSQL) puts the NOTIFY in the same statement, one round trip
    fewer per enqueue; it fires only for a row inserted, not for a conflict."""
    new_row = {name: bindparam(name, type_=jobs.c[name].type) for name in columns}
    dialect_insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    stmt = dialect_insert(jobs).values(new_row).on_conflict_do_nothing().returning(jobs.c.id)
    if not notify:
        return stmt
    inserted = stmt.cte("inserted")
    return select(inserted.c.id, func.pg_notify(NOTIFY_CHANNEL, ""))


def insert_job(db: Database, conn: Connection, new: NewJob, now: datetime) -> tuple[int, bool]:
    """Insert a job and its items. Returns ``(job_id, created)``.

    A job whose idempotency key or (schedule, tick) already exists is not inserted again; the
    existing job's id is returned with ``created=False``.
    """
    values = _job_values(new, now)
    pending = new.failure is None
    notify_here = pending and db.dialect == "postgresql"
    stmt = _insert_statement(db.dialect, notify_here, tuple(values))
    job_id = conn.execute(stmt, values).scalar()
    if job_id is None:
        existing = conn.execute(_existing_job_query(new)).scalar()
        if existing is None:  # the conflicting row was deleted under us; surface it
            raise LookupError("conflicting job vanished during insert")
        return int(existing), False
    _insert_items(conn, int(job_id), new.items)
    if pending and not notify_here:
        db.notify(conn)
    if not pending:  # webhooks (issue 27): a job born failed is a job.failed event too
        webhooks.enqueue_for_jobs(conn, [int(job_id)], "job.failed", now)
    return int(job_id), True


def _existing_job_query(new: NewJob) -> Any:
    if new.idempotency_key is not None:
        return select(jobs.c.id).where(
            jobs.c.project_id == new.project_id, jobs.c.idempotency_key == new.idempotency_key
        )
    return select(jobs.c.id).where(
        jobs.c.schedule_id == new.schedule_id, jobs.c.schedule_tick == new.schedule_tick
    )


def item_rows(job_id: int, items: Sequence[str | NewItem], first_seq: int) -> list[dict[str, Any]]:
    rows = []
    for i, value in enumerate(items):
        item = NewItem.of(value) if isinstance(value, str) else value
        rows.append(
            {
                "job_id": job_id,
                "seq": first_seq + i,
                "input": item.input,
                "key": item.key,
                "data": item.data,
                "state": "pending",
            }
        )
    return rows


def _insert_items(conn: Connection, job_id: int, items: Sequence[str | NewItem]) -> None:
    for start in range(0, len(items), ITEM_INSERT_CHUNK):
        chunk = items[start : start + ITEM_INSERT_CHUNK]
        conn.execute(insert(job_items), item_rows(job_id, chunk, start))


def insert_many_bare(db: Database, conn: Connection, news: Sequence[NewJob], now: datetime) -> None:
    """Bulk insert of item-less jobs without idempotency checks (benchmarks, fan-out)."""
    if not news:
        return
    conn.execute(insert(jobs), [_job_values(n, now) for n in news])
    db.notify(conn)


# -- read -----------------------------------------------------------------------------------


def _select(param_keys: Sequence[str] | None) -> Any:
    """All columns; with ``param_keys``, only those keys of ``params`` are read.

    Status reads use the slim form: a job's params can hold 10,000 URLs (item-based kinds),
    and decoding them for every poll made a status read cost megabytes.
    """
    if param_keys is None:
        return _SELECT_ALL
    return _slim_select(tuple(param_keys))


_SELECT_ALL = select(jobs)


@functools.lru_cache(maxsize=64)
def _slim_select(param_keys: tuple[str, ...]) -> Any:
    """Built once per set of keys (statements are immutable; ``where`` copies): building
    the JSON key expressions and their cache key again took a third of a report page's
    CPU (bench/scale.py), which reads its job twice."""
    columns = [c if c.name != "params" else literal(None).label("params") for c in jobs.c]
    extracted = [jobs.c.params[key].label(f"param_{i}") for i, key in enumerate(param_keys)]
    return select(*columns, *extracted)


def _record(row: Row[Any], param_keys: Sequence[str] | None) -> JobRecord:
    if param_keys is None:
        return _job(row)
    values = list(row)
    width = len(jobs.c)
    values[3] = {k: v for k, v in zip(param_keys, values[width:], strict=True) if v is not None}
    return JobRecord(*values[:width])  # arity checked by a unit test


def get(
    conn: Connection,
    job_id: int,
    *,
    param_keys: Sequence[str] | None = None,
    user_id: int | None = None,
) -> JobRecord | None:
    """One job; with ``user_id``, only if one of that user's projects holds it (one query)."""
    keys = None if param_keys is None else tuple(param_keys)
    values = {"job_id": job_id} if user_id is None else {"job_id": job_id, "user_id": user_id}
    row = conn.execute(_get_statement(keys, user_id is not None), values).first()
    return _record(row, param_keys) if row else None


@functools.lru_cache(maxsize=64)
def _get_statement(param_keys: tuple[str, ...] | None, of_user: bool) -> Any:
    """``get``'s statement, built once per form, its values bound at execution: building it
    (and its cache key) again for every page cost more than running it."""
    query = _select(param_keys).where(jobs.c.id == bindparam("job_id"))
    if of_user:
        owned = select(projects.c.id).where(projects.c.user_id == bindparam("user_id"))
        query = query.where(jobs.c.project_id.in_(owned))
    return query


def owned(conn: Connection, job_id: int, user_id: int) -> bool:
    """Whether one of the user's projects holds the job, reading its id alone: not its params
    (a job of 10,000 URLs carries megabytes of them, parsed again by each summary key's JSON
    lookup in ``get``)."""
    values = {"job_id": job_id, "user_id": user_id}
    return conn.execute(_owned_statement(), values).first() is not None


@functools.cache
def _owned_statement() -> Any:
    of_user = select(projects.c.id).where(projects.c.user_id == bindparam("user_id"))
    return select(jobs.c.id).where(jobs.c.id == bindparam("job_id"), jobs.c.project_id.in_(of_user))


def get_many(conn: Connection, job_ids: Sequence[int]) -> dict[int, JobRecord]:
    """Jobs by id, in one query (those that exist)."""
    if not job_ids:
        return {}
    query = select(jobs).where(jobs.c.id.in_(sorted(set(job_ids))))
    return {int(row.id): _job(row) for row in conn.execute(query)}


def list_for_projects(
    conn: Connection,
    project_ids: Sequence[int],
    *,
    kind: str | None = None,
    states: Sequence[str] | None = None,
    before_id: int | None = None,
    after_id: int | None = None,
    limit: int = 50,
    ids: Sequence[int] | None = None,
    updated_since: datetime | None = None,
    created_since: datetime | None = None,
    created_until: datetime | None = None,
    param_keys: Sequence[str] | None = None,
) -> list[JobRecord]:
    """The projects' jobs, newest first: those before ``before_id`` (the next page), or
    the ``limit`` just after ``after_id`` (the previous page), still newest first."""
    query = _select(param_keys).where(jobs.c.project_id.in_(project_ids))
    if kind:
        query = query.where(jobs.c.kind == kind)
    if states:
        query = query.where(jobs.c.state.in_(states))
    if ids is not None:
        query = query.where(jobs.c.id.in_(ids))
    if updated_since is not None:
        query = query.where(jobs.c.updated_at >= updated_since)
    if created_since is not None:
        query = query.where(jobs.c.created_at >= created_since)
    if created_until is not None:
        query = query.where(jobs.c.created_at < created_until)
    if before_id is not None:
        query = query.where(jobs.c.id < before_id)
    if after_id is not None:
        query = query.where(jobs.c.id > after_id)
        rows = conn.execute(query.order_by(jobs.c.id.asc()).limit(limit))
        return [_record(r, param_keys) for r in rows][::-1]
    rows = conn.execute(query.order_by(jobs.c.id.desc()).limit(limit))
    return [_record(r, param_keys) for r in rows]


def counts_query(project_ids: Sequence[int]) -> Select[str, str, int]:
    """Grouped in ix_jobs_project_state's order, so both stores count from that index alone
    (the dashboard's overview, with 100,000 jobs: bench/dashboard.py)."""
    return (
        select(jobs.c.kind, jobs.c.state, func.count())
        .where(jobs.c.project_id.in_(project_ids))
        .group_by(jobs.c.state, jobs.c.kind)
    )


def count_by_kind_and_state(
    conn: Connection, project_ids: Sequence[int]
) -> list[tuple[str, str, int]]:
    """(kind, state, jobs) over the projects' jobs."""
    rows = conn.execute(counts_query(project_ids))
    return [(kind, state, int(n)) for kind, state, n in rows]


def count_by_state(conn: Connection) -> dict[str, int]:
    rows = conn.execute(select(jobs.c.state, func.count()).group_by(jobs.c.state))
    return {state: int(n) for state, n in rows}


def items_page(
    conn: Connection,
    job_id: int,
    *,
    after_seq: int = -1,
    limit: int = 500,
    only_open: bool = False,
    outcomes: Sequence[str] | None = None,
) -> list[ItemRecord]:
    query = select(job_items).where(job_items.c.job_id == job_id, job_items.c.seq > after_seq)
    if only_open:
        query = query.where(job_items.c.state == "pending")
    if outcomes:
        query = query.where(job_items.c.outcome.in_(outcomes))
    rows = conn.execute(query.order_by(job_items.c.seq).limit(limit))
    return [_item(r) for r in rows]


# -- claim ----------------------------------------------------------------------------------


class ClaimFilters(TypedDict, total=False):
    """What a claim leaves out, and whether it reads the owners (see :func:`claim`)."""

    kinds: Sequence[str] | None
    exclude: Sequence[str]
    exclude_users: Sequence[int]
    owners: dict[int, int] | None


def claim(
    db: Database,
    conn: Connection,
    worker_id: str,
    limit: int,
    now: datetime,
    lease: float,
    **filters: Unpack[ClaimFilters],
) -> list[JobRecord]:
    """Take up to ``limit`` due pending jobs in one statement; oldest first within priority.
    ``kinds`` limits the claim to those kinds (a worker's queues), ``exclude`` leaves some out
    (kinds claimed separately under their own concurrency cap), ``exclude_users`` leaves out
    the jobs of users who hold their share of the worker's slots. ``owners``, when given, is
    filled with each claimed job's user (job id -> user id), read in the same statement.

    On PostgreSQL the statement runs on the driver's connection under ``conn`` (in its
    transaction, or autocommit), as :func:`claim_async` runs it on the event loop: see
    :func:`pg_claim_sql`. SQLite keeps SQLAlchemy's statement."""
    kinds, exclude = filters.get("kinds"), filters.get("exclude", ())
    exclude_users, owners = filters.get("exclude_users", ()), filters.get("owners")
    if limit <= 0 or (kinds is not None and not kinds):
        return []
    if db.dialect == "postgresql":
        return _pg_claim_sync(conn, _pg_claim(worker_id, limit, now, lease, filters), owners)
    shape = (db.dialect, kinds is not None, bool(exclude), bool(exclude_users), owners is not None)
    stmt = _claim_statement(*shape)
    params = _claim_params(worker_id, limit, now, lease, kinds, exclude, exclude_users)
    rows = conn.execute(stmt, params).all()
    if owners is not None:
        owners.update((row[0], row[-1]) for row in rows)
        found = [JobRecord(*row[:-1]) for row in rows]  # the user came last
    else:
        found = [_job(r) for r in rows]
    return sorted(found, key=_claim_order)


def _claim_order(job: JobRecord) -> tuple[int, datetime, int]:
    return (job.priority, job.run_at, job.id)


def _claim_params(
    worker_id: str,
    limit: int,
    now: datetime,
    lease: float,
    kinds: Sequence[str] | None,
    exclude: Sequence[str],
    exclude_users: Sequence[int],
) -> dict[str, Any]:
    return {
        "now": now,
        "lease_until": now + timedelta(seconds=lease),
        "worker_id": worker_id,
        "limit": limit,
        "kinds": list(kinds or ()),
        "exclude": list(exclude),
        "exclude_users": list(exclude_users),
    }


# -- the PostgreSQL claim on the driver -----------------------------------------------------

_PG_CLAIM_RETURNING = ", ".join(f"jobs.{c.name}" for c in jobs.c)
# Positions of the timestamps: psycopg gives them in the session's time zone, the store UTC.
_PG_CLAIM_TIMES = tuple(i for i, c in enumerate(jobs.c) if isinstance(c.type, UTCDateTime))


@functools.cache
def pg_claim_sql(some_kinds: bool, exclude: bool, exclude_users: bool, owner: bool) -> str:
    """The PostgreSQL claim of :func:`_claim_statement`, written once per shape as plain SQL
    for psycopg: through SQLAlchemy, a woken worker's claim spent about a third of its client
    CPU on execution context and result metadata for a statement that never changes
    (bench/queue.py's wake-up). The same statement: candidates locked with ``FOR UPDATE SKIP
    LOCKED`` in a CTE (which fences the planner, so LIMIT bounds the rows locked and updated:
    Oban's lesson), in (priority, run_at, id) order, then updated and returned; lists are
    arrays (``= ANY``, ``<> ALL``: what PostgreSQL makes of ``IN`` and ``NOT IN`` lists).
    ``tests/integration/test_claim_paths.py`` compares it with SQLAlchemy's statement."""
    where = ["jobs.state = 'pending'", "jobs.run_at <= %(now)s"]
    if some_kinds:
        where.append("jobs.kind = ANY(%(kinds)s::text[])")
    if exclude:
        where.append("jobs.kind <> ALL(%(exclude)s::text[])")
    if exclude_users:
        where.append(
            "jobs.project_id NOT IN (SELECT projects.id FROM projects "
            "WHERE projects.user_id = ANY(%(exclude_users)s::bigint[]))"
        )
    returning = _PG_CLAIM_RETURNING
    if owner:  # the job's user, last: by primary key, one row per claimed job
        returning += ", (SELECT projects.user_id FROM projects WHERE projects.id = jobs.project_id)"
    conditions = " AND ".join(where)
    return (
        f"WITH picked AS (SELECT jobs.id FROM jobs WHERE {conditions} "  # noqa: S608 (constant)
        "ORDER BY jobs.priority, jobs.run_at, jobs.id LIMIT %(limit)s FOR UPDATE SKIP LOCKED) "
        "UPDATE jobs SET state = 'processing', attempt = jobs.attempt + 1, "
        "worker_id = %(worker_id)s, lease_expires_at = %(lease_until)s, "
        "started_at = coalesce(jobs.started_at, %(now)s), updated_at = %(now)s "
        f"FROM picked WHERE jobs.id = picked.id RETURNING {returning}"
    )


def pg_claimed(rows: Sequence[Sequence[Any]], owners: dict[int, int] | None) -> list[JobRecord]:
    """The records of a PostgreSQL claim's rows (:func:`pg_claim_sql`), in claim order;
    ``owners`` filled when the statement read them."""
    width = len(jobs.c)
    found = []
    for row in rows:
        values = list(row[:width])
        for i in _PG_CLAIM_TIMES:
            value = values[i]
            if value is not None:
                values[i] = value.astimezone(UTC)
        found.append(JobRecord(*values))
        if owners is not None:
            owners[values[0]] = row[width]
    return sorted(found, key=_claim_order)


def _pg_claim(
    worker_id: str, limit: int, now: datetime, lease: float, filters: ClaimFilters
) -> tuple[str, dict[str, Any]]:
    """The statement and parameters of a PostgreSQL claim (``limit`` above 0)."""
    kinds, exclude = filters.get("kinds"), filters.get("exclude", ())
    exclude_users, owners = filters.get("exclude_users", ()), filters.get("owners")
    sql = pg_claim_sql(kinds is not None, bool(exclude), bool(exclude_users), owners is not None)
    return sql, _claim_params(worker_id, limit, now, lease, kinds, exclude, exclude_users)


def _pg_claim_sync(
    conn: Connection, statement: tuple[str, dict[str, Any]], owners: dict[int, int] | None
) -> list[JobRecord]:
    import psycopg  # on PostgreSQL only: a SQLite process never loads the driver

    raw: Any = conn.connection.driver_connection  # the psycopg connection under SQLAlchemy
    try:
        with raw.cursor() as cursor:
            cursor.execute(*statement)
            rows = cursor.fetchall()
    except psycopg.OperationalError as exc:
        # What SQLAlchemy does for a statement of its own: a dead connection leaves the pool,
        # and the caller sees the store unavailable.
        if raw.broken or raw.closed:
            conn.invalidate(exc)
        raise Unavailable(str(exc).splitlines()[0]) from exc
    return pg_claimed(rows, owners)


async def claim_async(
    conn: Any,
    worker_id: str,
    limit: int,
    now: datetime,
    lease: float,
    **filters: Unpack[ClaimFilters],
) -> list[JobRecord]:
    """:func:`claim` on PostgreSQL, on a psycopg ``AsyncConnection`` (the worker's, on its
    event loop: ``seojobs.store.loopclaim``)."""
    kinds = filters.get("kinds")
    if limit <= 0 or (kinds is not None and not kinds):
        return []
    async with conn.cursor() as cursor:
        await cursor.execute(*_pg_claim(worker_id, limit, now, lease, filters))
        rows = await cursor.fetchall()
    return pg_claimed(rows, filters.get("owners"))


@functools.cache
def _claim_statement(
    dialect: str, some_kinds: bool, exclude: bool, exclude_users: bool = False, owner: bool = False
) -> Any:
    """Built once per shape with bind parameters: built per call, the claim cost ~1 ms of CPU
    more (bench/queue.py's wake-up, where the claim is all a woken worker does). SQLite's
    claim; PostgreSQL runs :func:`pg_claim_sql`, which the tests compare with this one."""
    now = bindparam("now", type_=jobs.c.run_at.type)
    candidates = select(jobs.c.id).where(jobs.c.state == "pending", jobs.c.run_at <= now)
    if some_kinds:
        candidates = candidates.where(jobs.c.kind.in_(bindparam("kinds", expanding=True)))
    if exclude:
        candidates = candidates.where(jobs.c.kind.not_in(bindparam("exclude", expanding=True)))
    if exclude_users:
        full: Any = bindparam("exclude_users", expanding=True)
        their = select(projects.c.id).where(projects.c.user_id.in_(full))
        candidates = candidates.where(jobs.c.project_id.not_in(their))
    candidates = candidates.order_by(jobs.c.priority, jobs.c.run_at, jobs.c.id)
    candidates = candidates.limit(bindparam("limit"))
    if dialect == "postgresql":
        # A CTE fences the planner so LIMIT bounds the rows locked and updated (Oban's lesson).
        picked = candidates.with_for_update(skip_locked=True).cte("picked")
        stmt = update(jobs).where(jobs.c.id == picked.c.id)
    else:
        # SQLite serialises writers (BEGIN IMMEDIATE), so no row locks are needed.
        stmt = update(jobs).where(jobs.c.id.in_(candidates.scalar_subquery()))
    values = {
        "state": "processing",
        "attempt": jobs.c.attempt + 1,
        "worker_id": bindparam("worker_id"),
        "lease_expires_at": bindparam("lease_until", type_=jobs.c.lease_expires_at.type),
        "started_at": func.coalesce(jobs.c.started_at, now),
        "updated_at": now,
    }
    returned: list[Any] = list(jobs.c)
    if owner:  # the job's user, last: by primary key, one row per claimed job
        user = select(projects.c.user_id).where(projects.c.id == jobs.c.project_id)
        returned.append(user.correlate(jobs).scalar_subquery())
    return stmt.values(**values).returning(*returned)


def heartbeat(
    conn: Connection, worker_id: str, held: Iterable[tuple[int, int]], now: datetime, lease: float
) -> set[int]:
    """Extend the leases this worker still holds; returns the ids it still holds."""
    pairs = list(held)
    if not pairs:
        return set()
    stmt = (
        update(jobs)
        .where(
            tuple_(jobs.c.id, jobs.c.attempt).in_(pairs),
            jobs.c.state == "processing",
            jobs.c.worker_id == worker_id,
        )
        .values(lease_expires_at=now + timedelta(seconds=lease))
        .returning(jobs.c.id)
    )
    return {int(r) for r in conn.execute(stmt).scalars()}


def _held(job_id: Any, attempt: Any) -> Any:
    """The claim ``attempt`` still holds job ``job_id`` (values, or bind parameters of a
    statement built once)."""
    return and_(jobs.c.id == job_id, jobs.c.attempt == attempt, jobs.c.state == "processing")


def _finish_values(state: str, now: datetime) -> dict[str, Any]:
    return {
        "state": state,
        "completed_at": now,
        "updated_at": now,
        "worker_id": None,
        "lease_expires_at": None,
    }


def complete_many(
    db: Database,
    conn: Connection,
    done: Sequence[tuple[int, int, dict[str, Any] | None]],
    now: datetime,
    published: Callable[[Connection, list[int], datetime], None] | None = None,
) -> set[int]:
    """Mark claimed jobs completed, fenced by (id, attempt) and state, and publish what they
    collected. ``published(conn, job_ids, now)`` runs in the same transaction when some of
    them published a collection (the change events' outbox rows: seojobs.engine.changes).

    Returns the ids that were completed; a job missing from it had lost its claim.

    What these jobs collected becomes the latest collection with their completion, in the
    same transaction: a read never sees half a collection, nor a completed job without its
    data. Whichever claim collected it (a resumed job may not collect again), and cheap for
    jobs that collected nothing (an index lookup). Webhooks (issue 27): the outbox rows, in
    the transaction of the terminal state. On PostgreSQL the jobs without a result do all
    three in one statement (``_complete_plain_pg_statement``).
    """
    plain = [(job_id, attempt) for job_id, attempt, result in done if result is None]
    completed: set[int] = set()
    any_published = False
    if plain and db.dialect == "postgresql":
        ids, any_published = _complete_plain_pg(conn, plain, now)
        completed.update(ids)
        plain = []
    others = _complete(conn, plain, [d for d in done if d[2] is not None], now)
    if others:
        made = conn.execute(
            update(collections)
            .where(collections.c.job_id.in_(sorted(others)))
            .values(committed=True)
        )
        any_published = any_published or bool(made.rowcount)
        # Webhooks (issue 27): the outbox rows, in the transaction of the terminal state.
        webhooks.enqueue_for_jobs(
            conn, sorted(others), "job.completed", now, follow_up=SCHEDULED_CHECK
        )
    completed |= others
    if published is not None and any_published:
        published(conn, sorted(completed), now)
    return completed


def complete_in_one(db: Database, done: Sequence[tuple[int, int, dict[str, Any] | None]]) -> bool:
    """Whether :func:`complete_many` is a single statement for ``done`` (then it may run
    without a transaction block of its own, ``Database.write_statement``, when no
    ``published`` callback has anything to write)."""
    return db.dialect == "postgresql" and all(result is None for _i, _a, result in done)


def _complete(
    conn: Connection,
    plain: list[tuple[int, int]],
    with_results: Sequence[tuple[int, int, dict[str, Any] | None]],
    now: datetime,
) -> set[int]:
    completed: set[int] = set()
    if plain:
        stmt = (
            update(jobs)
            .where(tuple_(jobs.c.id, jobs.c.attempt).in_(plain), jobs.c.state == "processing")
            .values(**_finish_values("completed", now))
            .returning(jobs.c.id)
        )
        completed.update(int(r) for r in conn.execute(stmt).scalars())
    for job_id, attempt, result in with_results:
        stmt = (
            update(jobs)
            .where(_held(job_id, attempt))
            .values(result=result, **_finish_values("completed", now))
            .returning(jobs.c.id)
        )
        completed.update(int(r) for r in conn.execute(stmt).scalars())
    return completed


@functools.cache
def _complete_plain_pg_statement() -> Any:
    """Jobs without a result completed, their collections published and their outbox rows
    written, in one statement of data-modifying CTEs: one round trip per batch where three
    were (bench/queue.py on PostgreSQL, profiled). Two array parameters and constant SQL,
    where a row-value IN list would need two parameters per job and a 500-way OR plan. Every
    CTE runs to completion whether read or not, all on the statement's one snapshot (an
    endpoint committed before it is seen). Each row: a completed job's id, and whether the
    batch published any collection."""
    done = (
        func.unnest(
            cast(bindparam("ids"), postgresql.ARRAY(BigInteger)),
            cast(bindparam("attempts"), postgresql.ARRAY(Integer)),
        )
        .table_valued("id", "attempt")
        .render_derived(name="done")
    )
    now = bindparam("now", type_=jobs.c.completed_at.type)
    finished = (
        update(jobs)
        .where(
            jobs.c.id == done.c.id, jobs.c.attempt == done.c.attempt, jobs.c.state == "processing"
        )
        .values(
            state="completed",
            completed_at=now,
            updated_at=now,
            worker_id=None,
            lease_expires_at=None,
        )
        .returning(jobs.c.id, jobs.c.project_id, jobs.c.parent_id)
        .cte("finished")
    )
    published = (
        update(collections)
        .where(collections.c.job_id.in_(select(finished.c.id)))
        .values(committed=True)
        .returning(collections.c.job_id)
        .cte("published")
    )
    outbox = (
        webhooks.outbox_insert(finished, "job.completed", SCHEDULED_CHECK)
        .returning(webhooks.D.c.id)
        .cte("outbox")
    )
    some = select(published.c.job_id).exists()
    # The outbox rows wake the dispatchers (webhooks.woken): a column no one reads.
    return select(finished.c.id, some, webhooks.woken(outbox))


def _complete_plain_pg(
    conn: Connection, plain: list[tuple[int, int]], now: datetime
) -> tuple[list[int], bool]:
    """The completed ids, and whether they published any collection."""
    rows = conn.execute(
        _complete_plain_pg_statement(),
        {"now": now, "ids": [p[0] for p in plain], "attempts": [p[1] for p in plain]},
    ).all()
    return [int(r[0]) for r in rows], any(r[1] for r in rows)


def fail(
    conn: Connection, job_id: int, attempt: int, code: str, message: str, now: datetime
) -> bool:
    stmt = (
        update(jobs)
        .where(_held(job_id, attempt))
        .values(error_code=code, error_message=message, **_finish_values("failed", now))
    )
    failed = conn.execute(stmt).rowcount == 1
    if failed:  # webhooks (issue 27): the outbox rows, in the terminal state's transaction
        webhooks.enqueue_for_jobs(conn, [job_id], "job.failed", now)
    return failed


def release(conn: Connection, held: Sequence[tuple[int, int]], now: datetime) -> int:
    """Hand claimed jobs back (graceful shutdown): pending again, resumable at once, and the
    workers woken to take them (every process's: idle ones look only at their fallback poll)."""
    if not held:
        return 0
    stmt = (
        update(jobs)
        .where(tuple_(jobs.c.id, jobs.c.attempt).in_(held), jobs.c.state == "processing")
        .values(state="pending", worker_id=None, lease_expires_at=None, run_at=now, updated_at=now)
    )
    released: int = conn.execute(stmt).rowcount
    if released:
        notify(conn)
    return released


def record_items(
    conn: Connection,
    job_id: int,
    attempt: int,
    outcomes: Sequence[ItemOutcome],
    counters: dict[str, int],
    now: datetime,
) -> None:
    """Write finished items and the job's counters, or raise ``LeaseLost``.

    The job row is updated first: on PostgreSQL that locks it, so a cancel or rescue either
    happened before (and this raises) or waits until these items are written.
    """
    job = {
        "j_id": job_id,
        "j_attempt": attempt,
        "j_done": len(outcomes),
        "j_failed": sum(1 for o in outcomes if o.failed),
        "j_counters": counters,
        "j_at": now,
    }
    if conn.execute(_RECORD_JOB, job).rowcount != 1:
        raise LeaseLost(job_id)
    if not outcomes:
        return
    # The values as the columns' types bind them, the group's time once: SQLAlchemy's own
    # executemany built and processed every row's parameters in Python, a third of SQLite's
    # write of a group (a crawled page writes ~12 findings; bench/audit.py).
    dialect = conn.dialect
    at = _binder(job_items.c.finished_at, dialect)(now)
    as_json = _binder(findings.c.data, dialect)
    found = [
        {
            "f_job_id": job_id,
            "f_item_id": o.item_id,
            "f_code": finding.code,
            "f_severity": finding.severity,
            "f_data": as_json(finding.data),
            "f_created_at": at,
        }
        for o in outcomes
        for finding in o.findings
    ]
    if found:
        _executemany(conn, _INSERT_FINDINGS, found)
    # One executemany for the whole group rather than a statement per item.
    as_json = _binder(job_items.c.result, dialect)
    _executemany(
        conn,
        _RECORD_ITEM,
        [
            {
                "b_id": o.item_id,
                "b_job": job_id,
                "b_state": "failed" if o.failed else "done",
                "b_outcome": o.outcome,
                "b_result": as_json(o.result),
                "b_code": o.error_code,
                "b_message": o.error_message,
                "b_at": at,
            }
            for o in outcomes
        ],
    )


def _binder(column: Any, dialect: Any) -> Callable[[Any], Any]:
    """How ``column``'s type binds a value on ``dialect`` (JSON as text, a time as SQLite's
    text), for rows sent by :func:`_executemany`."""
    process = column.type.dialect_impl(dialect).bind_processor(dialect)
    return process if process is not None else _same


def _same(value: Any) -> Any:
    return value


def _executemany(conn: Connection, statement: Any, rows: list[dict[str, Any]]) -> None:
    """``statement`` (built once, its bind parameters named) for each of ``rows`` in one
    DBAPI executemany, each value as given: bound already (:func:`_binder`)."""
    sql, names, fixed = _compiled(statement, conn.dialect)
    if fixed:
        rows = [{**fixed, **row} for row in rows]
    if names is None:
        conn.exec_driver_sql(sql, rows)
    else:
        conn.exec_driver_sql(sql, [tuple(row[name] for name in names) for row in rows])


def _compiled(statement: Any, dialect: Any) -> tuple[str, tuple[str, ...] | None, dict[str, Any]]:
    """``statement``'s SQL for ``dialect``, its parameters' names in the order the SQL takes
    them (None: it takes them by name), and the values the statement holds itself (a
    literal's, bound); compiled once per dialect."""
    key = (statement, dialect.name)
    found = _COMPILED.get(key)
    if found is None:
        compiled = statement.compile(dialect=dialect)
        names = tuple(compiled.positiontup or ()) if compiled.positional else None
        fixed = {}
        for bind, name in compiled.bind_names.items():
            if not bind.required:
                process = bind.type.dialect_impl(dialect).bind_processor(dialect)
                value = bind.effective_value
                fixed[name] = process(value) if process is not None else value
        found = _COMPILED[key] = (str(compiled), names, fixed)
    return found


_COMPILED: dict[tuple[Any, str], tuple[str, tuple[str, ...] | None, dict[str, Any]]] = {}


def positional(
    statement: Any, dialect: Any, order: tuple[str, ...]
) -> tuple[str, Callable[[tuple[Any, ...]], tuple[Any, ...]]]:
    """``statement``'s SQL for ``dialect`` (a positional one: SQLite's) and what turns a row
    of its parameters, a tuple in ``order`` (bound already), into the tuple the SQL takes
    (with the values the statement holds itself): rows built as tuples at once, where
    :func:`_executemany` took dicts and made each a tuple."""
    key = (statement, dialect.name, order)
    found = _POSITIONAL.get(key)
    if found is None:
        sql, names, fixed = _compiled(statement, dialect)
        if names is None or sorted(names) != sorted((*order, *fixed)):
            raise ValueError(f"{statement} takes {names}, not {order}")
        given = (*order, *fixed)
        pick = operator.itemgetter(*(given.index(name) for name in names))
        held = tuple(fixed.values())
        found = _POSITIONAL[key] = (sql, lambda row: pick(row + held))
    return found


_POSITIONAL: dict[
    tuple[Any, str, tuple[str, ...]], tuple[str, Callable[[tuple[Any, ...]], tuple[Any, ...]]]
] = {}


def insert_rows(
    conn: Connection, statement: Any, order: tuple[str, ...], rows: list[tuple[Any, ...]]
) -> None:
    """``rows`` inserted by ``statement`` (a one-row INSERT ... VALUES, its parameters in
    ``order``), up to ``MANY_ROWS`` a statement: SQLite runs an INSERT's program once for all
    of its rows, where executemany ran it once a row (its start and end, a dozen findings a
    crawled page). The sizes are powers of two, so a connection prepares a handful of
    statements, not one per group size; a statement binds at most ``MANY_PARAMETERS``."""
    sql, pick = positional(statement, conn.dialect, order)
    head, values = sql.rsplit(" VALUES ", 1)
    if not (values.startswith("(") and values.endswith(")")):
        raise ValueError(f"not a one-row INSERT ... VALUES: {sql}")
    most = 1 << (min(MANY_ROWS, MANY_PARAMETERS // len(order)).bit_length() - 1)
    done = 0
    while done < len(rows):
        size = min(most, 1 << ((len(rows) - done).bit_length() - 1))
        chunk = rows[done : done + size]
        many = f"{head} VALUES {', '.join([values] * size)}"
        conn.exec_driver_sql(many, tuple(chain.from_iterable(map(pick, chunk))))
        done += size


MANY_ROWS = 128  # rows an INSERT of insert_rows takes at most
# Parameters a statement of insert_rows binds at most: SQLite before 3.32 took 999.
MANY_PARAMETERS = 999


# Built once, like _RECORD_ITEM: a job writes its results many times, and building the
# statement (and its cache key) cost more CPU than running it.
_RECORD_JOB = (
    update(jobs)
    .where(_held(bindparam("j_id"), bindparam("j_attempt")))
    .values(
        items_done=jobs.c.items_done + bindparam("j_done"),
        items_failed=jobs.c.items_failed + bindparam("j_failed"),
        counters=bindparam("j_counters", type_=jobs.c.counters.type),
        updated_at=bindparam("j_at", type_=jobs.c.updated_at.type),
    )
)

# The item is found by its primary key; `job_id + 0` keeps the fence (an item of this job)
# out of index selection. Without it, PostgreSQL planning a job whose items have no
# statistics yet picks ix_job_items_open (job_id, state) and scans every pending item of the
# job for each one written: 20,000 items took 19 s instead of 3.
_RECORD_ITEM = (
    update(job_items)
    .where(
        job_items.c.id == bindparam("b_id"),
        job_items.c.job_id + 0 == bindparam("b_job"),
        job_items.c.state == "pending",
    )
    .values(
        state=bindparam("b_state"),
        outcome=bindparam("b_outcome"),
        result=bindparam("b_result", type_=job_items.c.result.type),
        error_code=bindparam("b_code"),
        error_message=bindparam("b_message"),
        finished_at=bindparam("b_at", type_=job_items.c.finished_at.type),
    )
)


def bound_insert(into: Any, prefix: str, columns: str) -> tuple[Any, tuple[str, ...]]:
    """``into`` (an INSERT) of one row whose every column of ``columns`` (their names, by
    spaces) is a bind parameter named ``prefix`` and the column's name; and those names in
    that order (how :func:`positional` takes a row)."""
    names = columns.split()
    values: dict[str, Any] = {name: bindparam(prefix + name) for name in names}
    return into.values(values), tuple(prefix + name for name in names)


# Nothing returned (PostgreSQL's would return each id).
_INSERT_FINDINGS, INSERT_FINDINGS_ORDER = bound_insert(
    insert(findings).inline(), "f_", "job_id item_id code severity data created_at"
)


def finding_row(
    job_id: int, finding: NewFinding, now: datetime, *, item_id: int | None = None
) -> dict[str, Any]:
    return {
        "job_id": job_id,
        "item_id": item_id if item_id is not None else finding.item_id,
        "code": finding.code,
        "severity": finding.severity,
        "data": finding.data,
        "created_at": now,
    }


def fence(conn: Connection, job_id: int, attempt: int, now: datetime) -> None:
    """Raise ``LeaseLost`` unless this claim still holds the job; on PostgreSQL the UPDATE
    also locks the job row until the transaction ends, so a cancel or rescue waits."""
    if conn.execute(_FENCE, {"f_id": job_id, "f_attempt": attempt, "f_at": now}).rowcount != 1:
        raise LeaseLost(job_id)


# Built once, like _RECORD_JOB: every write of a running job's side effects is fenced.
_FENCE = (
    update(jobs)
    .where(_held(bindparam("f_id"), bindparam("f_attempt")))
    .values(updated_at=bindparam("f_at", type_=jobs.c.updated_at.type))
)


def still_held(conn: Connection, job_id: int, attempt: int) -> bool:
    found = conn.execute(_STILL_HELD, {"h_id": job_id, "h_attempt": attempt}).first()
    return found is not None


# Built once, like _FENCE: a rank check asks before each keyword's search.
_STILL_HELD = select(jobs.c.id).where(_held(bindparam("h_id"), bindparam("h_attempt")))


# -- control and maintenance ----------------------------------------------------------------


def cancel(conn: Connection, job_id: int, now: datetime, message: str) -> bool:
    stmt = (
        update(jobs)
        .where(jobs.c.id == job_id, jobs.c.state.in_(OPEN_STATES))
        .values(error_code="cancelled", error_message=message, **_finish_values("failed", now))
    )
    cancelled = conn.execute(stmt).rowcount == 1
    if cancelled:  # webhooks (issue 27): the outbox rows, in the terminal state's transaction
        webhooks.enqueue_for_jobs(conn, [job_id], "job.failed", now)
    return cancelled


# Whether any pending job is due (ix_jobs_claim answers it): part of an idle worker's look.
_ANY_DUE = (
    select(jobs.c.id)
    .where(jobs.c.state == "pending", jobs.c.run_at <= bindparam("now", type_=jobs.c.run_at.type))
    .limit(1)
)


# When the soonest lease runs out (ix_jobs_lease: the first entry of the processing ones).
_NEXT_EXPIRY = select(func.min(jobs.c.lease_expires_at)).where(jobs.c.state == "processing")


def next_expiry(conn: Connection) -> datetime | None:
    """When the soonest lease of a processing job runs out (what :func:`rescue` takes once it
    has); None: no job is processing."""
    found: datetime | None = conn.execute(_NEXT_EXPIRY).scalar()
    return found


# An idle worker's look (ix_jobs_claim answers both): is a pending job due, and when does
# the soonest of the others come due.
_LOOK = select(
    _ANY_DUE.exists(),
    select(func.min(jobs.c.run_at))
    .where(jobs.c.state == "pending", jobs.c.run_at > bindparam("now", type_=jobs.c.run_at.type))
    .scalar_subquery(),
)


def look(conn: Connection, now: datetime) -> tuple[bool, datetime | None]:
    """Whether some pending job is due by ``now`` (whatever its kind or user), and when the
    soonest pending job due later comes due (None: there is none)."""
    due, later = conn.execute(_LOOK, {"now": now}).one()
    return bool(due), later


_PG_LOOK = (
    "SELECT EXISTS (SELECT 1 FROM jobs WHERE state = 'pending' AND run_at <= %(now)s), "
    "(SELECT min(run_at) FROM jobs WHERE state = 'pending' AND run_at > %(now)s)"
)


async def look_async(conn: Any, now: datetime) -> tuple[bool, datetime | None]:
    """:func:`look` on PostgreSQL, on a psycopg ``AsyncConnection`` (the worker's claim
    connection, on its event loop: as its claims, no thread to wake)."""
    async with conn.cursor() as cursor:
        await cursor.execute(_PG_LOOK, {"now": now})
        row = await cursor.fetchone()
    due, later = row if row is not None else (False, None)
    return bool(due), None if later is None else later.astimezone(UTC)


def rescue(conn: Connection, now: datetime, max_rescues: int) -> tuple[int, int]:
    """Jobs whose lease expired go back to pending, or fail as ``worker_lost`` past the cap.

    Returns ``(resumed, failed)``. The expired lease is part of the WHERE clause, so a job
    completed or re-leased in the meantime is left alone.
    """
    expired = and_(jobs.c.state == "processing", jobs.c.lease_expires_at < now)
    lost = conn.execute(
        update(jobs)
        .where(expired, jobs.c.rescue_count >= max_rescues)
        .values(
            error_code="worker_lost",
            error_message=(
                f"the worker running this job stopped responding {max_rescues + 1} times; "
                "it was not retried again"
            ),
            rescue_count=jobs.c.rescue_count + 1,
            **_finish_values("failed", now),
        )
        .returning(jobs.c.id)
    ).scalars()
    lost_ids = [int(i) for i in lost]
    # webhooks (issue 27): the outbox rows, in the terminal state's transaction
    webhooks.enqueue_for_jobs(conn, lost_ids, "job.failed", now)
    resumed = conn.execute(
        update(jobs)
        .where(expired)
        .values(
            state="pending",
            worker_id=None,
            lease_expires_at=None,
            rescue_count=jobs.c.rescue_count + 1,
            run_at=now,
            updated_at=now,
        )
    ).rowcount
    return resumed, len(lost_ids)


def prune(conn: Connection, finished_before: datetime, limit: int = 5000) -> int:
    victims = (
        select(jobs.c.id)
        .where(jobs.c.state.in_(FINAL_STATES), jobs.c.completed_at < finished_before)
        .limit(limit)
    )
    ids = [int(r) for r in conn.execute(victims).scalars()]
    if not ids:
        return 0
    # Children keep existing with parent_id cleared (FK ON DELETE SET NULL).
    conn.execute(delete(job_items).where(job_items.c.job_id.in_(ids)))
    # What a job that never completed collected was never published: it goes with the job
    # (published collections stay, as history, with job_id cleared).
    conn.execute(
        delete(collections).where(collections.c.job_id.in_(ids), collections.c.committed.is_(False))
    )
    return conn.execute(delete(jobs).where(jobs.c.id.in_(ids))).rowcount


def children(
    conn: Connection, parent_ids: int | Sequence[int], *, kind: str | None = None
) -> list[JobRecord]:
    wanted = [parent_ids] if isinstance(parent_ids, int) else list(parent_ids)
    query = select(jobs).where(jobs.c.parent_id.in_(wanted))
    if kind:
        query = query.where(jobs.c.kind == kind)
    return [_job(r) for r in conn.execute(query.order_by(jobs.c.id))]


def cancel_children(conn: Connection, parent_id: int, now: datetime, message: str) -> int:
    """Cancel the open jobs a job spawned (e.g. a submission's pending follow-up check)."""
    stmt = (
        update(jobs)
        .where(jobs.c.parent_id == parent_id, jobs.c.state.in_(OPEN_STATES))
        .values(error_code="cancelled", error_message=message, **_finish_values("failed", now))
        .returning(jobs.c.id)
    )
    ids = [int(i) for i in conn.execute(stmt).scalars()]
    # webhooks (issue 27): the outbox rows, in the terminal state's transaction
    webhooks.enqueue_for_jobs(conn, ids, "job.failed", now)
    return len(ids)
