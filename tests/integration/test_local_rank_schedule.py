"""``local_rank_check`` on a schedule (seed 001: local SEO is collected on a schedule): a
schedule of every day, with a short ``SEOJOBS_DAY_SECONDS``, fired three times by the
maintenance loop gives three history points; ``local_rank.changed`` is written once for a
move and never when nothing changed (endpoint filters apply). On both stores: the schedule's
and the comparison's SQL are the store's."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from seojobs.engine import maintenance
from seojobs.kinds import load_registry
from seojobs.records import UserRecord
from seojobs.services import Services
from seojobs.store.coltypes import utcnow
from seojobs.store.db import Database
from tests.conftest import make_settings
from tests.fakes.local import FakeSerperLocal, listing
from tests.fakes.server import serve
from tests.waiting import run_until_final

DAY = 60.0  # SEOJOBS_DAY_SECONDS: a "day" of a minute
HOOK = "http://127.0.0.1:9/hook"  # never dialled: the outbox is read, not sent


def serp(position: int) -> list[dict[str, Any]]:
    others = [listing(f"Other {n}", website=f"https://other{n}.example/") for n in range(1, 10)]
    ours = listing("Acme Plumbing", website="https://acme.example/", rating=4.5, reviews=9)
    return [*others[: position - 1], ours, *others[position - 1 :]]


@pytest.fixture
def world(store_url: str) -> Iterator[tuple[Services, UserRecord, int, FakeSerperLocal]]:
    fake = FakeSerperLocal()
    with serve(fake.app) as fake.base_url:
        settings = make_settings(
            store_url,
            serper_key="serper-key",
            serper_base_url=fake.base_url,
            provider_retries=0,
            day_seconds=DAY,
            schedule_min_interval_seconds=1,
        )
        services = Services(Database(store_url), settings, load_registry(settings))
        try:
            user = services.accounts.create_user("alice").user
            project = services.accounts.create_project(user, "site")
            yield services, user, project.id, fake
        finally:
            services.db.dispose()


def outbox(services: Services, user: UserRecord, hook_id: int) -> list[dict[str, Any]]:
    found = services.webhooks.deliveries(user, hook_id, before=None, limit=100)
    return [json.loads(d.payload) for d, _ in reversed(found) if d.payload]


async def test_a_daily_schedule_fired_three_times_gives_three_points_and_one_event(
    world: tuple[Services, UserRecord, int, FakeSerperLocal],
) -> None:
    services, user, project, fake = world
    fake.places("plumber", *serp(8))
    every = services.webhooks.create(user, url=HOOK, events=["local_rank.changed"])
    top3 = services.webhooks.create(
        user, url=HOOK, events=["local_rank.changed"], filters={"local_rank.changed": {"top": 2}}
    )
    t0 = utcnow() - timedelta(hours=1)
    made = services.schedules.create(
        user,
        name="local",
        kind="local_rank_check",
        params={
            "keywords": ["plumber"],
            "latitude": 30.0,
            "longitude": -97.0,
            "domain": "acme.example",
        },
        every_days=1,
        start_at=t0,
        project_id=project,
    )
    assert made.interval_seconds == DAY
    seen: set[int] = set()
    fire = services.schedules.fire
    for tick in range(3):
        if tick == 2:
            fake.places("plumber", *serp(3))  # the third check: 8 -> 3
        at = t0 + timedelta(seconds=DAY * tick)
        assert maintenance.run_once(services.db, services.settings, "a", at, fire).fired == 1
        [job] = [
            j for j in services.jobs.page(user) if j.schedule_id == made.id and j.id not in seen
        ]
        seen.add(job.id)
        done = await run_until_final(services, user, job, timeout=60)
        assert done.state == "completed", done.error
        if tick == 1:
            assert outbox(services, user, every.id) == []  # the same position: nothing sent

    history = services.collections.history(user, project, "local_rank_check", limit=10)
    assert [h.data["position"] for h in history] == [3, 8, 8]
    assert {h.job_id for h in history} == seen
    [event] = outbox(services, user, every.id)
    assert event["type"] == "local_rank.changed"
    data = event["data"]
    assert (data["change"], data["position_before"], data["position_after"]) == ("moved", 8, 3)
    assert (data["moved_by"], data["keyword"], data["project_id"]) == (5, "plumber", project)
    assert (data["before"]["position"], data["after"]["position"]) == (8, 3)
    assert outbox(services, user, top3.id) == []  # neither 8 nor 3 is within the top 2
    assert len(fake.requests) == 3
