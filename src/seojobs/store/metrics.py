"""What ``GET /metrics`` reports about the queue, read in one transaction: jobs by type and
state, how long the oldest due job has waited, leases that ran out, the workers holding jobs,
and the schedules that are on. Every query is answered from an index of ``jobs`` or a small
table, except the counts by type and state, which read every job once per scrape."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Connection, func, select

from seojobs.records import QueueSnapshot
from seojobs.store.tables import jobs, schedules


def snapshot(conn: Connection, now: datetime) -> QueueSnapshot:
    counts = conn.execute(
        select(jobs.c.kind, jobs.c.state, func.count()).group_by(jobs.c.state, jobs.c.kind)
    )
    oldest = conn.execute(
        select(func.min(jobs.c.run_at)).where(jobs.c.state == "pending", jobs.c.run_at <= now)
    ).scalar_one()
    expired = conn.execute(
        select(func.count()).where(jobs.c.state == "processing", jobs.c.lease_expires_at < now)
    ).scalar_one()
    workers = conn.execute(
        select(func.count(jobs.c.worker_id.distinct())).where(jobs.c.state == "processing")
    ).scalar_one()
    enabled = conn.execute(
        select(func.count()).select_from(schedules).where(schedules.c.enabled.is_(True))
    ).scalar_one()
    return QueueSnapshot(
        at=now,
        jobs=[(kind, state, int(n)) for kind, state, n in counts],
        oldest_due=oldest,
        expired_leases=int(expired),
        workers=int(workers),
        schedules_enabled=int(enabled),
    )
