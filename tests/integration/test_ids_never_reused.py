"""An id, once handed out, is never handed out again (both stores): whatever removed the
newest rows -- deleting a project, a schedule or a user, pruning -- the next rows get ids
above every id given before, so a client or CLI state file holding an old id never reads
another row."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import delete

from seojobs.engine import maintenance
from seojobs.records import UserRecord
from seojobs.services import Services
from seojobs.store import jobs as job_sql
from seojobs.store.coltypes import utcnow
from seojobs.store.db import Database
from seojobs.store.tables import users
from tests.api_helpers import Api, assert_problem

Made = dict[str, list[int]]


def _make(services: Services, user: UserRecord, name: str) -> Made:
    """A project with a schedule and two jobs: the newest rows of their tables."""
    project = services.accounts.create_project(user, name)
    made = services.schedules.create(
        user,
        name="s",
        kind="test_noop",
        params={},
        project_id=project.id,
        every_days=1,
        # Never due while the test runs: a job it fired would take the next id itself.
        start_at=utcnow() + timedelta(days=3650),
    )
    jobs = [services.jobs.create(user, "test_noop", {}, project_id=project.id)[0] for _ in "ab"]
    return {
        "users": [user.id],
        "projects": [project.id],
        "schedules": [made.id],
        "jobs": [j.id for j in jobs],
    }


def _delete_project(services: Services, user: UserRecord, made: Made) -> None:
    services.accounts.delete_project(user, made["projects"][0])


def _delete_schedule(services: Services, user: UserRecord, made: Made) -> None:
    services.schedules.delete(user, made["projects"][0], made["schedules"][0])


def _delete_user(services: Services, user: UserRecord, made: Made) -> None:
    # There is no command for it yet; an operator deleting the row takes everything along.
    with services.db.write() as conn:
        conn.execute(delete(users).where(users.c.id == user.id))


def _prune(services: Services, user: UserRecord, made: Made) -> None:
    for job_id in made["jobs"]:
        services.jobs.cancel(user, job_id)
    later = utcnow() + timedelta(days=services.settings.retention_days + 1)
    report = maintenance.run_once(services.db, services.settings, "leader", later)
    assert (report.pruned, report.fired) == (len(made["jobs"]), 0)


def _prune_directly(services: Services, user: UserRecord, made: Made) -> None:
    for job_id in made["jobs"]:
        services.jobs.cancel(user, job_id)
    with services.db.write() as conn:
        assert job_sql.prune(conn, utcnow() + timedelta(seconds=1)) == len(made["jobs"])


Removal = Callable[[Services, UserRecord, Made], None]


@pytest.mark.parametrize(
    "remove",
    [_delete_project, _delete_schedule, _delete_user, _prune, _prune_directly],
    ids=["project", "schedule", "user", "maintenance-prune", "prune"],
)
def test_the_next_ids_are_above_every_id_handed_out(
    services: Services, db: Database, remove: Removal
) -> None:
    alice = services.accounts.create_user("alice").user
    _make(services, alice, "kept")
    doomed = services.accounts.create_user("bob").user
    given = _make(services, doomed, "doomed")
    remove(services, doomed, given)

    carol = services.accounts.create_user("carol").user
    again = _make(services, carol, "new")
    for table, ids in given.items():
        assert min(again[table]) > max(ids), (table, given, again)


def _created(answer: httpx.Response) -> int:
    assert answer.status_code in (201, 202), answer.text
    made: dict[str, Any] = answer.json()["data"]
    return int(made["id"])


def test_a_client_holding_old_ids_never_reads_new_rows(idle: Api) -> None:
    """Over HTTP: after the project went, its job and schedule ids stay 404 for good."""
    client = idle.client(idle.account())

    def project(name: str) -> int:
        return _created(client.post("/v1/projects", json={"name": name}))

    def job(project_id: int) -> int:
        body = {"type": "test_noop", "params": {}}
        return _created(client.post(f"/v1/projects/{project_id}/jobs", json=body))

    def schedule(project_id: int) -> int:
        body = {"name": "daily", "type": "test_noop", "params": {}, "every_days": 1}
        return _created(client.post(f"/v1/projects/{project_id}/schedules", json=body))

    doomed = project("doomed")
    old_jobs = [job(doomed) for _ in range(3)]
    old_schedule = schedule(doomed)
    assert client.delete(f"/v1/projects/{doomed}").status_code == 204

    kept = project("kept")
    assert kept > doomed
    assert min(job(kept) for _ in range(3)) > max(old_jobs)
    assert schedule(kept) > old_schedule
    for job_id in old_jobs:
        assert_problem(client.get(f"/v1/jobs/{job_id}"), 404)
    assert_problem(client.get(f"/v1/projects/{kept}/schedules/{old_schedule}"), 404)
