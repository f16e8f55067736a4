"""Collection schedules: jobs fired with their items and charged like a POST; bounded
intervals, a cap per user, one catch-up tick, and a failing schedule that stops nothing else."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import insert, select, update

from seojobs.engine import maintenance
from seojobs.kinds import load_registry
from seojobs.records import JobRecord, UserRecord
from seojobs.services import Services
from seojobs.services.quotas import day_start
from seojobs.settings import Settings
from seojobs.store import usage
from seojobs.store.coltypes import utcnow
from seojobs.store.db import Database
from seojobs.store.tables import jobs, schedules
from tests.api_helpers import (
    Api,
    api,
    assert_problem,
    error_fields,
    shared_idle_per_test,  # noqa: F401 (the module's ``idle``: one app per store)
)
from tests.conftest import make_settings
from tests.waiting import wait_until

URLS = ["https://a.example/1", "https://a.example/2", "https://a.example/3"]


def _jobs_of(services: Services, user: UserRecord, schedule_id: int) -> list[JobRecord]:
    with services.db.read() as conn:
        ids = list(
            conn.execute(
                select(jobs.c.id).where(jobs.c.schedule_id == schedule_id).order_by(jobs.c.id)
            ).scalars()
        )
    return [services.jobs.get(user, i) for i in ids]


def test_a_scheduled_item_job_fires_with_its_items_and_is_charged(
    db: Database, settings: Settings
) -> None:
    services = Services(db, settings, load_registry(settings))  # the built-in kinds too
    user = services.accounts.create_user("alice").user
    t0 = day_start(utcnow()) + timedelta(hours=1)  # every tick below is in one UTC day
    made = services.schedules.create(
        user,
        name="check",
        kind="index_check",
        params={"urls": URLS},
        every_seconds=3600,
        start_at=t0,
    )
    fire = services.schedules.fire
    assert maintenance.run_once(services.db, services.settings, "a", t0, fire).fired == 1
    [job] = _jobs_of(services, user, made.id)
    assert (job.state, job.items_total) == ("pending", 3)
    assert [i.input for i in services.jobs.items(user, job.id)] == URLS
    with services.db.read() as conn:  # usage as of the tick
        assert usage.used(conn, user.id, "check", t0 - timedelta(minutes=1)) == 3

    # At quota, the next tick stores a refused job, which never runs.
    user = services.quotas.set_limits(user, {"check_daily": 5})
    later = t0 + timedelta(hours=1)
    assert maintenance.run_once(services.db, services.settings, "a", later, fire).fired == 1
    first, refused = _jobs_of(services, user, made.id)
    assert refused.state == "failed" and refused.error_code == "quota_exceeded"
    assert "daily check quota" in (refused.error_message or "")
    assert first.id == job.id


def test_a_user_at_quota_gets_a_refused_scheduled_job_and_no_provider_is_called(
    store_url: str, fakes: Any
) -> None:
    settings = fakes.settings(store_url, schedule_min_interval_seconds=1)
    with api(settings, run_worker=True) as app:
        alice = app.account()
        app.services.quotas.set_limits(alice.user, {"check_daily": 4})
        client = app.client(alice, "x-api-key")
        project = client.post("/v1/projects", json={"name": "p"}).json()["data"]["id"]
        made = client.post(
            f"/v1/projects/{project}/schedules",
            json={"name": "s", "type": "index_check", "params": {"urls": URLS}, "every_seconds": 2},
        )
        assert made.status_code == 201, made.text

        def two_final() -> list[dict[str, Any]] | None:
            found = client.get(f"/v1/projects/{project}/jobs").json()["data"]
            final = [j for j in found if j["status"] in ("completed", "failed")]
            return final if len(final) >= 2 else None

        found = wait_until(two_final, timeout=60)
        client.delete(f"/v1/projects/{project}/schedules/{made.json()['data']['id']}")
        first, second = sorted(found, key=lambda j: j["id"])[:2]
        assert first["status"] == "completed" and first["items_total"] == 3
        assert second["status"] == "failed" and second["error"]["code"] == "quota_exceeded"
        # Only the first job's URLs reached the provider.
        queried = [r for r in fakes.serper.requests if r.path == "/search"]
        assert len(queried) == 3


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ('"every_days": 1e-300', "every_days"),  # the reported one: 8.64e-296 s
        ('"every_days": 0.0001', "every_days"),  # 8.64 s
        ('"every_seconds": 59', "every_seconds"),
        ('"every_seconds": 0.001', "every_seconds"),
        ('"every_seconds": NaN', "every_seconds"),
        ('"every_seconds": Infinity', "every_seconds"),
        ('"every_seconds": 1e309', "every_seconds"),
        ('"every_days": 1e12', "every_days"),  # past any representable tick
        ('"cron": "* * * * * *"', "cron"),  # seconds, not allowed by default
        ('"cron": "*/5 * * * * * *"', "cron"),
        ('"cron": "61 * * * *"', "cron"),
    ],
)
def test_schedule_intervals_are_bounded(idle: Api, body: str, field: str) -> None:
    client = idle.client(idle.account())
    project = client.post("/v1/projects", json={"name": "p"}).json()["data"]["id"]
    raw = '{"name": "s", "type": "test_noop", "params": {}, ' + body + "}"
    answer = client.post(
        f"/v1/projects/{project}/schedules",
        content=raw,
        headers={"Content-Type": "application/json"},
    )
    assert_problem(answer, 422)
    assert error_fields(answer) == [field]
    assert client.get(f"/v1/projects/{project}/schedules").json()["data"] == []


def test_seconds_in_cron_need_the_deployment_to_allow_them(store_url: str) -> None:
    with api(make_settings(store_url, schedule_allow_seconds=True)) as app:
        client = app.client(app.account())
        project = client.post("/v1/projects", json={"name": "p"}).json()["data"]["id"]
        made = client.post(
            f"/v1/projects/{project}/schedules",
            json={"name": "s", "type": "test_noop", "params": {}, "cron": "*/30 * * * * *"},
        )
        assert made.status_code == 201, made.text


def test_schedules_per_user_are_capped(store_url: str) -> None:
    with api(make_settings(store_url, max_schedules_per_user=2)) as app:
        client = app.client(app.account())
        other = app.client(app.account("bob"))
        first = client.post("/v1/projects", json={"name": "a"}).json()["data"]["id"]
        second = client.post("/v1/projects", json={"name": "b"}).json()["data"]["id"]

        def make(c: Any, project: int, name: str) -> Any:
            return c.post(
                f"/v1/projects/{project}/schedules",
                json={"name": name, "type": "test_noop", "params": {}, "every_days": 1},
            )

        assert make(client, first, "one").status_code == 201
        assert make(client, second, "two").status_code == 201  # the cap spans projects
        third = make(client, second, "three")
        assert_problem(third, 409)
        assert third.json()["type"].endswith("/schedule_limit")
        bobs = other.post("/v1/projects", json={"name": "a"}).json()["data"]["id"]
        assert make(other, bobs, "one").status_code == 201  # per user


def test_a_failing_schedule_stops_neither_the_others_nor_pruning(services: Services) -> None:
    user = services.accounts.create_user("alice").user
    now = utcnow()
    good = services.schedules.create(
        user, name="good", kind="test_noop", params={}, every_seconds=3600, start_at=now
    )
    base = {
        "project_id": user.default_project_id,
        "params": {},
        "start_at": now - timedelta(hours=2),
        "next_tick_at": now - timedelta(hours=1),
        "enabled": True,
        "created_at": now,
    }
    bad_rows = [  # what the old API accepted, or what a later upgrade can leave behind
        {"name": "tiny", "kind": "test_noop", "interval_seconds": 8.64e-296},
        {"name": "gone", "kind": "no_such_kind", "interval_seconds": 3600.0},
        {"name": "params", "kind": "test_sleep", "interval_seconds": 3600.0},
        {"name": "huge", "kind": "test_noop", "interval_seconds": 1e300},
    ]
    with services.db.write() as conn:
        for row in bad_rows:
            conn.execute(insert(schedules).values(**base, **row, cron=None))
    old, _ = services.jobs.create(user, "test_noop", {})
    services.jobs.cancel(user, old.id)
    far = now + timedelta(days=31)  # past retention: the finished job is pruned
    with services.db.write() as conn:
        conn.execute(update(schedules).where(schedules.c.id == good.id).values(next_tick_at=far))

    report = maintenance.run_once(services.db, services.settings, "a", far, services.schedules.fire)
    assert report.fired == 1 and report.schedule_errors == len(bad_rows)
    assert report.pruned == 1
    assert len(_jobs_of(services, user, good.id)) == 1
    with services.db.read() as conn:
        state = {
            r.name: (r.enabled, r.next_tick_at)
            for r in conn.execute(
                select(schedules.c.name, schedules.c.enabled, schedules.c.next_tick_at)
            )
        }
    assert state["tiny"][0] is False and state["huge"][0] is False  # no next run: disabled
    assert state["gone"][0] and state["gone"][1] > far  # skipped this tick, tried again later
    # The next pass is quiet: nothing is retried before its next tick.
    again = maintenance.run_once(services.db, services.settings, "a", far, services.schedules.fire)
    assert again.schedule_errors == 0


@pytest.mark.parametrize(("every_seconds", "cron"), [(60.0, None), (None, "* * * * *")])
def test_missed_ticks_fire_one_catch_up_job(
    services: Services, every_seconds: float | None, cron: str | None
) -> None:
    user = services.accounts.create_user("alice").user
    now = utcnow().replace(second=30, microsecond=0)
    start = now - timedelta(days=366)  # a year of missed minutes
    made = services.schedules.create(
        user,
        name="s",
        kind="test_noop",
        params={},
        every_seconds=every_seconds,
        cron=cron,
        start_at=start,
    )
    report = maintenance.run_once(services.db, services.settings, "a", now, services.schedules.fire)
    assert report.fired == 1
    [job] = _jobs_of(services, user, made.id)
    assert now - timedelta(minutes=1) < job.schedule_tick <= now
    later = services.schedules.get(user, made.project_id, made.id)
    assert now < later.next_tick_at <= now + timedelta(minutes=1)
    assert (
        maintenance.run_once(
            services.db, services.settings, "a", now, services.schedules.fire
        ).fired
        == 0
    )
