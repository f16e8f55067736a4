"""Webhook SQL (issue 27): endpoints, the deliveries outbox, attempts.

The outbox rows of a job's events are written by :func:`enqueue_for_jobs`, called from the
statements that give jobs their terminal state (``seojobs.store.jobs``), in their transaction:
a job is never completed without its deliveries, nor are deliveries written for a job whose
completion rolled back. It is one INSERT ... SELECT per batch, which writes nothing (and
costs one indexed lookup) when the jobs' users have no endpoint.

Whatever makes a delivery due wakes the dispatchers once it commits (``WEBHOOK_CHANNEL``:
NOTIFY on PostgreSQL, in the statement that writes the rows; this process's wake hooks on
SQLite), so a delivery does not wait for their poll.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import (
    BigInteger,
    Connection,
    and_,
    any_,
    bindparam,
    cast,
    delete,
    func,
    insert,
    literal,
    or_,
    select,
    true,
    union_all,
    update,
)
from sqlalchemy.dialects.postgresql import ARRAY

from seojobs.records import CollectionRecord
from seojobs.store.coltypes import UTCDateTime
from seojobs.store.db import WEBHOOK_CHANNEL, Database, notify
from seojobs.store.tables import (
    collections,
    jobs,
    projects,
    server_secrets,
    webhook_attempts,
    webhook_deliveries,
    webhook_endpoints,
)
from seojobs.webhook_records import (
    AttemptOutcome,
    AttemptRecord,
    DeliveryRecord,
    DueDelivery,
    EndpointRecord,
)

E = webhook_endpoints
D = webhook_deliveries
A = webhook_attempts


def _endpoint(row: Any) -> EndpointRecord:
    return EndpointRecord(**{c.name: row._mapping[c] for c in E.c})


def _delivery(row: Any) -> DeliveryRecord:
    return DeliveryRecord(**{c.name: row._mapping[c] for c in D.c})


# -- endpoints ------------------------------------------------------------------------------


def create_endpoint(conn: Connection, values: dict[str, Any]) -> EndpointRecord:
    return _endpoint(conn.execute(insert(E).values(values).returning(*E.c)).one())


def endpoints_of(conn: Connection, user_id: int) -> list[EndpointRecord]:
    """The user's endpoints (not the one-off ones of jobs' ``webhook_url``), oldest first."""
    query = select(E).where(E.c.user_id == user_id, E.c.job_id.is_(None)).order_by(E.c.id)
    return [_endpoint(r) for r in conn.execute(query)]


def get_endpoint(conn: Connection, endpoint_id: int, user_id: int) -> EndpointRecord | None:
    query = select(E).where(E.c.id == endpoint_id, E.c.user_id == user_id, E.c.job_id.is_(None))
    row = conn.execute(query).first()
    return _endpoint(row) if row else None


def update_endpoint(
    conn: Connection, endpoint_id: int, values: dict[str, Any]
) -> EndpointRecord | None:
    stmt = update(E).where(E.c.id == endpoint_id).values(values).returning(*E.c)
    row = conn.execute(stmt).first()
    return _endpoint(row) if row else None


def delete_endpoint(conn: Connection, endpoint_id: int, user_id: int) -> bool:
    stmt = delete(E).where(E.c.id == endpoint_id, E.c.user_id == user_id, E.c.job_id.is_(None))
    return conn.execute(stmt).rowcount == 1


# -- the outbox ------------------------------------------------------------------------------


def enqueue_for_jobs(
    conn: Connection,
    job_ids: Sequence[int],
    event_type: str,
    now: datetime,
    follow_up: str | None = None,
) -> None:
    """One pending delivery per (job, enabled endpoint of its user subscribed to the event):
    endpoints of the job's project or of all projects, and a job's own one-off endpoint.

    ``follow_up``: a second event type the jobs that are follow-ups (a submission's scheduled
    index check: ``parent_id`` set) make too, in the same statement; a job's one-off endpoint
    hears its follow-ups' (seed 000: the submission's ``webhook_url`` hears its check).

    SQLite first asks whether any enabled endpoint exists, a constant statement without
    parameters, in the same write transaction (writers are serialised there: an endpoint
    committed before it is seen); the INSERT ... SELECT, which binds every job id, runs only
    when one does. PostgreSQL runs the INSERT ... SELECT alone (one round trip, which writes
    nothing when no endpoint matches), with the ids as one array parameter, and the NOTIFY
    that wakes dispatchers in it when it wrote rows."""
    if not job_ids:
        return
    dialect = conn.dialect.name
    if dialect == "sqlite" and conn.execute(_ANY_ENDPOINT).first() is None:
        return
    statement = _enqueue_statement(dialect, event_type, follow_up)
    made = conn.execute(statement, {"ids": sorted(job_ids), "now": now})
    if dialect == "sqlite" and made.rowcount:
        notify(conn, WEBHOOK_CHANNEL)


_ANY_ENDPOINT = select(literal(1)).select_from(E).where(E.c.enabled.is_(True)).limit(1)


@functools.cache
def _enqueue_statement(dialect: str, event_type: str, follow_up: str | None) -> Any:
    """:func:`enqueue_for_jobs`' statement, built once (it runs in every completion batch:
    built per call, it cost more CPU than running it, bench/queue.py's hot path). The ids:
    an array on PostgreSQL (constant SQL, where an IN list of 500 ids was parsed anew by
    psycopg each time), an expanding IN list on SQLite."""
    if dialect == "postgresql":
        wanted = jobs.c.id == any_(cast(bindparam("ids"), ARRAY(BigInteger)))
    else:
        wanted = jobs.c.id.in_(bindparam("ids", expanding=True))
    finished = (
        select(jobs.c.id, jobs.c.project_id, jobs.c.parent_id).where(wanted).subquery("finished")
    )
    outbox = outbox_insert(finished, event_type, follow_up)
    if dialect != "postgresql":
        return outbox
    return select(woken(outbox.returning(D.c.id).cte("outbox")))


def woken(outbox: Any) -> Any:
    """A scalar subquery that NOTIFYs the dispatchers once if the CTE ``outbox`` (an INSERT
    into the outbox ``RETURNING`` its ids) wrote any row (PostgreSQL: the data-modifying CTE
    runs whether read or not; the NOTIFY is sent at commit)."""
    wrote = select(outbox.c.id).exists()
    return select(func.pg_notify(WEBHOOK_CHANNEL, "")).where(wrote).scalar_subquery()


def outbox_insert(finished: Any, event_type: str, follow_up: str | None = None) -> Any:
    """The INSERT ... SELECT of the outbox rows of ``finished`` (a selectable with the columns
    ``id``, ``project_id`` and ``parent_id`` of jobs that reached their terminal state), at
    the bind parameter ``now``: a statement of its own (:func:`enqueue_for_jobs`) or a CTE of
    the statement that completes the jobs (``seojobs.store.jobs`` on PostgreSQL)."""
    at = bindparam("now", type_=UTCDateTime)
    kind: Any = literal(event_type)
    hears = or_(E.c.events == "*", E.c.events.like(f"%,{event_type},%"))
    own = or_(E.c.job_id.is_(None), E.c.job_id == finished.c.id)
    joined = finished.join(projects, projects.c.id == finished.c.project_id).join(
        E, E.c.user_id == projects.c.user_id
    )
    if follow_up is not None:
        types = union_all(
            select(literal(event_type).label("t")), select(literal(follow_up).label("t"))
        ).subquery("t")
        kind = types.c.t
        is_follow_up = and_(types.c.t == follow_up, finished.c.parent_id.is_not(None))
        hears = and_(
            or_(types.c.t == event_type, is_follow_up),
            or_(E.c.events == "*", E.c.events.like(literal("%,") + types.c.t + literal(",%"))),
        )
        own = or_(own, and_(is_follow_up, E.c.job_id == finished.c.parent_id))
        joined = joined.join(types, true())
    source = (
        select(E.c.id, kind, finished.c.id, literal("pending"), literal(0), at, at, at)
        .select_from(joined)
        .where(
            E.c.enabled.is_(True),
            or_(E.c.project_id.is_(None), E.c.project_id == finished.c.project_id),
            own,
            hears,
        )
    )
    columns = [
        "endpoint_id",
        "event_type",
        "job_id",
        "state",
        "attempts",
        "next_attempt_at",
        "created_at",
        "updated_at",
    ]
    return insert(D).from_select(columns, source)


# -- change events (declared by the kinds: seojobs.reads.ChangeEvent) --------------------------


def change_endpoints(
    conn: Connection, job_ids: Sequence[int], event_types: Sequence[str]
) -> list[tuple[int, EndpointRecord]]:
    """(project id, endpoint) for each enabled endpoint of a user's own (not a job's one-off
    ``webhook_url``) that hears one of ``event_types`` from the project of one of the jobs.
    One indexed lookup, which finds nothing when the jobs' users have no such endpoint."""
    if not job_ids or not event_types:
        return []
    subscribed = [E.c.events == "*", *(E.c.events.like(f"%,{t},%") for t in event_types)]
    query = (
        select(jobs.c.project_id, E)
        .select_from(
            jobs.join(projects, projects.c.id == jobs.c.project_id).join(
                E, E.c.user_id == projects.c.user_id
            )
        )
        .where(
            jobs.c.id.in_(sorted(job_ids)),
            E.c.enabled.is_(True),
            E.c.job_id.is_(None),
            or_(E.c.project_id.is_(None), E.c.project_id == jobs.c.project_id),
            or_(*subscribed),
        )
    )
    found: dict[tuple[int, int], EndpointRecord] = {}  # not DISTINCT: PostgreSQL's json has no =
    for project_id, *values in conn.execute(query):
        endpoint = EndpointRecord(*values)
        found[(int(project_id), endpoint.id)] = endpoint
    return [(project, found[project, hook]) for project, hook in sorted(found)]


def published_with_previous(
    conn: Connection, job_ids: Sequence[int], kinds: Sequence[str]
) -> list[tuple[CollectionRecord | None, CollectionRecord]]:
    """(previous, new) for every published collection of ``kinds`` the jobs made: the
    previous is the newest published collection of the same kind and subject in the same
    project before it (None: the first)."""
    if not job_ids or not kinds:
        return []
    C = collections
    P = collections.alias("previous")
    previous_id = (
        select(func.max(P.c.id))
        .where(
            P.c.project_id == C.c.project_id,
            P.c.kind == C.c.kind,
            P.c.subject == C.c.subject,
            P.c.committed.is_(True),
            P.c.id < C.c.id,
        )
        .correlate(C)
        .scalar_subquery()
        .label("previous_id")
    )
    query = (
        select(C, previous_id)
        .where(C.c.job_id.in_(sorted(job_ids)), C.c.kind.in_(sorted(kinds)), C.c.committed)
        .order_by(C.c.id)
    )
    width = len(C.c)
    rows = [list(row) for row in conn.execute(query)]
    wanted = sorted({int(row[width]) for row in rows if row[width] is not None})
    before: dict[int, CollectionRecord] = {}
    if wanted:
        for found in conn.execute(select(C).where(C.c.id.in_(wanted))):
            before[int(found.id)] = CollectionRecord(**found._asdict())
    pairs = []
    for values in rows:
        new = CollectionRecord(**dict(zip(C.c.keys(), values[:width], strict=True)))
        previous = before.get(int(values[width])) if values[width] is not None else None
        pairs.append((previous, new))
    return pairs


def progress_endpoints(
    conn: Connection, job_id: int, event_type: str
) -> list[tuple[EndpointRecord, datetime | None]]:
    """The enabled endpoints (a user's own, not one-off) that name ``event_type`` (``*`` is
    not asking for it), each with when its last delivery of that event for this job was made
    (None: never)."""
    last = (
        select(func.max(D.c.created_at))
        .where(D.c.endpoint_id == E.c.id, D.c.job_id == job_id, D.c.event_type == event_type)
        .correlate(E)
        .scalar_subquery()
    )
    query = (
        select(E, last)
        .select_from(
            jobs.join(projects, projects.c.id == jobs.c.project_id).join(
                E, E.c.user_id == projects.c.user_id
            )
        )
        .where(
            jobs.c.id == job_id,
            E.c.enabled.is_(True),
            E.c.job_id.is_(None),
            or_(E.c.project_id.is_(None), E.c.project_id == jobs.c.project_id),
            E.c.events.like(f"%,{event_type},%"),
        )
        .order_by(E.c.id)
    )
    found = []
    for *values, made in conn.execute(query):
        found.append((EndpointRecord(*values), made))
    return found


def any_names(conn: Connection, event_type: str) -> bool:
    """Whether any enabled endpoint names ``event_type`` (``*`` does not)."""
    query = select(E.c.id).where(E.c.enabled.is_(True), E.c.events.like(f"%,{event_type},%"))
    return conn.execute(query.limit(1)).first() is not None


def add_messages(conn: Connection, messages: Sequence[dict[str, Any]], now: datetime) -> None:
    """Pending deliveries whose id and body are fixed already (``endpoint_id``, ``event_type``,
    ``job_id``, ``msg_id``, ``payload``): a change event's, written with its collection."""
    if not messages:
        return
    common = {
        "state": "pending",
        "attempts": 0,
        "next_attempt_at": now,
        "created_at": now,
        "updated_at": now,
    }
    conn.execute(insert(D), [{**m, **common} for m in messages])
    notify(conn, WEBHOOK_CHANNEL)


def claim_due(
    db: Database,
    conn: Connection,
    now: datetime,
    limit: int,
    *,
    per_endpoint: int | None = None,
    busy: Mapping[int, int] | None = None,
) -> list[DueDelivery]:
    """Pending deliveries that are due and unclaimed, oldest first, with their endpoints: the
    first half of a claim, which :func:`hold` completes in the same transaction. PostgreSQL
    locks them with SKIP LOCKED, so dispatchers claiming at once take different rows;
    SQLite's writers are serialised (``BEGIN IMMEDIATE``).

    ``per_endpoint``: at most this many to one endpoint, counting the ``busy`` ones (endpoint
    id: deliveries of it the caller has in flight). Endpoints already at the limit are left
    out of the scan, so a backlog of one endpoint cannot hide the others' deliveries."""
    busy = busy or {}
    unlocked = or_(D.c.locked_until.is_(None), D.c.locked_until < now)
    candidates = select(D).where(D.c.state == "pending", D.c.next_attempt_at <= now, unlocked)
    scan = limit
    if per_endpoint is not None:
        full = sorted(e for e, n in busy.items() if n >= per_endpoint)
        if full:
            candidates = candidates.where(D.c.endpoint_id.not_in(full))
        scan = limit * 2  # room for other endpoints behind one that reaches its limit here
    candidates = candidates.order_by(D.c.next_attempt_at, D.c.id).limit(scan)
    if db.dialect == "postgresql":
        candidates = candidates.with_for_update(skip_locked=True)
    claimed: list[DeliveryRecord] = []
    taken: dict[int, int] = {}
    for row in conn.execute(candidates):
        delivery = DeliveryRecord(*row)
        held = busy.get(delivery.endpoint_id, 0) + taken.get(delivery.endpoint_id, 0)
        if per_endpoint is not None and held >= per_endpoint:
            continue
        claimed.append(delivery)
        taken[delivery.endpoint_id] = taken.get(delivery.endpoint_id, 0) + 1
        if len(claimed) == limit:
            break
    if not claimed:
        return []
    # Each endpoint read once, not once per delivery (a burst is mostly one endpoint's).
    query = select(E).where(E.c.id.in_(sorted(taken)))
    endpoints = {e.id: e for e in (_endpoint(r) for r in conn.execute(query))}
    return [DueDelivery(d, endpoints[d.endpoint_id]) for d in claimed if d.endpoint_id in endpoints]


_HOLD = (
    update(D)
    .where(D.c.id == bindparam("b_id"))
    .values(
        locked_until=bindparam("b_until", type_=UTCDateTime),
        updated_at=bindparam("b_now", type_=UTCDateTime),
        msg_id=func.coalesce(D.c.msg_id, bindparam("b_msg", type_=D.c.msg_id.type)),
        payload=func.coalesce(D.c.payload, bindparam("b_payload", type_=D.c.payload.type)),
    )
)


def hold(
    conn: Connection,
    claimed: Sequence[tuple[int, str | None, str | None]],
    now: datetime,
    lock_for: float,
) -> None:
    """The second half of a claim: (delivery id, ``webhook-id``, body) claimed for
    ``lock_for`` seconds (a dispatcher that dies mid-attempt leaves them to another once the
    claim runs out), a new message's id and body fixed before its first attempt (every retry
    sends them; None keeps the stored ones). One statement for the batch."""
    if not claimed:
        return
    until = now + timedelta(seconds=lock_for)
    rows = [
        {"b_id": i, "b_until": until, "b_now": now, "b_msg": m, "b_payload": p}
        for i, m, p in claimed
    ]
    conn.execute(_HOLD, rows)


@dataclass(frozen=True)
class Recorded:
    """One attempt's outcome and what follows from it: the delivery's next state and next
    attempt, and what changes on its endpoint (``failing_since``, disabled)."""

    delivery_id: int
    outcome: AttemptOutcome
    state: str
    next_attempt_at: datetime | None
    endpoint_id: int
    endpoint_values: dict[str, Any] | None


_ATTEMPT = insert(A).values(
    delivery_id=bindparam("b_id"),
    attempted_at=bindparam("b_at", type_=UTCDateTime),
    status_code=bindparam("b_status"),
    latency_ms=bindparam("b_latency"),
    response_head=bindparam("b_head"),
    error=bindparam("b_error"),
)
_AFTER_ATTEMPT = (
    update(D)
    .where(D.c.id == bindparam("b_id"))
    .values(
        state=bindparam("b_state"),
        attempts=D.c.attempts + 1,
        locked_until=None,
        updated_at=bindparam("b_at", type_=UTCDateTime),
        last_error=bindparam("b_error"),
        next_attempt_at=func.coalesce(bindparam("b_next", type_=UTCDateTime), D.c.next_attempt_at),
    )
)


def record_attempts(conn: Connection, recorded: Sequence[Recorded], now: datetime) -> None:
    """Attempts' outcomes, their deliveries' next states and their endpoints' changes, in one
    transaction: one statement per table for the batch (a dispatcher records what its
    concurrent attempts got together)."""
    if not recorded:
        return
    conn.execute(
        _ATTEMPT,
        [
            {
                "b_id": r.delivery_id,
                "b_at": now,
                "b_status": r.outcome.status_code,
                "b_latency": r.outcome.latency_ms,
                "b_head": r.outcome.response_head,
                "b_error": r.outcome.error,
            }
            for r in recorded
        ],
    )
    conn.execute(
        _AFTER_ATTEMPT,
        [
            {
                "b_id": r.delivery_id,
                "b_state": r.state,
                "b_at": now,
                "b_error": None if r.outcome.succeeded else _error_text(r.outcome),
                "b_next": r.next_attempt_at,
            }
            for r in recorded
        ],
    )
    for r in recorded:
        if r.endpoint_values:
            conn.execute(update(E).where(E.c.id == r.endpoint_id).values(r.endpoint_values))
    if any(r.next_attempt_at is not None and r.state == "pending" for r in recorded):
        # A retry scheduled: every dispatcher learns when it comes due (``next_due``), the
        # other processes' too, which otherwise would look only at their fallback poll.
        notify(conn, WEBHOOK_CHANNEL)


def _error_text(outcome: AttemptOutcome) -> str:
    if outcome.error:
        return outcome.error
    return f"the endpoint answered {outcome.status_code}"


def give_up(conn: Connection, delivery_id: int, reason: str, now: datetime) -> None:
    """A due delivery that will not be attempted (its endpoint is disabled)."""
    conn.execute(
        update(D)
        .where(D.c.id == delivery_id)
        .values(state="failed", last_error=reason, locked_until=None, updated_at=now)
    )


def deliveries_of(
    conn: Connection, endpoint_id: int, *, before: int | None, limit: int
) -> list[tuple[DeliveryRecord, list[AttemptRecord]]]:
    """An endpoint's deliveries, newest first, each with its attempts (oldest first)."""
    query = select(D).where(D.c.endpoint_id == endpoint_id)
    if before is not None:
        query = query.where(D.c.id < before)
    found = [_delivery(r) for r in conn.execute(query.order_by(D.c.id.desc()).limit(limit))]
    attempts: dict[int, list[AttemptRecord]] = {d.id: [] for d in found}
    if found:
        rows = conn.execute(select(A).where(A.c.delivery_id.in_(list(attempts))).order_by(A.c.id))
        for row in rows:
            attempts[row.delivery_id].append(AttemptRecord(*row))
    return [(d, attempts[d.id]) for d in found]


def replay(conn: Connection, endpoint_id: int, delivery_id: int, now: datetime) -> bool:
    """Send a delivery again, now (same id and body): pending, due, unclaimed."""
    stmt = (
        update(D)
        .where(
            and_(D.c.id == delivery_id, D.c.endpoint_id == endpoint_id),
            or_(D.c.state != "pending", D.c.locked_until.is_(None)),
        )
        .values(state="pending", next_attempt_at=now, locked_until=None, updated_at=now)
    )
    if conn.execute(stmt).rowcount != 1:
        return False
    notify(conn, WEBHOOK_CHANNEL)
    return True


def next_due(conn: Connection, now: datetime, *, after: bool = False) -> datetime | None:
    """When the soonest unclaimed pending delivery is (or was) due, or with ``after`` the
    soonest due later than ``now``; None: there is none. A read (the dispatcher's idle look
    takes no write lock), walking ``ix_webhook_deliveries_due`` from its soonest row. A
    claimed one is left out: its dispatcher records it (a retry wakes the others) or dies,
    and then its claim runs out unannounced."""
    unlocked = or_(D.c.locked_until.is_(None), D.c.locked_until < now)
    query = select(D.c.next_attempt_at).where(D.c.state == "pending", unlocked)
    if after:
        query = query.where(D.c.next_attempt_at > now)
    found: datetime | None = conn.execute(query.order_by(D.c.next_attempt_at).limit(1)).scalar()
    return found


# -- one-off callbacks (a job's ``webhook_url``) ---------------------------------------------


def _callback_name(user_id: int) -> str:
    return f"webhook_callback:{user_id}"


def callback_secret(conn: Connection, user_id: int) -> str | None:
    """The secret that signs the user's jobs' one-off callbacks, if made."""
    query = select(server_secrets.c.value).where(server_secrets.c.name == _callback_name(user_id))
    found = conn.execute(query).scalar_one_or_none()
    return None if found is None else str(found)


def set_callback_secret(conn: Connection, user_id: int, secret: str) -> None:
    name = _callback_name(user_id)
    conn.execute(delete(server_secrets).where(server_secrets.c.name == name))
    conn.execute(insert(server_secrets).values(name=name, value=secret))
