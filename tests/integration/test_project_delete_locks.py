"""Deleting a project while one of its jobs is writing (PostgreSQL's row locks).

A worker's write locks its job row (the fence), then adds rows that point at it (a foreign key
takes a share lock on the job row). Deleting the project used to lock the project row and then
wait for the job row; when the worker then updated its job row again, it queued behind that
waiting delete: a deadlock, and PostgreSQL aborted the delete (seen as a 503 in the API). The
delete now locks the project's jobs before anything else, so it simply waits for the write.
"""

from __future__ import annotations

from datetime import UTC, datetime

import psycopg
import pytest

from seojobs.records import NewFinding, NewItem
from seojobs.services import Services
from seojobs.services.errors import NotFound
from seojobs.store import jobs as job_sql
from seojobs.store import results as result_sql
from tests.waiting import InThread, pg_waiting_for_a_lock, wait_until

pytestmark = pytest.mark.stores("postgresql")


def test_deleting_a_project_waits_for_its_running_job_write_instead_of_deadlocking(
    store_url: str, services: Services
) -> None:
    db = services.db
    user = services.accounts.create_user("alice").user
    doomed = services.accounts.create_project(user, "doomed")
    job, _ = services.jobs.create(user, "test_noop", {}, project_id=doomed.id)
    now = datetime.now(UTC)
    with db.write() as conn:
        [claimed] = job_sql.claim(db, conn, "w1", 1, now, 60.0)
    assert claimed.id == job.id

    database = store_url.rpartition("/")[2]
    with (
        db.write() as conn,
        psycopg.connect(store_url.replace("+psycopg", ""), autocommit=True) as admin,
    ):
        # A worker's changes in one transaction, as JobHost.apply writes them: the fence,
        # then rows that point at the job (their foreign key locks its row) ...
        found = [NewFinding("slow", "warning", {"url": "https://example.com/"})]
        result_sql.set_job_findings(conn, job.id, claimed.attempt, found, now)
        deleting = InThread(lambda: services.accounts.delete_project(user, doomed.id))
        wait_until(lambda: pg_waiting_for_a_lock(admin, database), timeout=30)
        # ... and, with the delete now waiting, the next change updates the job row again.
        items = [NewItem.of(f"https://example.com/{n}") for n in range(3)]
        result_sql.add_items(db, conn, job.id, claimed.attempt, items, now)
    deleted = deleting.outcome(timeout=30)
    assert deleted is None, deleted
    with pytest.raises(NotFound):
        services.jobs.get(user, job.id)
