"""Webhook deliveries survive a worker's death (issue 27): real ``seojobs worker`` processes,
SIGKILLed between a job's completion and its delivery, and in the middle of an attempt."""

from __future__ import annotations

import json
import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from standardwebhooks import Webhook

from seojobs.services import Services
from seojobs.store import webhooks as hook_sql
from tests.fakes.webhook_receiver import receiver
from tests.procs import Procs
from tests.waiting import wait_until

# One delivery in flight at a time, its attempt waiting as long as the test holds it (the
# claim outlives the test: another worker leaves that one alone).
ONE_AT_A_TIME = {"SEOJOBS_WEBHOOK_CONCURRENCY": "1", "SEOJOBS_WEBHOOK_TIMEOUT": "600"}
QUICK = {
    "SEOJOBS_WEBHOOK_POLL_INTERVAL": "0.05",
    "SEOJOBS_WEBHOOK_TIMEOUT": "1",
    "SEOJOBS_ALLOW_PRIVATE_NETWORKS": "true",
}


@pytest.fixture
def procs(store_url: str, tmp_path: Path) -> Iterator[Procs]:
    p = Procs(store_url, tmp_path)
    yield p
    p.stop_all()


def _state(services: Services, endpoint_id: int) -> list[Any]:
    with services.db.read() as conn:
        return hook_sql.deliveries_of(conn, endpoint_id, before=None, limit=10)


@pytest.mark.slow
def test_a_worker_killed_between_completion_and_delivery_delivers_once(
    services: Services, procs: Procs
) -> None:
    """The victim sends one delivery at a time and the first one is held unanswered: the
    second job completes, its delivery waits in the outbox, and the worker dies."""
    user = services.accounts.create_user("alice").user
    arrived, release = threading.Event(), threading.Event()
    with receiver(hold=(arrived, release)) as consumer:
        endpoint = services.webhooks.create(user, url=consumer.url + "/h", events="*")
        victim = procs.worker(**(QUICK | ONE_AT_A_TIME))
        services.jobs.create(user, "test_noop", {})
        assert arrived.wait(60), procs.exits()  # the first job's delivery: held
        job, _ = services.jobs.create(user, "test_noop", {})
        wait_until(lambda: services.jobs.get(user, job.id).state == "completed")
        [pending] = [d for d, _ in _state(services, endpoint.id) if d.job_id == job.id]
        assert pending.state == "pending" and pending.attempts == 0  # with the completion
        os.kill(victim.pid, signal.SIGKILL)
        victim.wait()
        release.set()

        # Its attempts given time to be answered: with QUICK's 1 s, a loaded run's answer came
        # late, the attempt failed and was retried, and the consumer got the delivery twice.
        procs.worker(**(QUICK | {"SEOJOBS_WEBHOOK_TIMEOUT": "30"}))
        wait_until(lambda: _of(services, endpoint.id, job.id).state == "delivered")
        got = [r for r in consumer.at("/h") if json.loads(r.body)["data"]["id"] == job.id]
    [one] = got
    event = Webhook(endpoint.secret).verify(one.body, one.headers)
    assert event["type"] == "job.completed" and event["data"]["id"] == job.id
    delivery = _of(services, endpoint.id, job.id)
    assert delivery.msg_id == one.headers["webhook-id"] and delivery.attempts == 1


def _of(services: Services, endpoint_id: int, job_id: int) -> Any:
    [found] = [d for d, _ in _state(services, endpoint_id) if d.job_id == job_id]
    return found


@pytest.mark.slow
def test_a_worker_killed_during_an_attempt_leaves_it_to_another_with_the_same_id(
    services: Services, procs: Procs
) -> None:
    user = services.accounts.create_user("alice").user
    arrived, release = threading.Event(), threading.Event()
    with receiver(hold=(arrived, release)) as consumer:
        endpoint = services.webhooks.create(user, url=consumer.url + "/h", events="*")
        victim = procs.worker(**QUICK)
        services.jobs.create(user, "test_noop", {})
        assert arrived.wait(60), procs.exits()  # the first attempt is being answered
        os.kill(victim.pid, signal.SIGKILL)
        victim.wait()
        release.set()

        # Takes it over once the dead worker's claim runs out (2.5 s: QUICK's timeout), its
        # attempt given time to be answered, as above: with QUICK's 1 s, a loaded full run's
        # consumer got the delivery 3 times (the attempt cut at 1 s is retried).
        procs.worker(**(QUICK | {"SEOJOBS_WEBHOOK_TIMEOUT": "30"}))
        wait_until(lambda: _state(services, endpoint.id)[0][0].state == "delivered")
        got = consumer.at("/h")
    [(delivery, attempts)] = _state(services, endpoint.id)
    # On failure: the attempts recorded, what the consumer got and when, the workers' logs.
    seen = [(a.status_code, a.error, round(a.latency_ms), a.attempted_at) for a in attempts]
    why = f"attempts {seen}\nreceived at {[g.at for g in got]}\n{procs.exits()}"
    assert len(got) == 2, why  # at least once: the consumer dedupes on webhook-id
    assert {g.headers["webhook-id"] for g in got} == {delivery.msg_id}
    assert len({g.body for g in got}) == 1
    assert [a.status_code for a in attempts] == [200], why  # the killed attempt left no record
