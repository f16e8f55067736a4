"""Collected data is published by its job's completion, whichever claim collected it; when
finished jobs are pruned, what they published stays as history and what a job that never
completed collected goes with it."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import select

from seojobs.reads import Collected, Read
from seojobs.records import JobRecord
from seojobs.services import NotFound, Services
from seojobs.services import reads as read_svc
from seojobs.store import jobs as job_sql
from seojobs.store import results
from seojobs.store.coltypes import utcnow
from seojobs.store.db import Database
from seojobs.store.tables import collections


def _claim(db: Database, worker: str, later: timedelta = timedelta(0)) -> JobRecord:
    with db.write() as conn:
        [claimed] = job_sql.claim(db, conn, worker, 1, utcnow() + later, 30)
    return claimed


def _collect(db: Database, job: JobRecord, data: object, subject: str = "example.com") -> None:
    with db.write() as conn:
        results.collect(
            db,
            conn,
            job_id=job.id,
            attempt=job.attempt,
            project_id=job.project_id,
            kind=job.kind,
            rows=[(subject, data)],
            now=utcnow(),
        )


def _rows(db: Database) -> list[tuple[object, ...]]:
    query = select(collections.c.job_id, collections.c.committed, collections.c.data)
    with db.read() as conn:
        return [tuple(r) for r in conn.execute(query.order_by(collections.c.id))]


def test_a_resumed_job_publishes_what_an_earlier_claim_collected(
    services: Services, db: Database
) -> None:
    user = services.accounts.create_user("alice").user
    job, _ = services.jobs.create(user, "test_noop", {})
    first = _claim(db, "w1")
    _collect(db, first, {"pages": 3})
    # The first worker dies; the job is rescued, claimed again and completes without
    # collecting anything more.
    with db.write() as conn:
        assert job_sql.rescue(conn, utcnow() + timedelta(minutes=1), 3) == (1, 0)
    again = _claim(db, "w2", later=timedelta(minutes=2))  # the rescue made it due then
    with db.write() as conn:
        assert job_sql.complete_many(db, conn, [(again.id, again.attempt, None)], utcnow())
    with db.read() as conn:
        latest = results.latest(conn, job.project_id, "test_noop", "example.com")
    assert latest is not None and (latest.job_id, latest.data) == (job.id, {"pages": 3})


def test_pruning_keeps_published_history_and_drops_what_was_never_published(
    services: Services, db: Database
) -> None:
    user = services.accounts.create_user("alice").user
    done, _ = services.jobs.create(user, "test_noop", {})
    broken, _ = services.jobs.create(user, "test_noop", {})
    first = _claim(db, "w1")
    _collect(db, first, {"pages": 1})
    with db.write() as conn:
        assert job_sql.complete_many(db, conn, [(first.id, first.attempt, None)], utcnow())
    second = _claim(db, "w1")
    _collect(db, second, {"pages": 2})
    with db.write() as conn:
        assert job_sql.fail(conn, second.id, second.attempt, "boom", "it failed", utcnow())
    assert {first.id, second.id} == {done.id, broken.id}
    with db.write() as conn:
        assert job_sql.prune(conn, utcnow() + timedelta(days=1)) == 2
    # The published collection stays as history (its job is gone); the other one went.
    assert _rows(db) == [(None, True, {"pages": 1})]
    with db.read() as conn:
        latest = results.latest(conn, user.default_project_id, "test_noop", "example.com")
    assert latest is not None and latest.data == {"pages": 1}


def test_a_subject_longer_than_its_column_is_kept_whole_and_apart(
    services: Services, db: Database
) -> None:
    # A web-vitals subject is "<form factor> <url>", and a URL may have 2,048 characters: the
    # column holds 500 (PostgreSQL refused longer ones). Two that share their first 500
    # characters stay two subjects, each read back by the subject as the kind wrote it.
    user = services.accounts.create_user("alice").user
    job, _ = services.jobs.create(user, "test_noop", {})
    long_one = "mobile https://example.com/" + "a" * 700
    other = long_one[:600] + "b" * 100
    claimed = _claim(db, "w1")
    _collect(db, claimed, {"n": 1}, subject=long_one)
    _collect(db, claimed, {"n": 2}, subject=other)
    _collect(db, claimed, {"n": 3}, subject="short")
    with db.write() as conn:
        assert job_sql.complete_many(db, conn, [(claimed.id, claimed.attempt, None)], utcnow())
    with db.read() as conn:
        first = results.latest(conn, job.project_id, "test_noop", long_one)
        second = results.latest(conn, job.project_id, "test_noop", other)
        short = results.latest(conn, job.project_id, "test_noop", "short")
    assert first is not None and first.data == {"n": 1}
    assert second is not None and second.data == {"n": 2}
    assert short is not None and (short.subject, short.data) == ("short", {"n": 3})
    assert first.subject.startswith("sha256:") and len(first.subject) <= 500
    assert collections.c.subject.type.length == results.SUBJECT_MAX  # type: ignore[attr-defined]
    assert first.subject != second.subject
    assert services.collections.latest(user, job.project_id, "test_noop", long_one).data == {"n": 1}


def test_many_subjects_collected_in_one_write_are_each_kept_once_the_last_winning(
    services: Services, db: Database
) -> None:
    # A rank check collects its 2,000 keywords a chunk per write (one statement): a subject
    # given twice in one chunk, or again in a later write, keeps the last data.
    user = services.accounts.create_user("alice").user
    job, _ = services.jobs.create(user, "test_noop", {})
    claimed = _claim(db, "w1")
    with db.write() as conn:
        results.collect(
            db,
            conn,
            job_id=claimed.id,
            attempt=claimed.attempt,
            project_id=claimed.project_id,
            kind=claimed.kind,
            rows=[("a", {"n": 1}), ("b", {"n": 2}), ("a", {"n": 3})],
            now=utcnow(),
        )
    _collect(db, claimed, {"n": 4}, subject="b")
    with db.write() as conn:
        assert job_sql.complete_many(db, conn, [(claimed.id, claimed.attempt, None)], utcnow())
    assert [data for _job, _committed, data in _rows(db)] == [{"n": 3}, {"n": 4}]
    with db.read() as conn:
        a = results.latest(conn, job.project_id, "test_noop", "a")
        b = results.latest(conn, job.project_id, "test_noop", "b")
    assert a is not None and a.data == {"n": 3}
    assert b is not None and b.data == {"n": 4}


def test_a_jobs_collections_come_with_the_previous_of_each_subject_and_its_lowest_values(
    services: Services, db: Database
) -> None:
    # What a job's dashboard view reads (issue 28), in one statement on both stores: each
    # subject the job collected, the collection of that subject before it (of another job,
    # or none: the first), and a number's lowest value up to it (a best position).
    user = services.accounts.create_user("alice").user
    jobs = [services.jobs.create(user, "test_noop", {})[0] for _ in range(3)]
    positions = [
        {"a": {"position": 5}, "b": {"position": None}},
        {"a": {"position": 2}, "c": {"position": 7}},
        {"a": {"position": 3}, "b": {"position": 9}, "c": {"position": None}},
    ]
    for values in positions:
        claimed = _claim(db, "w1")
        for subject, data in values.items():
            _collect(db, claimed, data, subject=subject)
        with db.write() as conn:
            assert job_sql.complete_many(db, conn, [(claimed.id, claimed.attempt, None)], utcnow())
    project = jobs[0].project_id

    def read(job_id: int) -> list[tuple[str, object, object, dict[str, float]]]:
        found = services.collections.of_job(user, project, job_id, lowest=("position",))
        return [(t.subject, t.data, p.data if p else None, lowest) for t, p, lowest in found]

    assert read(jobs[0].id) == [
        ("a", {"position": 5}, None, {"position": 5.0}),
        ("b", {"position": None}, None, {}),
    ]
    assert read(jobs[2].id) == [
        ("a", {"position": 3}, {"position": 2}, {"position": 2.0}),
        ("b", {"position": 9}, {"position": None}, {"position": 9.0}),
        ("c", {"position": None}, {"position": 7}, {"position": 7.0}),
    ]
    # Another user's project is not theirs to read.
    bob = services.accounts.create_user("bob").user
    with pytest.raises(NotFound):
        services.collections.of_job(bob, project, jobs[0].id)


def test_a_jobs_history_is_its_collection_then_those_of_its_subject_before_it(
    services: Services, db: Database
) -> None:
    # A job view's score trend (issue 28), one statement on both stores: the job's newest
    # published collection the read selects, then the same subject's before it, newest
    # first, at most ``limit``; never a later one, another subject's or an unpublished one.
    user = services.accounts.create_user("alice").user
    subjects = ["a.com", "b.com", "a.com", "a.com", "a.com"]
    jobs = [services.jobs.create(user, "test_noop", {})[0] for _ in subjects]
    for n, subject in enumerate(subjects):
        claimed = _claim(db, "w1")
        _collect(db, claimed, {"n": n}, subject=subject)
        with db.write() as conn:
            if n == 3:  # collected, but the job failed: never published
                assert job_sql.fail(conn, claimed.id, claimed.attempt, "boom", "x", utcnow())
            else:
                done = [(claimed.id, claimed.attempt, None)]
                assert job_sql.complete_many(db, conn, done, utcnow())
    project = jobs[0].project_id
    every = Read("h", "h", "test_noop", Collected, source="history")
    only_b = Read("h", "h", "test_noop", Collected, source="history", subject_prefixes=("b.",))

    def history(job: JobRecord, limit: int = 12, read: Read = every) -> list[object]:
        found = read_svc.job_history(services, user, project, read, job.id, limit=limit)
        return [c.data["n"] for c in found]

    assert history(jobs[4]) == [4, 2, 0]
    assert history(jobs[4], limit=2) == [4, 2]
    assert history(jobs[2]) == [2, 0]
    assert history(jobs[2], limit=1) == [2]
    assert history(jobs[1]) == [1]
    assert history(jobs[3]) == []  # nothing published
    assert history(jobs[2], read=only_b) == []
    assert history(jobs[1], read=only_b) == [1]
    bob = services.accounts.create_user("bob").user
    with pytest.raises(NotFound):
        read_svc.job_history(services, bob, project, every, jobs[0].id, limit=12)
