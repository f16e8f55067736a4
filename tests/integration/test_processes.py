"""Real worker processes: several claim from one database, and one is SIGKILLed mid-job."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from sqlalchemy import func, select

from seojobs.engine.registry import Registry
from seojobs.records import NewJob
from seojobs.services import Services
from seojobs.store import jobs as job_sql
from seojobs.store.coltypes import utcnow
from seojobs.store.db import Database
from seojobs.store.tables import job_items
from tests.conftest import PG_ADMIN_URL, make_settings
from tests.kinds import test_log
from tests.procs import Procs
from tests.waiting import wait_until


@pytest.fixture
def procs(store_url: str, tmp_path: Path) -> Iterator[Procs]:
    p = Procs(store_url, tmp_path)
    yield p
    p.stop_all()


@pytest.mark.slow
def test_worker_processes_claim_every_job_exactly_once(services: Services, procs: Procs) -> None:
    user = services.accounts.create_user("alice").user
    with services.db.write() as conn:
        job_sql.insert_many_bare(
            services.db,
            conn,
            [
                NewJob(
                    project_id=user.default_project_id,
                    kind="test_log_run",
                    params={},
                    run_at=utcnow(),
                )
                for _ in range(600)
            ],
            utcnow(),
        )
    for i in range(3):  # one the installed console script, two forked (tests/clifork.py)
        procs.worker("--concurrency", "20", console_script=i == 0)

    def all_completed() -> bool:
        with services.db.read() as conn:
            return job_sql.count_by_state(conn).get("completed", 0) == 600

    wait_until(all_completed, timeout=90)
    procs.stop_all()
    assert all(p.returncode == 0 for p in procs.procs), procs.exits()
    with services.db.read() as conn:
        per_job = conn.execute(
            select(test_log.c.job_id, func.count()).group_by(test_log.c.job_id)
        ).all()
        pids = set(conn.execute(select(test_log.c.pid)).scalars())
    assert len(per_job) == 600
    assert {n for _job, n in per_job} == {1}
    assert len(pids) >= 2, "the work should have been shared between processes"


@pytest.mark.slow
def test_sigkilled_worker_is_rescued_and_no_finished_item_repeats(
    services: Services, procs: Procs
) -> None:
    user = services.accounts.create_user("alice").user
    urls = [f"https://site.test/page/{i}" for i in range(120)]
    job, _ = services.jobs.create(user, "test_items", {"urls": urls, "item_delay": 0.02})
    victim = procs.worker(SEOJOBS_LEASE_SECONDS="1.5")

    def progressed() -> bool:
        return services.jobs.get(user, job.id).items_done >= 20

    wait_until(progressed, timeout=60)
    os.kill(victim.pid, signal.SIGKILL)
    victim.wait()
    # What the database holds at the kill is what "finished" means.
    with services.db.read() as conn:
        finished_at_kill = set(
            conn.execute(
                select(job_items.c.input).where(
                    job_items.c.job_id == job.id, job_items.c.state != "pending"
                )
            ).scalars()
        )
    assert services.jobs.get(user, job.id).state == "processing"  # stranded until rescued
    procs.worker(SEOJOBS_LEASE_SECONDS="1.5")
    wait_until(lambda: services.jobs.get(user, job.id).state == "completed", timeout=60)

    done = services.jobs.get(user, job.id)
    # The kill's rescue, and under load maybe one more: a claim whose heartbeats came too late
    # for the 1.5 s lease is rescued and claimed again, its item in flight then run again.
    lost = done.rescue_count
    assert lost >= 1
    assert done.items_done == 120 and done.counters == {"ok": 120}
    with services.db.read() as conn:
        starts = dict(
            conn.execute(
                select(test_log.c.item, func.count())
                .where(test_log.c.job_id == job.id)
                .group_by(test_log.c.item)
            ).all()
        )
    assert set(starts) == set(urls)  # every item was processed
    repeated = {item for item, n in starts.items() if n > 1}
    assert not (repeated & finished_at_kill)  # no finished item ran again
    # Only the one in flight at each claim lost (concurrency 1): 1 in a quiet run.
    assert len(repeated) <= lost and max(starts.values()) <= 1 + lost, (lost, starts)


def test_sigterm_while_a_worker_starts_is_a_clean_stop(pg_url: str, tmp_path: Path) -> None:
    # The worker is held at its schema check by a lock on alembic_version; SIGTERM arrives
    # then. It must neither die by the signal nor go on to claim the pending job.
    services = Services(Database(pg_url), make_settings(pg_url), Registry())
    user = services.accounts.create_user("alice").user
    with services.db.write() as conn:
        job_sql.insert_many_bare(
            services.db,
            conn,
            [
                NewJob(
                    project_id=user.default_project_id,
                    kind="test_log_run",
                    params={},
                    run_at=utcnow(),
                )
            ],
            utcnow(),
        )
    procs = Procs(pg_url, tmp_path)
    database = services.db.url.database
    with psycopg.connect(pg_url) as locker:
        locker.execute("LOCK TABLE alembic_version IN ACCESS EXCLUSIVE MODE")
        proc = procs.worker()
        try:
            with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:

                def worker_waits_for_the_lock() -> bool:
                    row = admin.execute(
                        "SELECT count(*) FROM pg_stat_activity WHERE datname = %s "
                        "AND wait_event_type = 'Lock' AND query ILIKE '%%alembic_version%%'",
                        (database,),
                    ).fetchone()
                    return bool(row and row[0])

                wait_until(worker_waits_for_the_lock, timeout=60)
            proc.send_signal(signal.SIGTERM)
        finally:
            locker.rollback()  # release the lock
    try:
        proc.wait(timeout=60)
    finally:
        procs.stop_all()
    assert proc.returncode == 0, procs.exits()
    with services.db.read() as conn:
        assert job_sql.count_by_state(conn) == {"pending": 1}
    services.db.dispose()
