"""An idle worker sleeps until the soonest thing that can come due, and is woken for the rest
(issue 24.1): its claim loop until the soonest delayed job (a fallback poll besides), its
maintenance loop until a lease runs out, a schedule ticks or the leader's lease is to be
renewed or can be taken. What another handle on the database (another process) makes due
reaches it by a wake-up: NOTIFY on PostgreSQL, the file's change on SQLite. Each test here
polls hourly, or holds leases long enough that a missed wake-up fails it."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from datetime import timedelta
from typing import Any

from sqlalchemy import select

from seojobs.engine.registry import Registry
from seojobs.engine.worker import Worker
from seojobs.records import JobRecord, UserRecord
from seojobs.services import Services
from seojobs.settings import Settings
from seojobs.store import jobs as job_sql
from seojobs.store.coltypes import utcnow
from seojobs.store.db import Database
from seojobs.store.tables import jobs, leaders
from tests.conftest import make_settings
from tests.statements import statements
from tests.waiting import await_until

# Long enough that what these tests wait for would not come by a fallback within WAIT.
HOURLY = 3600.0
LONG_LEASE = 120.0  # the maintenance fallback, and the leader lease (renewed after 40 s)
WAIT = 20.0


@contextlib.contextmanager
def handle(url: str, settings: Settings, registry: Registry) -> Iterator[Services]:
    """Services on a Database of their own: as another process would reach the store."""
    db = Database(url)
    try:
        yield Services(db, settings, registry)
    finally:
        db.dispose()


@contextlib.asynccontextmanager
async def working(services: Services, **kwargs: Any) -> AsyncIterator[Worker]:
    worker = Worker(
        services.db,
        services.settings,
        services.registry,
        fire_schedule=services.schedules.fire,
        **kwargs,
    )
    task = asyncio.create_task(worker.run())
    try:
        await await_until(lambda: _true(worker._listener is not None))
        await asyncio.sleep(0.5)  # its first claim, look and maintenance pass: idle
        yield worker
    finally:
        worker.stop()
        await asyncio.wait_for(task, 30)


async def _true(value: bool) -> bool:
    return value


async def finished(services: Services, user: UserRecord, job_id: int) -> JobRecord:
    async def check() -> JobRecord | None:
        job = await asyncio.to_thread(services.jobs.get, user, job_id)
        return job if job.state in ("completed", "failed") else None

    return await await_until(check, timeout=WAIT)


async def test_an_idle_workers_maintenance_reads_only_when_something_comes_due(
    store_url: str, registry: Registry
) -> None:
    """A maintenance pass every 0.2 s read the schedules and the leases whether or not
    anything could be due (ten of each in 2 s). Now, once the worker is idle, a pass when the
    leader's lease is to be renewed (after a third of its 5 s): counted through the database,
    over 2 s of an idle worker (nothing to run, no schedule)."""
    settings = make_settings(store_url, poll_interval=HOURLY)
    with handle(store_url, settings, registry) as services:
        async with working(services):
            with statements(services.db) as seen:
                await asyncio.sleep(2.0)
    schedule_reads = [s for s in seen if "FROM schedules" in s]
    lease_reads = [s for s in seen if "lease_expires_at" in s and s.startswith("SELECT")]
    assert len(schedule_reads) <= 2, schedule_reads
    assert len(lease_reads) <= 2, lease_reads


async def test_a_delayed_job_runs_at_its_run_at_with_a_worker_polling_hourly(
    store_url: str, registry: Registry
) -> None:
    """The job made through another handle wakes the idle worker (its insert's NOTIFY, the
    file's change), whose claim finds it not due: the look after says when it is, and the
    worker sleeps until then. It waited for its poll."""
    settings = make_settings(store_url, poll_interval=HOURLY)
    with (
        handle(store_url, settings, registry) as own,
        handle(store_url, settings, registry) as other,
    ):
        user = other.accounts.create_user("alice").user
        async with working(own, maintenance=False):
            job, _ = other.jobs.create(user, "test_noop", {}, delay_seconds=1.0)
            done = await finished(other, user, job.id)
    assert done.state == "completed"
    assert done.started_at is not None and done.started_at >= job.run_at


async def test_a_schedule_made_through_another_handle_ticks_at_once(
    store_url: str, registry: Registry
) -> None:
    """The leader's maintenance sleeps until its lease is to be renewed (40 s here): the
    schedule made elsewhere wakes it (``MAINTENANCE_CHANNEL``), and its first tick fires."""
    settings = make_settings(store_url, poll_interval=HOURLY, lease_seconds=LONG_LEASE)
    with (
        handle(store_url, settings, registry) as own,
        handle(store_url, settings, registry) as other,
    ):
        user = other.accounts.create_user("alice").user
        async with working(own):
            schedule = other.schedules.create(
                user, name="hourly", kind="test_noop", params={}, every_seconds=3600
            )

            async def ticked() -> list[int]:
                with other.db.read() as conn:
                    query = select(jobs.c.id).where(jobs.c.schedule_id == schedule.id)
                    return list(conn.execute(query).scalars())

            [job_id] = await await_until(ticked, timeout=WAIT)
            done = await finished(other, user, job_id)
    assert done.state == "completed"


async def test_a_leader_that_resigns_wakes_another_to_take_over(
    store_url: str, registry: Registry
) -> None:
    """A worker that is not the leader sleeps until the leader's lease runs out (2 minutes
    here); the leader's stop gives it up and wakes the others, one of which takes it."""
    settings = make_settings(store_url, poll_interval=HOURLY, lease_seconds=LONG_LEASE)

    async def leader(services: Services) -> str | None:
        with services.db.read() as conn:
            owner: str | None = conn.execute(select(leaders.c.owner)).scalar()
        return owner

    async def led_by(services: Services, owner: str) -> bool:
        return await leader(services) == owner

    with (
        handle(store_url, settings, registry) as one,
        handle(store_url, settings, registry) as two,
    ):
        async with contextlib.AsyncExitStack() as first:
            await first.enter_async_context(working(one, worker_id="one"))
            await await_until(lambda: led_by(one, "one"), timeout=WAIT)
            async with working(two, worker_id="two"):  # its first pass: not the leader
                assert await leader(two) == "one"
                await first.aclose()  # "one" stops, and resigns
                await await_until(lambda: led_by(two, "two"), timeout=WAIT)


async def test_an_expired_lease_is_rescued_when_it_runs_out(
    store_url: str, registry: Registry
) -> None:
    """A job claimed through another handle whose claimer died: the leader reads when its
    lease runs out, sleeps until then, and rescues it; the rescue wakes the claim loop
    (polling hourly), which runs it."""
    settings = make_settings(store_url, poll_interval=HOURLY, lease_seconds=LONG_LEASE)
    with (
        handle(store_url, settings, registry) as own,
        handle(store_url, settings, registry) as other,
    ):
        user = other.accounts.create_user("alice").user
        job, _ = other.jobs.create(user, "test_noop", {})
        with other.db.write() as conn:
            [held] = job_sql.claim(other.db, conn, "dead", 1, utcnow(), 1.5)
        async with working(own):
            done = await finished(other, user, job.id)
    assert held.id == job.id
    assert done.state == "completed" and done.attempt == 2 and done.rescue_count == 1


async def test_a_released_job_wakes_a_worker_of_another_process(
    store_url: str, registry: Registry
) -> None:
    """A worker's graceful stop hands its job back; the other worker, idle and polling
    hourly on a handle of its own, is woken by the release (NOTIFY on PostgreSQL, where
    only the stopping worker's own process was woken) and finishes it."""
    settings = make_settings(store_url, poll_interval=HOURLY)
    with (
        handle(store_url, settings, registry) as one,
        handle(store_url, settings, registry) as two,
    ):
        user = one.accounts.create_user("alice").user
        urls = [f"u{i}" for i in range(40)]
        job, _ = one.jobs.create(user, "test_items", {"urls": urls, "item_delay": 0.05})

        async def started() -> bool:
            return (await asyncio.to_thread(one.jobs.get, user, job.id)).items_done >= 2

        async with contextlib.AsyncExitStack() as first:
            await first.enter_async_context(working(one, maintenance=False, worker_id="one"))
            await await_until(started, timeout=WAIT)
            async with working(two, maintenance=False, worker_id="two"):  # idle: none free
                await first.aclose()  # "one" releases the job
                released = await asyncio.to_thread(one.jobs.get, user, job.id)
                done = await finished(two, user, job.id)
    assert released.items_done < 40 and released.rescue_count == 0
    assert done.state == "completed" and done.attempt == 2 and done.worker_id is None


async def test_a_capped_kinds_next_job_starts_when_a_slot_comes_free(
    store_url: str, registry: Registry
) -> None:
    """test_capped runs one at a time: the claim leaves the second out, and the first's end
    wakes the claim loop (polling hourly), which waited for its poll."""
    settings = make_settings(store_url, poll_interval=HOURLY)
    with handle(store_url, settings, registry) as own:
        user = own.accounts.create_user("alice").user
        made = [own.jobs.create(user, "test_capped", {"seconds": 0.1})[0] for _ in range(2)]
        async with working(own, maintenance=False):
            done = [await finished(own, user, job.id) for job in made]
    assert [job.state for job in done] == ["completed", "completed"]


async def test_the_look_on_the_claim_connection_answers_as_the_stores(
    pg_url: str, registry: Registry
) -> None:
    """PostgreSQL's look runs as plain SQL on the worker's claim connection: it answers as
    the SQLAlchemy statement (SQLite's) does, whatever is pending."""
    import psycopg

    settings = make_settings(pg_url)
    with handle(pg_url, settings, registry) as services:
        user = services.accounts.create_user("alice").user
        now = utcnow()
        answers = []
        async with await psycopg.AsyncConnection.connect(
            services.db.psycopg_conninfo(), autocommit=True
        ) as conn:
            for delay in (None, 30.0, 0.0, 10.0):
                if delay is not None:
                    services.jobs.create(user, "test_noop", {}, delay_seconds=delay)
                with services.db.read() as read:
                    ours = job_sql.look(read, now + timedelta(seconds=1))
                theirs = await job_sql.look_async(conn, now + timedelta(seconds=1))
                answers.append(ours)
                assert theirs == ours
    assert answers[0] == (False, None)
    assert answers[1][0] is False and answers[1][1] is not None
    assert answers[2][0] is True and answers[3][1] is not None
    assert answers[3][1] < answers[1][1]
