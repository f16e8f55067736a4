"""The worker against both stores: run, fail, cancel, stop, resume, wake, schedule."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import threading
from collections.abc import AsyncIterator
from datetime import timedelta

import pytest
from sqlalchemy import event, func, select, text, update

from seojobs.engine import context
from seojobs.engine.host import RecordItems
from seojobs.engine.registry import Registry
from seojobs.engine.worker import Worker
from seojobs.records import ItemOutcome, NewFinding, NewItem, NewJob
from seojobs.services import Services
from seojobs.settings import Settings
from seojobs.store import jobs as job_sql
from seojobs.store.coltypes import utcnow
from seojobs.store.db import Database
from seojobs.store.tables import job_items, jobs
from tests.conftest import make_settings
from tests.kinds import GATES, Gate, ItemsParams, test_log
from tests.statements import statements
from tests.waiting import await_until


@contextlib.asynccontextmanager
async def running(
    db: Database, settings: Settings, registry: Registry, **kwargs: object
) -> AsyncIterator[Worker]:
    worker = Worker(db, settings, registry, **kwargs)  # type: ignore[arg-type]
    task = asyncio.create_task(worker.run())
    try:
        yield worker
    finally:
        worker.stop()
        await asyncio.wait_for(task, 30)


async def state_of(services: Services, user, job_id: int) -> str:  # type: ignore[no-untyped-def]
    job = await asyncio.to_thread(services.jobs.get, user, job_id)
    return job.state


async def until_state(services: Services, user, job_id: int, *states: str):  # type: ignore[no-untyped-def]
    async def check():  # type: ignore[no-untyped-def]
        job = await asyncio.to_thread(services.jobs.get, user, job_id)
        return job if job.state in states else None

    return await await_until(check)


def starts_per_item(db: Database, job_id: int) -> dict[str, int]:
    with db.read() as conn:
        rows = conn.execute(
            select(test_log.c.item, func.count())
            .where(test_log.c.job_id == job_id, test_log.c.event == "start")
            .group_by(test_log.c.item)
        )
        return {item: int(n) for item, n in rows}


async def test_items_job_runs_to_completion(services, db, settings, registry) -> None:  # type: ignore[no-untyped-def]
    user = services.accounts.create_user("alice").user
    urls = [f"https://example.test/{i}" for i in range(25)]
    job, _ = services.jobs.create(user, "test_items", {"urls": urls, "fail_items": [urls[3]]})
    async with running(db, settings, registry):
        done = await until_state(services, user, job.id, "completed", "failed")
    assert done.state == "completed"
    assert done.items_done == 25 and done.items_failed == 1
    assert done.counters == {"ok": 24, "failed": 1}
    assert done.result == {"seen": 24}
    assert done.progress_percent == 100
    assert done.started_at is not None and done.completed_at is not None
    items = services.jobs.items(user, job.id)
    assert items[3].state == "failed" and items[3].error_code == "item_failed"
    assert all(i.state == "done" for i in items if i.seq != 3)
    assert set(starts_per_item(db, job.id).values()) == {1}


async def test_results_that_finish_apart_are_written_in_groups(
    services, db, settings, registry, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    # A long wait, so that the groups are made by counts alone: half the concurrency (2), and
    # the last result once no other item is running. Items finish 0.2 s apart, each of which
    # was written alone before (items_done rose one by one).
    monkeypatch.setattr(context, "GROUP_WAIT", 60.0)
    user = services.accounts.create_user("alice").user
    urls = [f"https://example.test/{i}" for i in range(5)]
    params = {"urls": urls, "concurrency": 4, "delay_step": 0.2}
    job, _ = services.jobs.create(user, "test_items", params)
    async with running(db, settings, registry):
        done = await until_state(services, user, job.id, "completed", "failed")
    assert (done.state, done.items_done, done.counters) == ("completed", 5, {"ok": 5})
    groups: dict[object, list[int]] = {}
    for item in services.jobs.items(user, job.id):
        groups.setdefault(item.finished_at, []).append(item.seq)  # one write, one time
    assert sorted(groups.values()) == [[0, 1], [2, 3], [4]]


@pytest.mark.stores("postgresql")  # SQLite's write lock would stop the claim and the log too
async def test_with_a_backlog_items_start_while_earlier_results_wait_for_their_write(
    services, db, settings, registry
) -> None:  # type: ignore[no-untyped-def]
    # The job's items locked by another transaction: the worker's first write of results
    # waits on them. Without a backlog the two items holding its places wait with it and no
    # other starts; with a backlog of two, two more start (their results take the places in
    # it) and then wait too: concurrency + backlog, no more, until the write goes through.
    user = services.accounts.create_user("alice").user
    urls = [f"https://example.test/{i}" for i in range(12)]
    params = {"urls": urls, "concurrency": 2, "backlog": 2}
    job, _ = services.jobs.create(user, "test_items", params)
    with db.engine.connect() as blocker, blocker.begin():
        blocker.execute(
            select(job_items.c.id).where(job_items.c.job_id == job.id).with_for_update()
        )
        holder = blocker.execute(text("SELECT pg_backend_pid()")).scalar_one()
        async with running(db, settings, registry):
            await await_until(lambda: asyncio.to_thread(_blocked_by, db, holder))
            await await_until(lambda: asyncio.to_thread(_started, db, job.id, 4))
            assert sum(starts_per_item(db, job.id).values()) == 4
            assert (await asyncio.to_thread(services.jobs.get, user, job.id)).items_done == 0
            blocker.rollback()
            done = await until_state(services, user, job.id, "completed", "failed")
    assert (done.state, done.items_done) == ("completed", 12)
    assert starts_per_item(db, job.id) == dict.fromkeys(urls, 1)


def _started(db: Database, job_id: int, count: int) -> bool:
    return sum(starts_per_item(db, job_id).values()) >= count


def _blocked_by(db: Database, holder: int) -> bool:
    """Whether a statement waits for a lock the session ``holder`` (a backend's pid) holds."""
    with db.read() as conn:
        found = conn.execute(
            text("SELECT count(*) FROM pg_stat_activity WHERE :pid = ANY(pg_blocking_pids(pid))"),
            {"pid": holder},
        ).scalar_one()
    return bool(found)


async def test_job_failures_carry_code_and_message_and_are_not_retried(
    services,
    db,
    settings,
    registry,
    caplog,  # type: ignore[no-untyped-def]
) -> None:
    user = services.accounts.create_user("alice").user
    told, _ = services.jobs.create(user, "test_fail", {"code": "site_unreachable", "message": "no"})
    secret = "kaboom: INSERT INTO secrets VALUES ('hunter2')"
    crashed, _ = services.jobs.create(user, "test_fail", {"crash": True, "message": secret})
    with caplog.at_level(logging.ERROR, logger="seojobs.worker"):
        async with running(db, settings, registry):
            a = await until_state(services, user, told.id, "failed")
            b = await until_state(services, user, crashed.id, "failed")
            await asyncio.sleep(0)  # nothing may pick them up again
    assert (a.error_code, a.error_message) == ("site_unreachable", "no")
    # Issue 25.3: an unexpected error shows a code and a plain message naming an error id;
    # what the exception said is in the log, under that id, and nowhere the user sees.
    assert b.error_code == "internal_error" and b.error_message is not None
    assert "kaboom" not in b.error_message and "hunter2" not in b.error_message
    error_id = re.fullmatch(
        r"an internal error stopped the job \(error id (\w+)\); .*", b.error_message
    )
    assert error_id is not None, b.error_message
    [logged] = [r for r in caplog.records if error_id[1] in r.getMessage()]
    assert logged.exc_info is not None and secret in str(logged.exc_info[1])
    assert a.attempt == 1 and b.attempt == 1


async def test_unknown_kind_in_the_table_fails_cleanly(services, db, settings, registry) -> None:  # type: ignore[no-untyped-def]
    """A job whose kind this worker does not know (plug-in removed) fails; the worker lives on."""
    user = services.accounts.create_user("alice").user
    with db.write() as conn:
        job_id, _ = job_sql.insert_job(
            db,
            conn,
            NewJob(project_id=user.default_project_id, kind="gone", params={}, run_at=utcnow()),
            utcnow(),
        )
    ok, _ = services.jobs.create(user, "test_noop", {})
    async with running(db, settings, registry):
        bad = await until_state(services, user, job_id, "failed")
        await until_state(services, user, ok.id, "completed")
    assert bad.error_code == "unknown_kind"


async def test_cancel_stops_a_running_job_before_its_next_item(
    services,
    db,
    settings,
    registry,  # type: ignore[no-untyped-def]
) -> None:
    user = services.accounts.create_user("alice").user
    urls = [f"u{i}" for i in range(200)]
    job, _ = services.jobs.create(user, "test_items", {"urls": urls, "item_delay": 0.02})
    async with running(db, settings, registry):

        async def some_done():  # type: ignore[no-untyped-def]
            return (await asyncio.to_thread(services.jobs.get, user, job.id)).items_done >= 3

        await await_until(some_done)
        await asyncio.to_thread(services.jobs.cancel, user, job.id)
        snapshot = await asyncio.to_thread(services.jobs.get, user, job.id)

        # The worker notices at its next item write and stops; give it the chance to misbehave.
        async def started_after_cancel() -> int:
            return sum(starts_per_item(db, job.id).values())

        before = await started_after_cancel()
        await asyncio.sleep(0.6)
        after = await started_after_cancel()
    final = services.jobs.get(user, job.id)
    assert final.state == "failed" and final.error_code == "cancelled"
    assert final.items_done == snapshot.items_done  # nothing recorded after the cancel
    assert after - before <= 1  # at most the item in flight when the cancel landed
    assert after < 200


async def test_graceful_stop_releases_and_another_worker_resumes(
    services,
    db,
    settings,
    registry,  # type: ignore[no-untyped-def]
) -> None:
    user = services.accounts.create_user("alice").user
    urls = [f"u{i}" for i in range(60)]
    job, _ = services.jobs.create(user, "test_items", {"urls": urls, "item_delay": 0.01})
    first = Worker(db, settings, registry, worker_id="first")
    task = asyncio.create_task(first.run())

    async def some_done():  # type: ignore[no-untyped-def]
        return (await asyncio.to_thread(services.jobs.get, user, job.id)).items_done >= 5

    await await_until(some_done)
    first.stop()
    await asyncio.wait_for(task, 30)
    released = services.jobs.get(user, job.id)
    assert released.state == "pending"
    assert released.rescue_count == 0
    assert 5 <= released.items_done < 60
    async with running(db, settings, registry, worker_id="second"):
        done = await until_state(services, user, job.id, "completed")
    assert done.items_done == 60 and done.attempt == 2
    assert set(starts_per_item(db, job.id).values()) == {1}  # nothing ran twice


async def test_rescued_job_resumes_from_unfinished_items(services, store_url, registry) -> None:  # type: ignore[no-untyped-def]
    """A worker whose heartbeats stop (a frozen process) loses the job to another."""
    settings = make_settings(store_url, lease_seconds=0.6)
    db = Database(store_url)
    services = Services(db, settings, registry)
    user = services.accounts.create_user("alice").user
    job, _ = services.jobs.create(user, "test_items", {"urls": [f"u{i}" for i in range(30)]})
    claimed = _claim_now(db, settings)
    items = services.jobs.items(user, job.id)
    from seojobs.records import ItemOutcome

    with db.write() as conn:
        job_sql.record_items(
            conn,
            job.id,
            claimed.attempt,
            [ItemOutcome(item_id=i.id, failed=False, outcome="ok") for i in items[:10]],
            {"ok": 10},
            utcnow(),
        )
    # The claimant now goes silent; a live worker rescues and finishes the rest.
    async with running(db, settings, registry):
        done = await until_state(services, user, job.id, "completed")
    assert done.rescue_count == 1
    assert done.items_done == 30 and done.counters == {"ok": 30}
    starts = starts_per_item(db, job.id)
    assert set(starts) == {f"u{i}" for i in range(10, 30)}  # the first 10 never ran again
    db.dispose()


async def test_a_job_this_worker_claims_again_after_its_rescue_stays_its_own(  # type: ignore[no-untyped-def]
    store_url, registry, tmp_path
) -> None:
    """A loaded worker's heartbeats came late, its job was rescued, and the same worker
    claimed it again while the first attempt still ran. That attempt's end used to drop the
    new claim from the running jobs: no heartbeat kept it (it was rescued again and again as
    it ran, index_submit sending the batch in flight each time) and a stop left it held.
    The lease is long, so no heartbeat runs in this test: the rescue is the test's."""
    settings = make_settings(store_url, lease_seconds=30)
    db = Database(store_url)
    services = Services(db, settings, registry)
    user = services.accounts.create_user("alice").user
    params = {"urls": ["u0", "u1"], "wait_for_file": str(tmp_path / "go-{attempt}")}
    job, _ = services.jobs.create(user, "test_items", params | {"log_end": True})

    def log_of(event: str) -> list[str | None]:
        with db.read() as conn:
            rows = conn.execute(
                select(test_log.c.item).where(
                    test_log.c.job_id == job.id, test_log.c.event == event
                )
            )
            return list(rows.scalars())

    async def logged(event: str, item: str, n: int = 1) -> bool:
        return (await asyncio.to_thread(log_of, event)).count(item) >= n

    def rescue() -> None:
        with db.write() as conn:
            conn.execute(
                update(jobs)
                .where(jobs.c.id == job.id)
                .values(lease_expires_at=utcnow() - timedelta(seconds=1))
            )
            assert job_sql.rescue(conn, utcnow(), settings.max_rescues) == (1, 0)

    try:
        async with running(db, settings, registry, maintenance=False) as worker:
            await await_until(lambda: logged("start", "u0"))  # attempt 1 waits at u0
            await asyncio.to_thread(rescue)
            await await_until(lambda: logged("start", "u0", 2))  # attempt 2, here, waits too
            (tmp_path / "go-1").touch()  # the first attempt goes on, finds its claim gone
            await await_until(lambda: logged("end", "1"))
            worker.stop()  # the second attempt is this worker's: it finishes u0, is released
            (tmp_path / "go-2").touch()
        final = services.jobs.get(user, job.id)
        ends = log_of("end")
    finally:
        db.dispose()
    assert (final.state, final.attempt, final.rescue_count) == ("pending", 2, 1), final
    assert sorted(ends) == ["1", "2"]  # ("2": released at the stop, not orphaned)


async def test_heartbeats_keep_the_claim_while_a_job_computes_its_findings(  # type: ignore[no-untyped-def]
    store_url, registry
) -> None:
    """A job's findings about the whole job are drawn in a thread: computing them (an
    audit's site-wide checks, seconds of CPU per chunk over 100,000 pages) leaves the event
    loop free, and the heartbeats that keep the job's claim go on meanwhile. The kind's
    findings block until this test has seen the claim renewed twice."""
    settings = make_settings(store_url, lease_seconds=0.6)
    db = Database(store_url)
    services = Services(db, settings, registry)
    user = services.accounts.create_user("alice").user
    job, _ = services.jobs.create(user, "test_summary", {"findings": 2, "gated": True})
    gate = GATES[job.id] = Gate()

    def lease() -> object:
        with db.read() as conn:
            return conn.execute(select(jobs.c.lease_expires_at).where(jobs.c.id == job.id)).one()[0]

    try:
        async with running(db, settings, registry):
            await await_until(lambda: _async_true(gate.reached.is_set()))
            seen = [await asyncio.to_thread(lease)]

            async def renewed_twice() -> bool:  # while the findings are being computed
                if (now := await asyncio.to_thread(lease)) != seen[-1]:
                    seen.append(now)
                return len(seen) >= 3

            await await_until(renewed_twice)
            gate.opened.set()
            done = await until_state(services, user, job.id, "completed", "failed")
        found = services.jobs.findings(user, job.id)  # before dispose(), which it would undo
    finally:
        gate.opened.set()
        GATES.pop(job.id, None)
        db.dispose()
    assert done.state == "completed" and done.rescue_count == 0
    assert [f.data["gate_opened"] for f in found] == [True, True]


def _claim_now(db: Database, settings: Settings):  # type: ignore[no-untyped-def]
    with db.write() as conn:
        return job_sql.claim(db, conn, "silent", 1, utcnow(), settings.lease_seconds)[0]


def _context(worker: Worker, claimed) -> context.JobContext[ItemsParams]:  # type: ignore[no-untyped-def]
    params = ItemsParams.model_validate(claimed.params)
    return context.JobContext(worker, claimed, params, settings=worker.settings, new_items=list)


def _claim_reads(sent: list[str]) -> list[str]:
    """The claim reads (``still_held``) among ``sent``."""
    return [s for s in sent if s.startswith("SELECT jobs.id \nFROM jobs")]


async def test_claim_checks_asked_together_share_one_read(services, db, settings, registry) -> None:  # type: ignore[no-untyped-def]
    """A rank check's items each ask ``ensure_held`` before their search: checks asked while
    no read has been sent yet go in one read, each answered by it."""
    user = services.accounts.create_user("alice").user
    services.jobs.create(user, "test_items", {"urls": ["a"]})
    worker = Worker(db, settings, registry)
    ctx = _context(worker, _claim_now(db, settings))
    try:
        with statements(db) as sent:
            await asyncio.gather(*(ctx.ensure_held() for _ in range(8)))
            assert len(_claim_reads(sent)) == 1
            await ctx.ensure_held()  # a check asked later: a read of its own
            assert len(_claim_reads(sent)) == 2
    finally:
        worker.executor.shutdown()


async def test_a_claim_check_asked_while_a_read_is_in_flight_waits_for_the_next(
    services, db, settings, registry
) -> None:  # type: ignore[no-untyped-def]
    """A check is answered by a read sent after it was asked: the job cancelled while a read
    is in flight, a check asked meanwhile is not answered by that read (which still saw the
    job held), and raises."""
    user = services.accounts.create_user("alice").user
    job, _ = services.jobs.create(user, "test_items", {"urls": ["a"]})
    worker = Worker(db, settings, registry)
    ctx = _context(worker, _claim_now(db, settings))
    loop = asyncio.get_running_loop()
    asked = threading.Event()
    later: list[asyncio.Future[None]] = []

    async def ask_later() -> None:
        later.append(asyncio.ensure_future(ctx.ensure_held()))
        await asyncio.sleep(0)  # it has asked, and waits
        asked.set()

    def in_flight(_conn, _cursor, statement, _params, _context, _many) -> None:  # type: ignore[no-untyped-def]
        if _claim_reads([statement]) and not asked.is_set():
            asyncio.run_coroutine_threadsafe(ask_later(), loop)
            asked.wait(10)
            services.jobs.cancel(user, job.id)  # after the first read ran: it saw the job held

    event.listen(db.engine, "after_cursor_execute", in_flight)
    try:
        await ctx.ensure_held()
        with pytest.raises(context.Interrupted):
            await later[0]
    finally:
        event.remove(db.engine, "after_cursor_execute", in_flight)
        worker.executor.shutdown()


async def test_delayed_job_waits_for_run_at(services, db, settings, registry) -> None:  # type: ignore[no-untyped-def]
    user = services.accounts.create_user("alice").user
    later, _ = services.jobs.create(user, "test_noop", {}, delay_seconds=1.0)
    now_job, _ = services.jobs.create(user, "test_noop", {})
    async with running(db, settings, registry):
        await until_state(services, user, now_job.id, "completed")
        early = services.jobs.get(user, later.id)
        done = await until_state(services, user, later.id, "completed")
    assert early.state == "pending" or early.started_at >= later.run_at
    assert done.started_at >= later.run_at


async def test_idle_worker_is_woken_without_waiting_for_the_poll(
    store_url,
    registry,  # type: ignore[no-untyped-def]
) -> None:
    """With a 60 s poll, a job enqueued to an idle worker still starts: the wake-up works.

    The job is inserted through a separate Database object (as another process would), so
    only LISTEN/NOTIFY (PostgreSQL) or the data_version watch (SQLite) can carry the news.
    """
    settings = make_settings(store_url, poll_interval=60)
    db = Database(store_url)
    producer_db = Database(store_url)
    services = Services(producer_db, settings, registry)
    user = services.accounts.create_user("alice").user
    async with running(db, settings, registry, maintenance=False) as worker:
        await await_until(lambda: _async_true(worker._listener is not None))
        await asyncio.sleep(0.3)  # let the worker go idle on its first empty claim
        job, _ = services.jobs.create(user, "test_noop", {})
        await until_state(services, user, job.id, "completed")
    db.dispose()
    producer_db.dispose()


async def _async_true(value: bool) -> bool:
    return value


async def test_many_workers_claim_every_job_exactly_once(store_url, registry) -> None:  # type: ignore[no-untyped-def]
    settings = make_settings(store_url)
    dbs = [Database(store_url) for _ in range(4)]
    services = Services(dbs[0], settings, registry)
    user = services.accounts.create_user("alice").user
    with dbs[0].write() as conn:
        job_sql.insert_many_bare(
            dbs[0],
            conn,
            [
                NewJob(
                    project_id=user.default_project_id,
                    kind="test_log_run",
                    params={},
                    run_at=utcnow(),
                )
                for _ in range(300)
            ],
            utcnow(),
        )
    workers = [
        Worker(d, settings, registry, concurrency=8, worker_id=f"w{i}") for i, d in enumerate(dbs)
    ]
    tasks = [asyncio.create_task(w.run()) for w in workers]

    async def all_done() -> bool:
        with dbs[0].read() as conn:
            return job_sql.count_by_state(conn).get("completed", 0) == 300

    await await_until(all_done, timeout=60)
    for w in workers:
        w.stop()
    await asyncio.wait_for(asyncio.gather(*tasks), 30)
    with dbs[0].read() as conn:
        runs = conn.execute(
            select(test_log.c.job_id, func.count()).group_by(test_log.c.job_id)
        ).all()
        attempts = set(conn.execute(select(jobs.c.attempt)).scalars())
    assert len(runs) == 300 and {n for _j, n in runs} == {1}
    assert attempts == {1}
    assert sum(w.claimed_total for w in workers) == 300
    for d in dbs:
        d.dispose()


async def test_schedule_ticks_exactly_once_with_three_workers(store_url, registry) -> None:  # type: ignore[no-untyped-def]
    settings = make_settings(
        store_url,
        day_seconds=0.5,
        maintenance_interval=0.05,
        lease_seconds=2,
        schedule_min_interval_seconds=0.1,
    )
    dbs = [Database(store_url) for _ in range(3)]
    services = Services(dbs[0], settings, registry)
    user = services.accounts.create_user("alice").user
    schedule = services.schedules.create(
        user, name="daily rankings", kind="test_noop", params={}, every_days=1
    )
    workers = [
        Worker(
            d,
            settings,
            registry,
            worker_id=f"w{i}",
            fire_schedule=Services(d, settings, registry).schedules.fire,
        )
        for i, d in enumerate(dbs)
    ]
    tasks = [asyncio.create_task(w.run()) for w in workers]

    async def enough_ticks() -> bool:
        with dbs[0].read() as conn:
            n = conn.execute(
                select(func.count()).select_from(jobs).where(jobs.c.schedule_id == schedule.id)
            ).scalar_one()
        return n >= 5

    await await_until(enough_ticks, timeout=30)
    for w in workers:
        w.stop()
    await asyncio.wait_for(asyncio.gather(*tasks), 30)
    with dbs[0].read() as conn:
        ticks = list(
            conn.execute(
                select(jobs.c.schedule_tick).where(jobs.c.schedule_id == schedule.id)
            ).scalars()
        )
    assert len(ticks) == len(set(ticks))
    step = timedelta(seconds=0.5)
    for tick in ticks:
        assert (tick - schedule.start_at) % step == timedelta(0)  # ticks are on the grid
    for d in dbs:
        d.dispose()


async def test_a_page_of_a_jobs_items_is_one_round_trip_on_postgresql(
    pg_url: str, registry: Registry
) -> None:
    """The pages of open items a running job reads (a crawl's frontier, a page at a time),
    and whether it still holds its claim: one statement each, without the BEGIN and ROLLBACK
    round trips of a transaction block."""
    settings = make_settings(pg_url)
    db = Database(pg_url)
    services = Services(db, settings, registry)
    user = services.accounts.create_user("alice").user
    services.jobs.create(user, "test_items", {"urls": ["a", "b"]})
    claimed = _claim_now(db, settings)
    worker = Worker(db, settings, registry)
    sent: list[bool] = []

    def seen(conn, _cursor, _statement, _params, _context, _many) -> None:  # type: ignore[no-untyped-def]
        sent.append(conn.connection.driver_connection.autocommit)

    event.listen(db.engine, "before_cursor_execute", seen)
    try:
        page = await worker.items(claimed, -1, 10, only_open=True)
        held = await worker.still_held(claimed)
    finally:
        event.remove(db.engine, "before_cursor_execute", seen)
        worker.executor.shutdown()
    assert [i.input for i in page] == ["a", "b"] and held
    assert sent == [True, True]  # autocommit: psycopg sends no BEGIN, nor ROLLBACK after
    db.dispose()


async def test_a_group_of_results_with_its_found_items_is_one_round_trip_on_postgresql(
    pg_url: str, registry: Registry
) -> None:
    """A job's results and the items they found: one statement, its own transaction (no
    BEGIN or COMMIT sent), where it took a transaction of several statements each."""
    settings = make_settings(pg_url)
    db = Database(pg_url)
    services = Services(db, settings, registry)
    user = services.accounts.create_user("alice").user
    job, _ = services.jobs.create(user, "test_items", {"urls": ["a", "b"]})
    claimed = _claim_now(db, settings)
    a, b = services.jobs.items(user, job.id)
    worker = Worker(db, settings, registry)
    sent: list[tuple[str, bool]] = []

    def seen(conn, _cursor, statement, _params, _context, _many) -> None:  # type: ignore[no-untyped-def]
        sent.append((statement, conn.connection.driver_connection.autocommit))

    outcomes = [
        ItemOutcome(a.id, False, "ok", {"n": 1}, findings=(NewFinding("thin", "warning"),)),
        ItemOutcome(b.id, False, "ok"),
    ]
    event.listen(db.engine, "before_cursor_execute", seen)
    try:
        added = await worker.write(claimed, RecordItems(outcomes, {"ok": 2}, [NewItem.of("c")]))
    finally:
        event.remove(db.engine, "before_cursor_execute", seen)
        worker.executor.shutdown()
    assert added == [1]
    assert len(sent) == 1 and sent[0][1] is True  # autocommit: psycopg sends no BEGIN
    assert [(i.input, i.state) for i in services.jobs.items(user, job.id)] == [
        ("a", "done"),
        ("b", "done"),
        ("c", "pending"),
    ]
    db.dispose()


async def test_numbers_json_cannot_hold_are_stored_as_null_on_both_stores(
    services, db, settings, registry
) -> None:  # type: ignore[no-untyped-def]
    """A provider's answer may hold NaN or an infinity (Python's json.loads reads them): its
    result is stored with null there, on PostgreSQL (whose jsonb refuses NaN) as on SQLite."""
    user = services.accounts.create_user("alice").user
    job, _ = services.jobs.create(user, "test_items", {"urls": ["a", "b"]})
    claimed = _claim_now(db, settings)
    a, b = services.jobs.items(user, job.id)
    worker = Worker(db, settings, registry)
    nan, inf = float("nan"), float("inf")
    outcomes = [
        ItemOutcome(a.id, False, "ok", {"score": nan, "range": [1.5, -inf]}),
        ItemOutcome(
            b.id, False, "ok", {"n": 1}, findings=(NewFinding("odd", "notice", {"x": inf}),)
        ),
    ]
    try:
        await worker.write(claimed, RecordItems(outcomes, {"ok": 2}))
    finally:
        worker.executor.shutdown()
    results = {i.input: i.result for i in services.jobs.items(user, job.id)}
    assert results == {"a": {"score": None, "range": [1.5, None]}, "b": {"n": 1}}
    [finding] = services.jobs.findings(user, job.id)
    assert finding.data == {"x": None}


async def test_an_idle_sqlite_workers_polls_take_no_write_lock(sqlite_url, registry) -> None:  # type: ignore[no-untyped-def]
    """Each poll of an idle SQLite worker reads whether a job is due; it claims (a write
    transaction: the one writer's lock) only when one is. A job delayed past a few polls still
    starts (the look after its insert's wake-up says when it is due)."""
    settings = make_settings(sqlite_url, poll_interval=0.05)
    db = Database(sqlite_url)
    services = Services(Database(sqlite_url), settings, registry)
    user = services.accounts.create_user("alice").user
    writes: list[bool] = []
    counting = asyncio.Event()

    def begun(conn) -> None:  # type: ignore[no-untyped-def]
        if counting.is_set() and conn.get_execution_options().get("seojobs_write"):
            writes.append(True)

    event.listen(db.engine, "begin", begun)
    try:
        async with running(db, settings, registry, maintenance=False):
            await asyncio.sleep(0.3)  # the first claim, then idle polls
            counting.set()
            await asyncio.sleep(0.5)  # about ten polls
            counting.clear()
            idle_writes = len(writes)
            job, _ = await asyncio.to_thread(
                services.jobs.create, user, "test_noop", {}, delay_seconds=0.5
            )
            done = await until_state(services, user, job.id, "completed")
    finally:
        event.remove(db.engine, "begin", begun)
        db.dispose()
        services.db.dispose()
    assert idle_writes == 0
    assert done.started_at >= job.run_at


async def test_an_idle_workers_maintenance_reads_the_database_clock_as_the_heartbeat_does(
    store_url,  # type: ignore[no-untyped-def]
    registry,
) -> None:
    """Each maintenance pass (every 0.2 s here) read the database's clock anew: a third of an
    idle pass's reads (issue 24.1). It takes the heartbeat's reading (every lease/3 s, 1.7 s
    here) unless that is older. Counted through the database over 2 s: the start's reading,
    perhaps the first pass's, and the heartbeat's (it was a dozen)."""
    settings = make_settings(store_url)
    db = Database(store_url)
    try:
        with statements(db) as seen:
            async with running(db, settings, registry):
                await asyncio.sleep(2.0)
        readings = [s for s in seen if "clock_timestamp" in s or "strftime" in s]
    finally:
        db.dispose()
    assert 1 <= len(readings) <= 4, len(readings)
