"""The webhook dispatcher under a backlog (issue 27), on both stores: two dispatchers on one
database deliver each message once; a slow endpoint holds only its share of the dispatcher's
slots, and the in-flight limits hold; a delivery made due wakes the dispatchers (no poll)."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator, Iterator
from datetime import timedelta
from typing import Any

import pytest
from standardwebhooks import Webhook

from seojobs.kinds import load_registry
from seojobs.records import UserRecord
from seojobs.services import Services
from seojobs.settings import Settings
from seojobs.store import webhooks as hook_sql
from seojobs.store.coltypes import utcnow
from seojobs.store.db import Database
from seojobs.webhook_records import AttemptOutcome, DeliveryRecord, EndpointRecord
from tests.conftest import make_settings
from tests.fakes.webhook_receiver import Receiver, receiver
from tests.statements import statements
from tests.waiting import await_until


def settings_of(url: str, concurrency: int, per_endpoint: int) -> Settings:
    return make_settings(
        url,
        allow_private_networks=True,  # the receiver is on loopback
        webhook_concurrency=concurrency,
        webhook_endpoint_concurrency=per_endpoint,
        webhook_poll_interval=0.05,
        webhook_timeout=60,  # a held request is not an attempt timing out
    )


@contextlib.contextmanager
def services_of(settings: Settings) -> Iterator[Services]:
    services = Services(Database(settings.database_url), settings, load_registry(settings))
    try:
        yield services
    finally:
        services.db.dispose()


@contextlib.asynccontextmanager
async def dispatching(*all_services: Services) -> AsyncIterator[None]:
    """Each one's dispatcher running, as each worker process runs its own."""
    tasks = [asyncio.create_task(s.webhook_dispatcher().run()) for s in all_services]
    try:
        yield
    finally:
        for task in tasks:
            task.cancel()
        for outcome in await asyncio.gather(*tasks, return_exceptions=True):
            assert isinstance(outcome, asyncio.CancelledError), outcome


def queue(services: Services, user: UserRecord, endpoint: EndpointRecord, count: int) -> None:
    """``count`` pending job.completed deliveries to ``endpoint``, of real jobs, their
    messages not made yet (the dispatcher fixes them at its claim)."""
    jobs = [services.jobs.create(user, "test_noop", {})[0].id for _ in range(3)]
    rows = [
        {
            "endpoint_id": endpoint.id,
            "event_type": "job.completed",
            "job_id": jobs[n % len(jobs)],
            "msg_id": None,
            "payload": None,
        }
        for n in range(count)
    ]
    with services.db.write() as conn:
        hook_sql.add_messages(conn, rows, utcnow())


def outbox(services: Services, endpoint: EndpointRecord) -> list[tuple[DeliveryRecord, int]]:
    """The endpoint's deliveries, each with its number of attempts."""
    with services.db.read() as conn:
        found = hook_sql.deliveries_of(conn, endpoint.id, before=None, limit=1000)
    return [(delivery, len(attempts)) for delivery, attempts in found]


async def settled(services: Services, endpoint: EndpointRecord, count: int) -> None:
    def check() -> bool:
        found = outbox(services, endpoint)
        return len(found) == count and all(d.state == "delivered" for d, _ in found)

    await await_until(lambda: asyncio.to_thread(check), timeout=60)


async def test_two_dispatchers_deliver_each_message_once(store_url: str) -> None:
    """Small claims (4 in flight, 2 per endpoint) so the two interleave many times."""
    settings = settings_of(store_url, concurrency=4, per_endpoint=2)
    with receiver() as consumer, services_of(settings) as one, services_of(settings) as two:
        user = one.accounts.create_user("alice").user
        paths = ["/a", "/b", "/c"]
        endpoints = [one.webhooks.create(user, url=consumer.url + p, events="*") for p in paths]
        for endpoint in endpoints:
            queue(one, user, endpoint, 40)
        async with dispatching(one, two):
            for endpoint in endpoints:
                await settled(one, endpoint, 40)
        received = list(consumer.received)
        # Read while the store is open (a read after its disposal opens a connection no one
        # closes: another test's garbage collection then warns of it).
        outboxes = [outbox(one, endpoint) for endpoint in endpoints]
    assert len(received) == 120  # nothing sent twice
    for endpoint, path, found in zip(endpoints, paths, outboxes, strict=True):
        assert all(attempts == 1 for _, attempts in found)
        sent = [r for r in received if r.path == path]
        assert sorted(r.headers["webhook-id"] for r in sent) == sorted(
            d.msg_id or "" for d, _ in found
        )
        for each in sent:  # signed as ever
            event: dict[str, Any] = Webhook(endpoint.secret).verify(each.body, each.headers)
            assert event["type"] == "job.completed"
    assert consumer.most_open[""] <= 8  # two dispatchers of 4


def most_open(consumer: Receiver, path: str) -> int:
    with consumer.lock:
        return consumer.most_open.get(path, 0)


async def test_a_slow_endpoint_holds_only_its_share(store_url: str) -> None:
    """60 deliveries to an endpoint that does not answer, queued before 20 to another: the
    other's arrive while the slow one holds 3 of the 6 slots (once, a batch of 50 waited for
    its slowest attempt, and the next batch behind it)."""
    settings = settings_of(store_url, concurrency=6, per_endpoint=3)
    release = threading.Event()
    with (
        receiver(stall={"/slow": release}) as consumer,
        services_of(settings) as services,
    ):
        user = services.accounts.create_user("alice").user
        slow = services.webhooks.create(user, url=consumer.url + "/slow", events="*")
        fast = services.webhooks.create(user, url=consumer.url + "/fast", events="*")
        queue(services, user, slow, 60)
        queue(services, user, fast, 20)
        try:
            async with dispatching(services):
                await settled(services, fast, 20)
                assert len(consumer.at("/slow")) == 3  # held, not answered: no more sent
                assert most_open(consumer, "/slow") == 3
                release.set()
                await settled(services, slow, 60)
        finally:
            release.set()
    assert most_open(consumer, "/slow") <= 3 and most_open(consumer, "/fast") <= 3
    assert most_open(consumer, "") <= 6
    assert len(consumer.at("/slow")) == 60 and len(consumer.at("/fast")) == 20


async def test_a_delivery_made_due_wakes_the_dispatcher_before_its_poll(store_url: str) -> None:
    """A dispatcher that polls once an hour: a delivery written through its own handle on the
    database (this process: the in-process wake-up), one written through another handle (as
    another process would: NOTIFY on PostgreSQL, the file's change on SQLite), and the retry
    it scheduled itself after a 500 are all sent, one after the other."""
    settings = make_settings(
        store_url,
        allow_private_networks=True,
        webhook_poll_interval=3600,
        webhook_retry_schedule="0.05",
        webhook_timeout=60,
    )
    with (
        receiver(answers=[500]) as consumer,
        services_of(settings) as own,
        services_of(settings) as other,
    ):
        user = own.accounts.create_user("alice").user
        endpoint = own.webhooks.create(user, url=consumer.url + "/h", events="*")
        async with dispatching(own):
            for count, by in enumerate([own, own, other, own], start=1):
                queue(by, user, endpoint, 1)
                await settled(own, endpoint, count)
        found = outbox(own, endpoint)
    assert sorted(attempts for _, attempts in found) == [1, 1, 1, 2]  # the first: 500, 200
    assert [r.path for r in consumer.received] == ["/h"] * 5


async def test_a_delivery_made_due_while_a_claim_runs_is_not_left_for_the_poll(
    store_url: str,
) -> None:
    """A dispatcher polling once an hour, over many rounds: delivery A is sent, and just as
    its answer comes back (recorded, then the claim that follows a recording, with nothing
    in flight) B is written through another handle, at a varying delay. Its wake-up often
    arrives while that claim runs, whose snapshot may predate B: the wake-up must lead to
    another look. One was dropped when the claim before had got some (a backlog draining,
    ``_woken``), and B waited for the poll (seen once in a full run: test_webhooks' job.failed
    delivery on PostgreSQL)."""
    settings = make_settings(
        store_url, allow_private_networks=True, webhook_poll_interval=3600, webhook_timeout=60
    )
    rounds = 40
    with receiver() as consumer, services_of(settings) as own, services_of(settings) as other:
        user = own.accounts.create_user("alice").user
        endpoint = own.webhooks.create(user, url=consumer.url + "/h", events="*")
        job_id = own.jobs.create(user, "test_noop", {})[0].id

        def add(by: Services) -> None:
            row = {"endpoint_id": endpoint.id, "event_type": "job.completed", "job_id": job_id}
            with by.db.write() as conn:
                hook_sql.add_messages(conn, [{**row, "msg_id": None, "payload": None}], utcnow())

        async def sent(count: int) -> bool:
            return len(consumer.received) >= count

        async with dispatching(own):
            for n in range(rounds):
                await asyncio.to_thread(add, own)
                await await_until(lambda n=n: sent(2 * n + 1), interval=0.001)
                await asyncio.sleep(0.0005 * (n % 12))  # across the record and the claim
                await asyncio.to_thread(add, other)
                await settled(own, endpoint, 2 * n + 2)
    assert len(consumer.received) == 2 * rounds


async def test_an_idle_dispatcher_reads_the_outbox_only_at_its_fallback(store_url: str) -> None:
    """With the default settings, a dispatcher with nothing to deliver looks once, then at
    its fallback poll (5 s): it looked every 0.2 s, five reads a second in every worker of
    every server (issue 24.1). Counted through the database: the reads of the outbox."""
    settings = make_settings(store_url)
    with services_of(settings) as services, statements(services.db) as seen:
        async with dispatching(services):
            await asyncio.sleep(2.0)
    reads = [s for s in seen if "webhook_deliveries" in s]
    assert 1 <= len(reads) <= 2, reads


async def test_a_dispatcher_sleeps_until_the_soonest_retry_another_scheduled(
    store_url: str,
) -> None:
    """A delivery claimed through another handle on the database (another worker's
    dispatcher, mid-attempt) is invisible to this dispatcher's look, which then finds nothing
    and sleeps (its fallback poll: an hour). The other records a 500 and a retry 0.2 s later:
    that wakes this one (NOTIFY on PostgreSQL, the file's change on SQLite), which reads when
    the retry comes due, sleeps until then and sends it. Without the wake-up it waited for
    its fallback poll."""
    settings = make_settings(
        store_url, allow_private_networks=True, webhook_poll_interval=3600, webhook_timeout=60
    )
    with receiver() as consumer, services_of(settings) as own, services_of(settings) as other:
        user = other.accounts.create_user("alice").user
        endpoint = other.webhooks.create(user, url=consumer.url + "/h", events="*")
        queue(other, user, endpoint, 1)
        [(delivery, _)] = outbox(other, endpoint)
        with other.db.write() as conn:
            hook_sql.hold(conn, [(delivery.id, None, None)], utcnow(), 60)
        async with dispatching(own):
            await asyncio.sleep(0.3)  # its first look: nothing due that is not claimed
            assert consumer.received == []
            now = utcnow()
            failed = AttemptOutcome(500, 1.0, "", None)
            retry = hook_sql.Recorded(
                delivery.id, failed, "pending", now + timedelta(seconds=0.2), endpoint.id, None
            )
            with other.db.write() as conn:
                hook_sql.record_attempts(conn, [retry], now)
            await settled(own, endpoint, 1)
        [(sent, attempts)] = outbox(own, endpoint)
    assert attempts == 2 and sent.state == "delivered"
    assert [r.path for r in consumer.received] == ["/h"]


async def test_a_dispatcher_cancelled_as_a_wake_up_reaches_it_ends(store_url: str) -> None:
    """A worker's stop cancels its dispatcher, often just after a commit woke it (SQLite's
    watch wakes dispatchers at every commit to the file, the drain's release among them).
    Cancelled one to four loop turns after a wake-up, it must end: on Python 3.11,
    ``asyncio.wait_for`` returned the wake-up instead of the cancel, the dispatcher claimed
    and waited on, and its worker process stayed alive after ``shutdown_done``."""
    settings = make_settings(store_url, webhook_poll_interval=3600)
    with services_of(settings) as services:
        for turns in [0, 1, 2, 3, 4] * 2:
            dispatcher = services.webhook_dispatcher()
            task = asyncio.create_task(dispatcher.run())
            await asyncio.sleep(0.2)  # its first claim found nothing: it waits for a wake-up
            dispatcher.wake()  # as its listener does, from any thread
            for _ in range(turns):
                await asyncio.sleep(0)
            task.cancel()
            # Ended, or still running long after (a bound on liveness, not a timing).
            await asyncio.wait([task], timeout=30)
            assert task.cancelled(), f"still running after a cancel {turns} turns after a wake"


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("webhook_concurrency", 0),
        ("webhook_concurrency", 1001),
        ("webhook_endpoint_concurrency", 0),
    ],
)
def test_the_concurrency_settings_are_bounded(name: str, value: int) -> None:
    with pytest.raises(ValueError, match=name):
        Settings(database_url="sqlite://", **{name: value})
