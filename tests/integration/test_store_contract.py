"""The store contract: every test here runs against SQLite and PostgreSQL (``store_url``)."""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import func, select, text
from sqlalchemy.exc import DBAPIError

from seojobs.engine.registry import Registry
from seojobs.records import ItemOutcome, NewFinding, NewItem, NewJob
from seojobs.services import Invalid, JobFinished, NotFound, Services
from seojobs.store import jobs as job_sql
from seojobs.store import leaders, results
from seojobs.store.coltypes import utcnow
from seojobs.store.db import Database
from seojobs.store.tables import findings, job_items, jobs
from tests.conftest import make_settings
from tests.statements import statements

LEASE = 30.0


def _claim(db: Database, worker: str = "w1", limit: int = 10, now=None):  # type: ignore[no-untyped-def]
    with db.write() as conn:
        return job_sql.claim(db, conn, worker, limit, now or utcnow(), LEASE)


def _get(db: Database, job_id: int):  # type: ignore[no-untyped-def]
    with db.read() as conn:
        return job_sql.get(conn, job_id)


def _count(db: Database, table) -> int:  # type: ignore[no-untyped-def]
    with db.read() as conn:
        return int(conn.execute(select(func.count()).select_from(table)).scalar_one())


# -- creating jobs --------------------------------------------------------------------------


def test_job_with_items_is_stored_pending(services: Services, db: Database) -> None:
    user = services.accounts.create_user("alice").user
    job, created = services.jobs.create(user, "test_items", {"urls": ["https://a/", "https://b/"]})
    assert created
    assert job.state == "pending"
    assert job.items_total == 2 and job.items_done == 0
    assert job.project_id == user.default_project_id
    items = services.jobs.items(user, job.id)
    assert [i.input for i in items] == ["https://a/", "https://b/"]
    assert {i.state for i in items} == {"pending"}


def test_invalid_params_are_refused_before_anything_is_stored(
    services: Services, db: Database
) -> None:
    user = services.accounts.create_user("alice").user
    with pytest.raises(Invalid) as info:
        services.jobs.create(user, "test_items", {"urls": [], "item_delay": -1})
    assert info.value.in_params
    assert {e.path for e in info.value.errors} == {("urls",), ("item_delay",)}
    with pytest.raises(Invalid) as unknown:
        services.jobs.create(user, "no_such_kind", {})
    assert unknown.value.code == "unknown_kind"
    assert [e.path for e in unknown.value.errors] == [("type",)]
    assert _count(db, jobs) == 0
    assert _count(db, job_items) == 0


def test_idempotency_key_returns_the_first_job(services: Services, db: Database) -> None:
    user = services.accounts.create_user("alice").user
    first, created = services.jobs.create(user, "test_noop", {}, idempotency_key="k1")
    again, created_again = services.jobs.create(user, "test_noop", {}, idempotency_key="k1")
    other, _ = services.jobs.create(user, "test_noop", {}, idempotency_key="k2")
    assert created and not created_again
    assert again.id == first.id != other.id
    assert _count(db, jobs) == 2


def test_other_users_jobs_are_not_found(services: Services) -> None:
    alice = services.accounts.create_user("alice").user
    bob = services.accounts.create_user("bob").user
    job, _ = services.jobs.create(alice, "test_noop", {})
    with pytest.raises(NotFound):
        services.jobs.get(bob, job.id)
    with pytest.raises(NotFound):
        services.jobs.cancel(bob, job.id)
    assert services.jobs.page(bob) == []
    assert [j.id for j in services.jobs.page(alice)] == [job.id]


def test_deleting_a_project_deletes_its_jobs_and_items(services: Services, db: Database) -> None:
    user = services.accounts.create_user("alice").user
    project = services.accounts.create_project(user, "site-a")
    kept, _ = services.jobs.create(user, "test_items", {"urls": ["x"]})
    gone, _ = services.jobs.create(user, "test_items", {"urls": ["y", "z"]}, project_id=project.id)
    services.accounts.delete_project(user, project.id)
    with pytest.raises(NotFound):
        services.jobs.get(user, gone.id)
    assert services.jobs.get(user, kept.id).id == kept.id
    assert _count(db, job_items) == 1


# -- claiming -------------------------------------------------------------------------------


def test_claim_takes_a_batch_in_priority_then_age_order(services: Services, db: Database) -> None:
    user = services.accounts.create_user("alice").user
    low = [services.jobs.create(user, "test_noop", {}, priority=5)[0] for _ in range(3)]
    high = [services.jobs.create(user, "test_noop", {}, priority=0)[0] for _ in range(3)]
    claimed = _claim(db, limit=4)
    assert [j.id for j in claimed] == [h.id for h in high] + [low[0].id]
    assert all(j.state == "processing" and j.attempt == 1 for j in claimed)
    assert all(j.worker_id == "w1" and j.lease_expires_at is not None for j in claimed)
    assert [j.id for j in _claim(db, "w2", limit=10)] == [low[1].id, low[2].id]
    assert _claim(db, "w3") == []


def test_delayed_job_is_not_claimed_before_run_at(services: Services, db: Database) -> None:
    user = services.accounts.create_user("alice").user
    job, _ = services.jobs.create(user, "test_noop", {}, delay_seconds=3600)
    assert _claim(db) == []
    later = utcnow() + timedelta(seconds=3601)
    assert [j.id for j in _claim(db, now=later)] == [job.id]


def test_concurrent_claimers_never_share_a_job(services: Services, store_url: str) -> None:
    user = services.accounts.create_user("alice").user
    with services.db.write() as conn:
        job_sql.insert_many_bare(
            services.db,
            conn,
            [
                NewJob(
                    project_id=user.default_project_id, kind="test_noop", params={}, run_at=utcnow()
                )
                for _ in range(400)
            ],
            utcnow(),
        )
    seen: list[list[int]] = [[] for _ in range(6)]
    databases = [Database(store_url) for _ in range(6)]

    def claimer(index: int) -> None:
        while True:
            got = _claim(databases[index], f"w{index}", limit=7)
            if not got:
                return
            seen[index].extend(j.id for j in got)

    threads = [threading.Thread(target=claimer, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for d in databases:
        d.dispose()
    everything = [job_id for ids in seen for job_id in ids]
    assert len(everything) == 400
    assert len(set(everything)) == 400


# -- leases, fencing and final states -------------------------------------------------------


def test_heartbeat_extends_only_leases_still_held(services: Services, db: Database) -> None:
    user = services.accounts.create_user("alice").user
    a, _ = services.jobs.create(user, "test_noop", {})
    b, _ = services.jobs.create(user, "test_noop", {})
    claimed = {j.id: j for j in _claim(db)}
    services.jobs.cancel(user, b.id)
    later = utcnow() + timedelta(seconds=10)
    with db.write() as conn:
        still = job_sql.heartbeat(
            conn, "w1", [(a.id, claimed[a.id].attempt), (b.id, claimed[b.id].attempt)], later, LEASE
        )
        stale = job_sql.heartbeat(conn, "w1", [(a.id, claimed[a.id].attempt - 1)], later, LEASE)
        other_worker = job_sql.heartbeat(conn, "w2", [(a.id, claimed[a.id].attempt)], later, LEASE)
    assert still == {a.id}
    assert stale == set() and other_worker == set()
    assert _get(db, a.id).lease_expires_at == later + timedelta(seconds=LEASE)


def test_final_states_are_never_changed_by_the_store(services: Services, db: Database) -> None:
    user = services.accounts.create_user("alice").user
    done, _ = services.jobs.create(user, "test_noop", {})
    failed, _ = services.jobs.create(user, "test_noop", {})
    claimed = {j.id: j for j in _claim(db)}
    now = utcnow()
    with db.write() as conn:
        assert job_sql.complete_many(
            db, conn, [(done.id, claimed[done.id].attempt, None)], now
        ) == {done.id}
        assert job_sql.fail(conn, failed.id, claimed[failed.id].attempt, "boom", "x", now)
    snapshot = {j: _get(db, j) for j in (done.id, failed.id)}
    far = now + timedelta(days=400)
    with db.write() as conn:
        for job_id in (done.id, failed.id):
            attempt = claimed[job_id].attempt
            assert not job_sql.fail(conn, job_id, attempt, "late", "late", far)
            assert (
                job_sql.complete_many(db, conn, [(job_id, attempt, {"late": True})], far) == set()
            )
            assert not job_sql.cancel(conn, job_id, far, "late")
            assert job_sql.release(conn, [(job_id, attempt)], far) == 0
            with pytest.raises(job_sql.LeaseLost):
                job_sql.record_items(conn, job_id, attempt, [], {"x": 1}, far)
        assert job_sql.rescue(conn, far, max_rescues=3) == (0, 0)
    assert {j: _get(db, j) for j in (done.id, failed.id)} == snapshot
    for final in (done, failed):  # a cancel is refused, with the state it found
        with pytest.raises(JobFinished) as refused:
            services.jobs.cancel(user, final.id)
        assert refused.value.state == snapshot[final.id].state
    assert {j: _get(db, j) for j in (done.id, failed.id)} == snapshot


@pytest.mark.parametrize("column_value", ["state = 'pending'", "error_code = 'x'", "result = NULL"])
def test_database_refuses_raw_updates_of_final_jobs(
    services: Services, db: Database, column_value: str
) -> None:
    """Even SQL that forgets the guard cannot change a finished job (trigger)."""
    user = services.accounts.create_user("alice").user
    job, _ = services.jobs.create(user, "test_noop", {})
    services.jobs.cancel(user, job.id)
    with pytest.raises(DBAPIError), db.write() as conn:
        conn.execute(text(f"UPDATE jobs SET {column_value} WHERE id = :id"), {"id": job.id})
    assert _get(db, job.id).state == "failed"


def test_open_jobs_can_still_be_updated_raw(services: Services, db: Database) -> None:
    """Control for the trigger test: the trigger is about final rows only."""
    user = services.accounts.create_user("alice").user
    job, _ = services.jobs.create(user, "test_noop", {})
    with db.write() as conn:
        conn.execute(text("UPDATE jobs SET priority = 3 WHERE id = :id"), {"id": job.id})
    assert _get(db, job.id).priority == 3


def test_rescue_resumes_expired_leases_and_caps_rescues(services: Services, db: Database) -> None:
    user = services.accounts.create_user("alice").user
    job, _ = services.jobs.create(user, "test_noop", {})
    now = utcnow()
    for round_ in range(3):
        claimed = _claim(db, now=now)
        assert [j.id for j in claimed] == [job.id]
        assert claimed[0].attempt == round_ + 1
        now += timedelta(seconds=LEASE + 1)
        with db.write() as conn:
            assert job_sql.rescue(conn, now, max_rescues=3) == (1, 0)
        assert _get(db, job.id).rescue_count == round_ + 1
    _claim(db, now=now)
    now += timedelta(seconds=LEASE + 1)
    with db.write() as conn:
        assert job_sql.rescue(conn, now, max_rescues=3) == (0, 1)
    final = _get(db, job.id)
    assert final.state == "failed" and final.error_code == "worker_lost"


def test_live_lease_is_not_rescued(services: Services, db: Database) -> None:
    user = services.accounts.create_user("alice").user
    services.jobs.create(user, "test_noop", {})
    _claim(db)
    with db.write() as conn:
        assert job_sql.rescue(conn, utcnow() + timedelta(seconds=LEASE - 1), 3) == (0, 0)


def test_rescue_then_late_completion_loses(services: Services, db: Database) -> None:
    user = services.accounts.create_user("alice").user
    job, _ = services.jobs.create(user, "test_noop", {})
    first = _claim(db)[0]
    later = utcnow() + timedelta(seconds=LEASE + 1)
    with db.write() as conn:
        job_sql.rescue(conn, later, 3)
    second = _claim(db, "w2", now=later)[0]
    with db.write() as conn:
        assert (
            job_sql.complete_many(db, conn, [(job.id, first.attempt, {"by": "late"})], later)
            == set()
        )
        assert not job_sql.fail(conn, job.id, first.attempt, "late", "late", later)
    current = _get(db, job.id)
    assert current.state == "processing" and current.worker_id == "w2"
    with db.write() as conn:
        assert job_sql.complete_many(db, conn, [(job.id, second.attempt, {"by": "w2"})], later)
    assert _get(db, job.id).result == {"by": "w2"}


def test_late_completion_then_rescue_changes_nothing(services: Services, db: Database) -> None:
    user = services.accounts.create_user("alice").user
    job, _ = services.jobs.create(user, "test_noop", {})
    first = _claim(db)[0]
    later = utcnow() + timedelta(seconds=LEASE + 1)
    # The lease has expired, but the worker is not dead yet: its completion still wins the race.
    with db.write() as conn:
        assert job_sql.complete_many(db, conn, [(job.id, first.attempt, None)], later) == {job.id}
        assert job_sql.rescue(conn, later, 3) == (0, 0)
    assert _get(db, job.id).state == "completed"


def _race_completion_against_rescue(services: Services, store_url: str, user) -> None:  # type: ignore[no-untyped-def]
    job, _ = services.jobs.create(user, "test_noop", {})
    claimed = _claim(services.db)[0]
    later = utcnow() + timedelta(seconds=LEASE + 1)
    results: dict[str, object] = {}
    dbs = [Database(store_url), Database(store_url)]
    barrier = threading.Barrier(2)

    def complete() -> None:
        barrier.wait()
        with dbs[0].write() as conn:
            results["completed"] = job_sql.complete_many(
                dbs[0], conn, [(job.id, claimed.attempt, None)], later
            )

    def rescue() -> None:
        barrier.wait()
        with dbs[1].write() as conn:
            results["rescued"] = job_sql.rescue(conn, later, 3)

    threads = [threading.Thread(target=complete), threading.Thread(target=rescue)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for d in dbs:
        d.dispose()
    state = _get(services.db, job.id).state
    if results["completed"]:
        assert state == "completed" and results["rescued"] == (0, 0)
    else:
        assert state == "pending" and results["rescued"] == (1, 0)


def test_rescue_racing_completion_from_threads(services: Services, store_url: str) -> None:
    """Many rounds of a real race: the final state is always the one that committed first."""
    user = services.accounts.create_user("alice").user
    for _ in range(15):
        _race_completion_against_rescue(services, store_url, user)


def test_record_items_is_fenced_by_the_claim(services: Services, db: Database) -> None:
    user = services.accounts.create_user("alice").user
    job, _ = services.jobs.create(user, "test_items", {"urls": ["a", "b"]})
    claimed = _claim(db)[0]
    items = services.jobs.items(user, job.id)
    with db.write() as conn:
        job_sql.record_items(
            conn,
            job.id,
            claimed.attempt,
            [ItemOutcome(item_id=items[0].id, failed=False, outcome="ok", result={"n": 1})],
            {"ok": 1},
            utcnow(),
        )
    services.jobs.cancel(user, job.id)
    with pytest.raises(job_sql.LeaseLost), db.write() as conn:
        job_sql.record_items(
            conn,
            job.id,
            claimed.attempt,
            [ItemOutcome(item_id=items[1].id, failed=False, outcome="ok")],
            {"ok": 2},
            utcnow(),
        )
    after = services.jobs.items(user, job.id)
    assert [i.state for i in after] == ["done", "pending"]
    assert _get(db, job.id).items_done == 1
    assert _get(db, job.id).counters == {"ok": 1}


def _found(db: Database, job_id: int) -> list[tuple[Any, ...]]:
    with db.read() as conn:
        rows = conn.execute(
            select(findings.c.item_id, findings.c.code, findings.c.data)
            .where(findings.c.job_id == job_id)
            .order_by(findings.c.id)
        )
        return [tuple(r) for r in rows]


def test_results_and_the_items_they_found_are_written_together(
    services: Services, db: Database
) -> None:
    """``results.record``: a group's outcomes, findings and counters with the new items the
    group found (a crawler's links), in one write; items the job has are skipped."""
    user = services.accounts.create_user("alice").user
    job, _ = services.jobs.create(user, "test_items", {"urls": ["a", "b"]})
    claimed = _claim(db)[0]
    a, b = services.jobs.items(user, job.id)
    outcomes = [
        ItemOutcome(
            item_id=a.id,
            failed=False,
            outcome="ok",
            result={"n": 1, "text": "é\u2028"},
            findings=(NewFinding("thin", "warning", {"words": 3}), NewFinding("odd", "notice")),
        ),
        ItemOutcome(item_id=b.id, failed=True, error_code="e", error_message="boom"),
    ]
    found = [NewItem.of("c", {"depth": 1}), NewItem.of("a"), NewItem.of("d")]
    with db.write_statement() as conn:
        added = results.record(
            db, conn, job.id, claimed.attempt, outcomes, {"ok": 1, "failed": 1}, found, utcnow()
        )
    assert added == 2  # "a" is the job's already
    items = services.jobs.items(user, job.id)
    assert [(i.seq, i.input, i.state) for i in items] == [
        (0, "a", "done"),
        (1, "b", "failed"),
        (2, "c", "pending"),
        (4, "d", "pending"),  # the skipped "a" leaves its number unused, as add_items does
    ]
    assert items[0].result == {"n": 1, "text": "é\u2028"} and items[0].outcome == "ok"
    assert items[1].result is None and items[1].error_code == "e"
    assert items[1].error_message == "boom" and items[2].data == {"depth": 1}
    assert items[3].data is None
    assert _found(db, job.id) == [(a.id, "thin", {"words": 3}), (a.id, "odd", None)]
    # None is written as JSON null, not SQL NULL, on both stores (SQLAlchemy's JSON type's way)
    assert _sql_nulls(db, job.id) == (0, 0, 0)
    after = _get(db, job.id)
    assert (after.items_total, after.items_done, after.items_failed) == (4, 2, 1)
    assert after.counters == {"ok": 1, "failed": 1}


def test_a_group_of_results_updates_the_jobs_row_once(services: Services, db: Database) -> None:
    """``results.record`` fences the job, counts the group's items and adds the new ones to
    its total in one update of the job's row (a crawl writes a group every few pages; on
    SQLite it took three), however many findings the group holds: all kept, in order."""
    user = services.accounts.create_user("alice").user
    job, _ = services.jobs.create(user, "test_items", {"urls": ["a", "b"]})
    claimed = _claim(db)[0]
    a, b = services.jobs.items(user, job.id)
    many = [NewFinding(f"f{n % 7}", "notice", {"n": n}) for n in range(300)]
    outcomes = [
        ItemOutcome(a.id, False, "ok", {"n": 1}, findings=tuple(many[:163])),
        ItemOutcome(b.id, False, "ok", {"n": 2}, findings=tuple(many[163:])),
    ]
    found = [NewItem.of("c"), NewItem.of("d", {"depth": 1})]
    with statements(db) as seen, db.write_statement() as conn:
        added = results.record(
            db, conn, job.id, claimed.attempt, outcomes, {"ok": 2}, found, utcnow()
        )
    assert added == 2
    assert sum("UPDATE jobs" in statement for statement in seen) == 1, seen
    expected = [(a.id if n < 163 else b.id, f"f{n % 7}", {"n": n}) for n in range(300)]
    assert _found(db, job.id) == expected
    items = services.jobs.items(user, job.id)
    assert [(i.seq, i.input, i.state, i.data) for i in items[2:]] == [
        (2, "c", "pending", None),
        (3, "d", "pending", {"depth": 1}),
    ]
    assert [i.result for i in items[:2]] == [{"n": 1}, {"n": 2}]
    after = _get(db, job.id)
    assert (after.items_total, after.items_done, after.counters) == (4, 2, {"ok": 2})


def test_a_group_of_results_is_written_storable(services: Services, db: Database) -> None:
    """``results.record`` makes what it writes storable itself (the worker leaves a group of
    results to it): a NUL or a lone surrogate anywhere in a group, results, findings, errors,
    new items and counters, is written as U+FFFD on both stores (PostgreSQL refuses both)."""
    user = services.accounts.create_user("alice").user
    job, _ = services.jobs.create(user, "test_items", {"urls": ["a", "b"]})
    claimed = _claim(db)[0]
    a, b = services.jobs.items(user, job.id)
    odd = "x\x00y\ud800"
    outcomes = [
        ItemOutcome(
            a.id, False, "ok", {odd: [odd]}, findings=(NewFinding("f", "notice", {"t": odd}),)
        ),
        ItemOutcome(b.id, True, error_code="e", error_message=odd),
    ]
    with db.write_statement() as conn:
        results.record(
            db,
            conn,
            job.id,
            claimed.attempt,
            outcomes,
            {"ok": 1},
            [NewItem(odd, "k", {"u": odd})],
            utcnow(),
        )
    fixed = "x\ufffdy\ufffd"
    items = services.jobs.items(user, job.id)
    assert items[0].result == {fixed: [fixed]} and items[1].error_message == fixed
    assert [(i.input, i.data) for i in items[2:]] == [(fixed, {"u": fixed})]
    assert _found(db, job.id) == [(a.id, "f", {"t": fixed})]


def _sql_nulls(db: Database, job_id: int) -> tuple[int, int, int]:
    """SQL NULLs among the job's finished items' results, its findings' data and its
    items' data."""
    with db.read() as conn:
        counted = [
            conn.execute(
                select(func.count()).select_from(table).where(table.c.job_id == job_id, *where)
            ).scalar_one()
            for table, where in (
                (job_items, (job_items.c.state != "pending", job_items.c.result.is_(None))),
                (findings, (findings.c.data.is_(None),)),
                (job_items, (job_items.c.data.is_(None),)),
            )
        ]
    return counted[0], counted[1], counted[2]


def test_a_lost_claim_records_neither_results_nor_the_items_they_found(
    services: Services, db: Database
) -> None:
    user = services.accounts.create_user("alice").user
    job, _ = services.jobs.create(user, "test_items", {"urls": ["a"]})
    claimed = _claim(db)[0]
    [a] = services.jobs.items(user, job.id)
    services.jobs.cancel(user, job.id)
    outcome = ItemOutcome(a.id, False, "ok", findings=(NewFinding("thin", "warning"),))
    with pytest.raises(job_sql.LeaseLost), db.write_statement() as conn:
        results.record(
            db, conn, job.id, claimed.attempt, [outcome], {"ok": 1}, [NewItem.of("b")], utcnow()
        )
    assert [(i.input, i.state) for i in services.jobs.items(user, job.id)] == [("a", "pending")]
    assert _found(db, job.id) == []
    after = _get(db, job.id)
    assert (after.items_total, after.items_done, after.counters) == (1, 0, {})


def test_writing_an_item_finds_it_by_its_key_before_statistics_exist(
    services: Services, db: Database
) -> None:
    """A new job's items have no planner statistics yet: writing one must still find it by
    its primary key, not scan the job's pending items (once per item: quadratic)."""
    user = services.accounts.create_user("alice").user
    job, _ = services.jobs.create(user, "test_items", {"urls": [f"u{n}" for n in range(3000)]})
    item = services.jobs.items(user, job.id)[0]
    with db.read() as conn:
        compiled = job_sql._RECORD_ITEM.compile(dialect=conn.dialect)
        values = {"b_id": item.id, "b_job": job.id, "b_state": "done", "b_outcome": "ok"}
        values |= {"b_result": None, "b_code": None, "b_message": None, "b_at": "2026-01-01"}
        params: Any = compiled.construct_params(values)
        if compiled.positional:
            params = tuple(params[name] for name in compiled.positiontup or ())
        explain = "EXPLAIN " if db.dialect == "postgresql" else "EXPLAIN QUERY PLAN "
        plan = " ".join(str(row) for row in conn.exec_driver_sql(explain + str(compiled), params))
    assert "ix_job_items_open" not in plan, plan
    assert ("pk_job_items" in plan) or ("INTEGER PRIMARY KEY" in plan), plan


def test_a_group_of_results_finds_its_items_by_key_before_statistics_exist(
    pg_url: str, registry: Registry
) -> None:
    """The same for PostgreSQL's one-statement group write (results.record): its items are
    found by primary key, the job's pending items never scanned."""
    db = Database(pg_url)
    services = Services(db, make_settings(pg_url), registry)
    user = services.accounts.create_user("alice").user
    job, _ = services.jobs.create(user, "test_items", {"urls": [f"u{n}" for n in range(3000)]})
    items = services.jobs.items(user, job.id)[:8]
    outcomes = [ItemOutcome(i.id, False, "ok", {"n": 1}) for i in items]
    with db.read() as conn:
        statement, params = results._record_pg_statement(
            job.id, 1, outcomes, {"ok": 8}, [NewItem.of("new")], utcnow()
        )
        explain = conn.execute(text("EXPLAIN " + statement.text), params)
        plan = " ".join(str(row) for row in explain)
    db.dispose()
    assert "ix_job_items_open" not in plan and "Seq Scan on job_items" not in plan, plan
    assert "pk_job_items" in plan, plan


def test_an_item_added_finished_is_stored_done_once_and_never_run(
    services: Services, db: Database
) -> None:
    user = services.accounts.create_user("alice").user
    job, _ = services.jobs.create(user, "test_items", {"urls": ["a"]})
    claimed = _claim(db)[0]
    found = (NewFinding("thin", "notice", {"url": "b"}),)
    outcome = ItemOutcome(item_id=0, failed=False, outcome="ok", result={"n": 2}, findings=found)

    def add(counters: dict[str, int]) -> bool:
        with db.write() as conn:
            return results.add_finished_item(
                db, conn, job.id, claimed.attempt, NewItem.of("b"), outcome, counters, utcnow()
            )

    assert add({"ok": 1}) is True
    assert add({"ok": 2}) is False  # the job has "b": nothing written, counters kept
    items = services.jobs.items(user, job.id)
    assert [(i.input, i.state, i.result) for i in items] == [
        ("a", "pending", None),
        ("b", "done", {"n": 2}),
    ]
    after = _get(db, job.id)
    assert (after.items_total, after.items_done, after.counters) == (2, 1, {"ok": 1})
    [finding] = services.jobs.findings(user, job.id)
    assert (finding.code, finding.item_id) == ("thin", items[1].id)
    with db.read() as conn:  # the pending item is the only one left to run
        assert [i.input for i in job_sql.items_page(conn, job.id, only_open=True)] == ["a"]


def test_cancel_pending_job_fails_it_as_cancelled(services: Services, db: Database) -> None:
    user = services.accounts.create_user("alice").user
    job, _ = services.jobs.create(user, "test_noop", {})
    cancelled = services.jobs.cancel(user, job.id)
    assert cancelled.state == "failed"
    assert cancelled.error_code == "cancelled"
    assert cancelled.completed_at is not None
    assert _claim(db) == []


def test_release_hands_the_job_back(services: Services, db: Database) -> None:
    user = services.accounts.create_user("alice").user
    job, _ = services.jobs.create(user, "test_noop", {})
    claimed = _claim(db)[0]
    with db.write() as conn:
        assert job_sql.release(conn, [(job.id, claimed.attempt)], utcnow()) == 1
    again = _claim(db, "w2")[0]
    assert again.id == job.id and again.attempt == claimed.attempt + 1
    assert again.rescue_count == 0


# -- leadership and pruning -----------------------------------------------------------------


def test_one_leader_at_a_time(db: Database) -> None:
    now = utcnow()
    with db.write() as conn:
        assert leaders.acquire(db, conn, "maintenance", "a", now, ttl=10)
    with db.write() as conn:
        assert not leaders.acquire(db, conn, "maintenance", "b", now + timedelta(seconds=5), 10)
    with db.write() as conn:
        assert leaders.acquire(db, conn, "maintenance", "a", now + timedelta(seconds=5), 10)
    with db.write() as conn:
        assert not leaders.acquire(db, conn, "maintenance", "b", now + timedelta(seconds=14), 10)
    with db.write() as conn:
        assert leaders.acquire(db, conn, "maintenance", "b", now + timedelta(seconds=16), 10)
    with db.write() as conn:
        leaders.resign(conn, "maintenance", "b")
    with db.write() as conn:
        assert leaders.acquire(db, conn, "maintenance", "a", now + timedelta(seconds=16), 10)


def test_prune_deletes_only_old_finished_jobs(services: Services, db: Database) -> None:
    user = services.accounts.create_user("alice").user
    old, _ = services.jobs.create(user, "test_items", {"urls": ["a"]})
    fresh, _ = services.jobs.create(user, "test_noop", {})
    still_open, _ = services.jobs.create(user, "test_noop", {}, delay_seconds=10**6)
    services.jobs.cancel(user, old.id)
    horizon = utcnow() + timedelta(days=31)
    with db.write() as conn:
        conn.execute(
            jobs.update()
            .where(jobs.c.id == fresh.id)
            .values(completed_at=horizon, state="completed", updated_at=horizon)
        )
        assert job_sql.prune(conn, finished_before=horizon - timedelta(days=1)) == 1
    assert _get(db, old.id) is None
    assert _get(db, fresh.id) is not None and _get(db, still_open.id) is not None
    assert _count(db, job_items) == 0


def test_a_tick_fires_once_even_when_leaders_race(services: Services, store_url: str) -> None:
    """Leadership is the first guard; the (schedule, tick) unique key is the last one."""
    from seojobs.engine.maintenance import fire_due_schedules

    user = services.accounts.create_user("alice").user
    start = utcnow() - timedelta(seconds=10)
    schedule = services.schedules.create(
        user, name="s", kind="test_noop", params={}, every_seconds=60, start_at=start
    )
    dbs = [Database(store_url) for _ in range(3)]
    barrier = threading.Barrier(3)
    fired: list[int] = []

    def racer(d: Database) -> None:
        barrier.wait()
        fire = Services(d, services.settings, services.registry).schedules.fire
        fired.append(fire_due_schedules(d, utcnow(), fire))

    threads = [threading.Thread(target=racer, args=(d,)) for d in dbs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for d in dbs:
        d.dispose()
    assert sum(fired) == 1
    with services.db.read() as conn:
        ticks = list(
            conn.execute(
                select(jobs.c.schedule_tick).where(jobs.c.schedule_id == schedule.id)
            ).scalars()
        )
    assert ticks == [start]


def test_missed_ticks_are_not_backfilled(services: Services, db: Database) -> None:
    from seojobs.engine.maintenance import fire_due_schedules

    user = services.accounts.create_user("alice").user
    start = utcnow() - timedelta(seconds=350)
    services.schedules.create(
        user, name="s", kind="test_noop", params={}, every_seconds=100, start_at=start
    )
    assert fire_due_schedules(db, utcnow(), services.schedules.fire) == 1
    assert fire_due_schedules(db, utcnow(), services.schedules.fire) == 0
    with db.read() as conn:
        ticks = list(conn.execute(select(jobs.c.schedule_tick)).scalars())
    assert ticks == [start + timedelta(seconds=300)]


def test_the_overview_counts_jobs_from_an_index_alone(services: Services, db: Database) -> None:
    """Counting 100,000 jobs per state and kind read every row (60-70 ms per overview):
    ix_jobs_project_state answers it without touching the table."""
    user = services.accounts.create_user("alice").user
    services.jobs.create(user, "test_items", {"urls": ["a"]})
    query = job_sql.counts_query([user.default_project_id])
    with db.read() as conn:
        compiled = query.compile(dialect=conn.dialect, compile_kwargs={"literal_binds": True})
        if db.dialect == "postgresql":
            conn.exec_driver_sql("SET LOCAL enable_seqscan = off")  # a tiny table: no scans
            explain = "EXPLAIN "
        else:
            explain = "EXPLAIN QUERY PLAN "
        plan = " ".join(str(row) for row in conn.exec_driver_sql(explain + str(compiled)))
    assert "ix_jobs_project_state" in plan, plan
    assert ("Index Only Scan" in plan) or ("COVERING INDEX" in plan), plan
    assert services.jobs.counts(user) == [("test_items", "pending", 1)]
