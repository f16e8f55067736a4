"""One tenant's share (issue 25.4) on both stores: one user's long jobs leave a worker slot for
another user's short job; a submission's ``checker`` follow-up is charged the check quota as a
direct check is (refused, or charged, the same); every dashboard form spends the user's request
budget, as the API does; ``/metrics`` answers loopback clients only unless a token is set."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterator

import httpx
import pytest

from seojobs.engine.worker import Worker
from seojobs.kinds import load_registry
from seojobs.records import UserRecord
from seojobs.services import QuotaExceeded, Services
from seojobs.store.db import Database
from tests.api_helpers import Api, api, assert_problem
from tests.conftest import make_settings
from tests.dashboard_helpers import csrf_of, post_form, sign_in
from tests.waiting import await_until, wait_until

URLS = [f"https://a.example/p{i}" for i in range(10)]


# -- 4a: worker slots ---------------------------------------------------------------------------


@pytest.fixture
def two_slots(store_url: str) -> Iterator[Api]:
    with api(make_settings(store_url, worker_concurrency=2), run_worker=True) as running:
        yield running


def test_one_users_long_jobs_leave_a_slot_for_another_users_short_job(two_slots: Api) -> None:
    services = two_slots.services
    alice, bob = two_slots.account("alice").user, two_slots.account("bob").user
    long_jobs = [services.jobs.create(alice, "test_sleep", {"seconds": 600})[0] for _ in range(3)]
    try:

        def processing() -> list[int]:
            return [j.id for j in long_jobs if services.jobs.get(alice, j.id).state == "processing"]

        wait_until(processing)
        short, _ = services.jobs.create(bob, "test_noop", {})
        # Bounded wait, no claim on speed: without a share both slots sleep for ten minutes.
        done = wait_until(lambda: (job := services.jobs.get(bob, short.id)).is_final and job)
        assert done.state == "completed"
        # Alice never held both slots of the worker: one stays for someone else.
        assert len(processing()) == 1
    finally:
        for job in long_jobs:
            services.jobs.cancel(alice, job.id)


async def test_the_share_holds_on_each_of_several_workers(store_url: str) -> None:
    """Two workers of two slots on one store: one user's long jobs take one slot of each, and
    another user's short job runs on a slot left free."""
    settings = make_settings(store_url, worker_concurrency=2)
    services = Services(Database(store_url), settings, load_registry(settings))
    alice = services.accounts.create_user("alice").user
    bob = services.accounts.create_user("bob").user
    long_jobs = [services.jobs.create(alice, "test_sleep", {"seconds": 600})[0] for _ in range(5)]
    workers = [Worker(services.db, settings, services.registry, maintenance=False) for _ in "ab"]
    running = [asyncio.create_task(w.run()) for w in workers]
    try:

        async def holders() -> dict[str, int]:
            jobs = [await asyncio.to_thread(services.jobs.get, alice, j.id) for j in long_jobs]
            return Counter(j.worker_id for j in jobs if j.state == "processing")

        async def both_busy() -> bool:
            return len(await holders()) == 2

        await await_until(both_busy)
        short, _ = services.jobs.create(bob, "test_noop", {})

        async def short_done() -> bool:
            return (await asyncio.to_thread(services.jobs.get, bob, short.id)).is_final

        await await_until(short_done)
        assert services.jobs.get(bob, short.id).state == "completed"
        assert set((await holders()).values()) == {1}  # one slot of each worker, no more
    finally:
        for job in long_jobs:
            services.jobs.cancel(alice, job.id)
        for worker in workers:
            worker.stop()
        await asyncio.gather(*running)
        services.db.dispose()


def test_alone_on_the_worker_a_user_still_runs_jobs(two_slots: Api) -> None:
    services = two_slots.services
    alice = two_slots.account("alice").user
    jobs = [services.jobs.create(alice, "test_noop", {})[0] for _ in range(5)]
    for job in jobs:
        wait_until(lambda job=job: services.jobs.get(alice, job.id).state == "completed")


# -- 4c: every job charged through the one path ------------------------------------------------


@pytest.fixture
def small_quota(store_url: str) -> Iterator[Api]:
    with api(make_settings(store_url, quota_check_daily=3)) as running:
        yield running


def _check_use(app: Api, user: UserRecord) -> int:
    return app.services.quotas.usage(user)["check"].used


def test_a_checker_follow_up_is_charged_like_a_direct_check(small_quota: Api) -> None:
    app = small_quota
    alice = app.account("alice")
    client = app.client(alice)
    direct = client.post("/api/v1/index-check/jobs", json={"urls": URLS, "engine": "google"})
    assert direct.status_code in (200, 201, 202), direct.text
    assert direct.json()["status"] == "failed"  # ten checks over a daily quota of three
    # The same ten URLs through a submission's checker: refused the same way, the
    # submission with them (nothing of it is sent, nothing is charged).
    body = {"urls": URLS, "engine": "google", "checker": 1}
    through = client.post("/api/v1/index-submit/jobs", json=body)
    assert through.status_code in (200, 201, 202), through.text
    refused = app.services.jobs.get(alice.user, through.json()["job_id"])
    assert (refused.state, refused.error_code) == ("failed", "quota_exceeded")
    assert app.services.jobs.children([refused]) == []
    assert _check_use(app, alice.user) == 0
    # Two URLs fit: the follow-up is charged now, to the check quota, on its own job.
    small = client.post("/api/v1/index-submit/jobs", json={**body, "urls": URLS[:2]})
    made = app.services.jobs.get(alice.user, small.json()["job_id"])
    assert made.state == "pending"
    [child] = app.services.jobs.children([made])
    assert child.kind == "index_check"
    assert _check_use(app, alice.user) == 2
    # ...so a direct check of two more is now over the quota, as after two direct checks.
    again = client.post("/api/v1/index-check/jobs", json={"urls": URLS[:2], "engine": "google"})
    assert again.json()["status"] == "failed"


def test_a_schedule_whose_follow_ups_exceed_a_quota_is_refused(small_quota: Api) -> None:
    services = small_quota.services
    alice = small_quota.account("alice").user
    with pytest.raises(QuotaExceeded):
        services.schedules.create(
            alice,
            name="nightly",
            kind="index_submit",
            params={"urls": URLS[:5], "engine": "google", "checker": 1},
            every_days=1,
        )


# -- 4d: every state-changing request spends the request budget ---------------------------------


def test_every_dashboard_form_spends_the_users_request_budget(store_url: str) -> None:
    with api(make_settings(store_url)) as app:
        alice = app.account("alice", rate_limit="3/minute")
        client = sign_in(app, alice.key)
        services = app.services
        # Three forms of three kinds (pages shown to get their tokens are reads: not charged).
        made = post_form(client, "/dashboard/projects", "/dashboard/projects", {"name": "one"})
        assert made.status_code == 303, made.text
        project = made.headers["location"]
        renamed = post_form(client, project, f"{project}/rename", {"name": "uno"})
        assert renamed.status_code == 303, renamed.text
        start = f"{project}/new?type=test_noop"
        started = post_form(client, start, f"{project}/new", {"type": "test_noop"})
        assert started.status_code == 303, started.text
        # The fourth is over the budget: refused, whichever form, and nothing changes.
        before = [p.name for p in services.projects(alice.user)]
        token = csrf_of(client.get("/dashboard/projects").text)
        for action, data in (
            ("/dashboard/projects", {"name": "two"}),
            (f"{project}/rename", {"name": "dos"}),
            (f"{project}/new", {"type": "test_noop"}),
            ("/dashboard/new", {"kind": "index_check", "urls": URLS[0], "project": "1"}),
        ):
            limited = client.post(action, data={"csrf_token": token, **data})
            assert limited.status_code == 429, (action, limited.text)
            assert int(limited.headers["retry-after"]) >= 1
        assert [p.name for p in services.projects(alice.user)] == before
        assert len(services.jobs.page(alice.user)) == 1
        # The API answers the same user 429 too: one budget.
        assert_problem(app.client(alice).get("/v1/projects"), 429)
        # Signing out is never refused.
        out = client.post("/dashboard/logout", data={"csrf_token": token})
        assert out.status_code == 303


# -- Also: /metrics ---------------------------------------------------------------------------


def test_metrics_answer_loopback_clients_only_without_a_token(store_url: str) -> None:
    # The proxy in front is trusted: the client is the address it forwards (never dialled).
    settings = make_settings(store_url, trusted_proxies=["127.0.0.1"])
    with api(settings) as app, httpx.Client(base_url=app.base, timeout=60) as client:
        assert client.get("/metrics").status_code == 200  # this host, directly
        for forwarded in (
            {"X-Forwarded-For": "203.0.113.7"},
            {"X-Forwarded-For": "10.1.2.3"},
            {"Forwarded": "for=198.51.100.9"},
        ):
            refused = client.get("/metrics", headers=forwarded)
            body = assert_problem(refused, 403)
            assert "SEOJOBS_METRICS_TOKEN" in body["detail"]
            assert "seojobs_jobs" not in refused.text


def test_metrics_relayed_by_an_untrusted_local_proxy_are_refused(store_url: str) -> None:
    # A reverse proxy on this host that seojobs was not told about: the peer is loopback, but
    # the request came from elsewhere.
    with (
        api(make_settings(store_url)) as app,
        httpx.Client(base_url=app.base, timeout=60) as client,
    ):
        refused = client.get("/metrics", headers={"X-Forwarded-For": "203.0.113.7"})
        assert_problem(refused, 403)
        assert client.get("/metrics").status_code == 200
