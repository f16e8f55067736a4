"""``job.progress`` (issue 27): a running job's progress, to the endpoints that ask for it, at
most once per their ``every_seconds`` per job.

Only endpoints that name ``job.progress`` hear it (``*`` does not ask for it). A worker looks
whether any endpoint names it when it starts and every ``CHECK_SECONDS`` (:class:`Progress`,
off the write path). While one does, after a write that recorded items, at most once per
``CHECK_SECONDS`` per job (so a job writing results many times a second costs nothing more),
it calls :func:`progress_due`: it reads the endpoints that hear ``job.progress`` for the job,
each with when it was last told, and writes an outbox row (the job's body then, fixed) for
each one whose interval has passed. Progress is not a terminal state: its rows have their
own short transaction, after the write that made the progress.
"""

from __future__ import annotations

from datetime import datetime

from seojobs.jobbody import job_body
from seojobs.store import jobs as job_sql
from seojobs.store import webhooks as hook_sql
from seojobs.store.db import Database
from seojobs.webhook_records import PROGRESS, ProgressFilters, message

CHECK_SECONDS = 5.0  # the least every_seconds an endpoint may ask for


class Progress:
    """A worker's gates: whether any endpoint asks (``refresh``, by a loop of the worker), and
    when each running job may next be looked at (monotonic seconds)."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.asked = False
        self.next_at: dict[int, float] = {}

    def refresh(self) -> None:
        with self.db.read() as conn:
            self.asked = hook_sql.any_names(conn, PROGRESS)

    def due(self, job_id: int, now: float) -> bool:
        """Whether to look for the job's due rows now (no I/O)."""
        if not self.asked or now < self.next_at.get(job_id, 0.0):
            return False
        self.next_at[job_id] = now + CHECK_SECONDS
        return True


def interval(filters: object) -> int:
    given = filters.get(PROGRESS) if isinstance(filters, dict) else None
    try:
        return ProgressFilters.model_validate(given or {}).every_seconds
    except ValueError:  # checked when set; a model changed since: the default
        return ProgressFilters().every_seconds


def progress_due(db: Database, job_id: int, now: datetime) -> int:
    """Write the job's ``job.progress`` rows that are due; returns how many."""
    with db.read() as conn:
        hearing = hook_sql.progress_endpoints(conn, job_id, PROGRESS)
    due = [
        endpoint
        for endpoint, last in hearing
        if last is None or (now - last).total_seconds() >= interval(endpoint.filters)
    ]
    if not due:
        return 0
    with db.write() as conn:
        job = job_sql.get(conn, job_id)
        if job is None or job.is_final:
            return 0
        data = job_body(job)
        messages = []
        for endpoint in due:
            msg_id, payload = message(PROGRESS, now, data)
            messages.append(
                {
                    "endpoint_id": endpoint.id,
                    "event_type": PROGRESS,
                    "job_id": job_id,
                    "msg_id": msg_id,
                    "payload": payload,
                }
            )
        hook_sql.add_messages(conn, messages, now)
    return len(messages)
