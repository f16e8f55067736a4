"""One maintenance pass, as the elected leader runs it (both stores)."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from sqlalchemy import select

from seojobs.engine import maintenance
from seojobs.services import Invalid, Services
from seojobs.store import jobs as job_sql
from seojobs.store.coltypes import utcnow
from seojobs.store.db import Database
from seojobs.store.tables import jobs, leaders


def test_only_the_leader_does_maintenance(services: Services, db: Database) -> None:
    user = services.accounts.create_user("alice").user
    job, _ = services.jobs.create(user, "test_noop", {})
    now = utcnow()
    with db.write() as conn:
        job_sql.claim(db, conn, "dead-worker", 1, now, services.settings.lease_seconds)
    later = now + timedelta(seconds=services.settings.lease_seconds + 1)
    first = maintenance.run_once(db, services.settings, "a", later)
    assert first.leader and first.resumed == 1
    second = maintenance.run_once(db, services.settings, "b", later)
    assert not second.leader
    assert services.jobs.get(user, job.id).state == "pending"


def test_pass_prunes_after_the_retention_period(services: Services, db: Database) -> None:
    user = services.accounts.create_user("alice").user
    job, _ = services.jobs.create(user, "test_noop", {})
    services.jobs.cancel(user, job.id)
    soon = utcnow() + timedelta(days=29)
    assert maintenance.run_once(db, services.settings, "a", soon).pruned == 0
    late = utcnow() + timedelta(days=31)
    assert maintenance.run_once(db, services.settings, "a", late).pruned == 1
    with db.read() as conn:
        assert conn.execute(jobs.select()).first() is None


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({}, "schedule"),
        ({"every_days": 1, "cron": "0 3 * * *"}, "schedule"),
        ({"every_days": 0}, "every_days"),
        ({"every_seconds": -5}, "every_seconds"),
        ({"cron": "every tuesday"}, "cron"),
    ],
)
def test_bad_schedules_are_refused_with_the_field(
    services: Services, kwargs: dict[str, object], field: str
) -> None:
    user = services.accounts.create_user("alice").user
    with pytest.raises(Invalid) as info:
        services.schedules.create(user, name="s", kind="test_noop", params={}, **kwargs)  # type: ignore[arg-type]
    assert [e.path for e in info.value.errors] == [(field,)]
    assert _schedules(services, user.default_project_id) == []


def _schedules(services: Services, project_id: int) -> list[object]:
    from seojobs.store import schedules

    with services.db.read() as conn:
        return list(schedules.list_for_project(conn, project_id))


def _lease_until(db: Database) -> datetime:
    with db.read() as conn:
        return conn.execute(select(leaders.c.expires_at)).scalar_one()  # type: ignore[no-any-return]


def test_a_workers_pass_renews_its_lease_only_after_a_third_of_it(
    services: Services, db: Database
) -> None:
    """A worker's loop (``standing``) skips the renewal while most of the lease is left: an
    idle pass takes no write lock for it. It stays the leader, and nobody else takes over."""
    standing = maintenance.Standing()
    ttl = timedelta(seconds=max(services.settings.lease_seconds, 5.0))
    now = utcnow()
    assert maintenance.run_once(db, services.settings, "a", now, standing=standing).leader
    assert _lease_until(db) == now + ttl
    young = now + ttl / 3 - timedelta(milliseconds=100)
    assert maintenance.run_once(db, services.settings, "a", young, standing=standing).leader
    assert _lease_until(db) == now + ttl  # not renewed
    assert not maintenance.run_once(db, services.settings, "b", young).leader
    older = now + ttl / 3 + timedelta(milliseconds=100)
    assert maintenance.run_once(db, services.settings, "a", older, standing=standing).leader
    assert _lease_until(db) == older + ttl  # renewed
    # Lost (run out, taken by another): the next pass asks the database again.
    gone = older + ttl + timedelta(seconds=1)
    assert maintenance.run_once(db, services.settings, "b", gone).leader
    assert not maintenance.run_once(db, services.settings, "a", gone, standing=standing).leader
    assert standing.leader_until is None


def test_a_workers_pass_prunes_once_a_minute(services: Services, db: Database) -> None:
    user = services.accounts.create_user("alice").user
    standing = maintenance.Standing()
    first, _ = services.jobs.create(user, "test_noop", {})
    services.jobs.cancel(user, first.id)
    late = utcnow() + timedelta(days=31)
    assert maintenance.run_once(db, services.settings, "a", late, standing=standing).pruned == 1
    second, _ = services.jobs.create(user, "test_noop", {})
    services.jobs.cancel(user, second.id)
    soon = late + timedelta(seconds=maintenance.PRUNE_EVERY - 1)
    assert maintenance.run_once(db, services.settings, "a", soon, standing=standing).pruned == 0
    due = late + timedelta(seconds=maintenance.PRUNE_EVERY)
    assert maintenance.run_once(db, services.settings, "a", due, standing=standing).pruned == 1
