"""A collection's tick firing while its project's collection is being changed (PostgreSQL's row
locks).

A change of a collection (``PUT /collection``, the backlink analysis's bulk monitor) locks the
user, then rewrites the schedule row. Firing a tick used to advance the schedule row first and
then lock the user for the job's quota: the two waited for each other, PostgreSQL aborted one
(deadlock detected) and either the change answered 503 or the tick was skipped. Seen in a CI
run as a failed bulk monitor right after the first one turned the daily refresh on. Firing now
takes the user's lock first, so it simply waits for the change; deleting a project takes it
first too (it held the project row and waited for the schedule row a firing held).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import psycopg
import pytest

from seojobs.engine.maintenance import latest_due_tick
from seojobs.kinds import load_registry
from seojobs.records import ProjectRecord, ScheduleRecord, UserRecord
from seojobs.services import Services
from seojobs.store import schedules as schedule_sql
from seojobs.store import usage as usage_sql
from seojobs.store.db import Database
from tests.conftest import make_settings
from tests.waiting import InThread, pg_waiting_for_a_lock, wait_until

pytestmark = pytest.mark.stores("postgresql")

LINK = {"donor": "https://donor.test/a", "target": "https://site.test/"}


Collected = tuple[Services, UserRecord, ProjectRecord, ScheduleRecord]


@pytest.fixture
def collected(store_url: str) -> Iterator[Collected]:
    """A user's project with its daily backlink_refresh collection on (one link): the
    services, the user, the project and the collection's schedule."""
    settings = make_settings(store_url)
    db = Database(store_url)
    services = Services(db, settings, load_registry(settings))
    try:
        user = services.accounts.create_user("alice").user
        project = services.accounts.create_project(user, "links")
        services.collection.change_params(
            user, project.id, "backlink_refresh", lambda _: {"links": [LINK]}
        )
        with db.read() as conn:
            [schedule] = [
                s for s in schedule_sql.list_for_project(conn, project.id) if s.collection
            ]
        assert schedule.enabled and schedule.kind == "backlink_refresh"
        yield services, user, project, schedule
    finally:
        db.dispose()


def test_a_tick_fired_during_a_collection_change_waits_for_it_instead_of_deadlocking(
    store_url: str, collected: Collected
) -> None:
    services, user, project, schedule = collected
    due = schedule.next_tick_at + timedelta(seconds=1)

    locked, go = threading.Event(), threading.Event()

    def hold_the_user(params: dict[str, Any]) -> dict[str, Any]:
        locked.set()  # change_params holds the user's lock while it asks for the change
        assert go.wait(timeout=30)
        return params  # the same params: the schedule row is written all the same

    database = store_url.rpartition("/")[2]
    with psycopg.connect(store_url.replace("+psycopg", ""), autocommit=True) as admin:
        changing = InThread(
            lambda: services.collection.change_params(
                user, project.id, "backlink_refresh", hold_the_user
            )
        )
        assert locked.wait(timeout=30)
        firing = InThread(lambda: services.schedules.fire(schedule, due))
        wait_until(lambda: pg_waiting_for_a_lock(admin, database), timeout=30)
        go.set()  # the change now rewrites the schedule row
        changed, fired = changing.outcome(), firing.outcome()
    assert not isinstance(changed, BaseException), changed
    assert not isinstance(fired, BaseException), fired
    assert isinstance(fired, int)  # the tick's job was made, once
    assert services.jobs.get(user, fired).kind == "backlink_refresh"


def test_deleting_a_project_while_its_tick_fires_waits_instead_of_deadlocking(
    store_url: str, collected: Collected
) -> None:
    """A tick's firing, in one transaction as ``Schedules.fire`` writes it: the user's lock,
    the schedule row advanced, then the job (its foreign key locks the project row). The
    delete used to take the project row and wait for the schedule row meanwhile."""
    services, user, project, schedule = collected
    db, registry = services.db, services.registry
    due = schedule.next_tick_at + timedelta(seconds=1)
    _tick, following = latest_due_tick(schedule, due)
    spec = registry.get("backlink_refresh")
    model = spec.validate(services.jobs.with_project(spec, project.id, schedule.params))

    database = store_url.rpartition("/")[2]
    with psycopg.connect(store_url.replace("+psycopg", ""), autocommit=True) as admin:
        with db.write() as conn:
            usage_sql.lock_user(db, conn, user.id)
            assert schedule_sql.advance(conn, schedule.id, schedule.next_tick_at, following)
            deleting = InThread(lambda: services.accounts.delete_project(user, project.id))
            wait_until(lambda: pg_waiting_for_a_lock(admin, database), timeout=30)
            services.jobs.insert(
                conn, user, spec, model, project_id=project.id, run_at=due, now=due
            )
        deleted = deleting.outcome()
    assert deleted is None, deleted  # the delete waited, then took the new job with it
    with db.read() as conn:
        assert schedule_sql.list_for_project(conn, project.id) == []
