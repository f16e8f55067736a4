"""Webhook delivery (issue 27): workers send what the outbox holds, signed per Standard
Webhooks, and retry with back-off.

Each worker runs a :class:`Dispatcher` beside its job loop. It claims due deliveries for a
little longer than an attempt may take (a dispatcher killed mid-attempt leaves them to the
next one once the claim runs out), fixes each message's id and body before its first attempt
(every retry sends the same ``webhook-id`` and bytes, with a fresh ``webhook-timestamp`` and
signature), and records every attempt. 2xx: delivered. 410: the endpoint is disabled. Other
answers and errors: retried after ``SEOJOBS_WEBHOOK_RETRY_SCHEDULE`` (with jitter), then
failed; an endpoint failing for ``SEOJOBS_WEBHOOK_DISABLE_AFTER_SECONDS`` is disabled with
the reason. Delivery is at least once: a consumer dedupes on ``webhook-id``.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import hmac
import logging
import random
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any, TypeVar

from seojobs.fetch.errors import FetchError
from seojobs.fetch.guard import Resolver
from seojobs.fetch.webhook import WebhookSender
from seojobs.jobbody import job_body
from seojobs.settings import Settings
from seojobs.store import jobs as job_sql
from seojobs.store import webhooks as hook_sql
from seojobs.store.clock import seconds_until
from seojobs.store.coltypes import utcnow
from seojobs.store.db import WEBHOOK_CHANNEL, Connection, Database
from seojobs.store.jobs import SCHEDULED_CHECK
from seojobs.store.listener import Listener
from seojobs.timefmt import rfc3339
from seojobs.webhook_records import (
    AttemptOutcome,
    DeliveryRecord,
    DueDelivery,
    EndpointRecord,
    message,
)

log = logging.getLogger("seojobs.webhooks")
T = TypeVar("T")

HEAD_CHARS = 512  # of an answer, what an attempt keeps (GET /v1/webhooks/{id}/deliveries)
JITTER = 0.1


def sign(secret: str, msg_id: str, timestamp: int, body: bytes) -> str:
    """Standard Webhooks' ``v1`` signature: base64 HMAC-SHA256 of ``id.timestamp.body`` with
    the key the ``whsec_`` secret encodes."""
    key = base64.b64decode(secret.removeprefix("whsec_"))
    signed = f"{msg_id}.{timestamp}.".encode() + body
    return "v1," + base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()


def signed_headers(secrets: list[str], msg_id: str, timestamp: int, body: bytes) -> dict[str, str]:
    return {
        "webhook-id": msg_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": " ".join(sign(s, msg_id, timestamp, body) for s in secrets),
    }


@dataclass(frozen=True)
class _Done:
    """A claimed delivery, dealt with: an attempt's ``outcome``, or a ``reason`` not to
    attempt it (its endpoint is disabled), or neither (something broke: its claim runs out
    and it is sent again)."""

    due: DueDelivery
    outcome: AttemptOutcome | None = None
    reason: str | None = None


class Dispatcher:
    """Sends due deliveries with up to ``webhook_concurrency`` attempts in flight, at most
    ``webhook_endpoint_concurrency`` of them to one endpoint (a slow or silent endpoint holds
    its share, never the others'). It claims as many as it has free slots, in one statement
    that also fixes the new messages, and records what the attempts got in batches: a burst of
    completions is drained in a few transactions per batch, not three per delivery. No order
    is kept between deliveries (Standard Webhooks promises none; the docs say so)."""

    def __init__(
        self,
        db: Database,
        settings: Settings,
        clock: Callable[[], datetime] = utcnow,
        *,
        resolver: Resolver | None = None,
    ) -> None:
        self.db = db
        self.settings = settings
        self.clock = clock
        self.resolver = resolver
        self.lock_for = settings.webhook_timeout * 1.5 + 1
        self.concurrency = settings.webhook_concurrency
        self.per_endpoint = min(settings.webhook_endpoint_concurrency, self.concurrency)
        self._busy: Counter[int] = Counter()  # endpoint id: claimed here, not yet recorded
        self._in_flight = 0
        self._backlog = False  # the last claim got some
        self._done: list[_Done] = []
        self._ready = asyncio.Event()  # something in _done
        # Slots came free, or deliveries were made due (a wake-up: ``WEBHOOK_CHANNEL``).
        self._freed = asyncio.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        # When the soonest unclaimed delivery comes due, as the last look that found none
        # due read it (None: none pending, or not looked since a claim got some).
        self._next_at: datetime | None = None

    def wake(self) -> None:
        """Thread-safe: deliveries may be due (the listener's, and this process's commits')."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._woken)

    def _woken(self) -> None:
        """Claims at once unless a backlog is draining (the last claim got some, and attempts
        are in flight): the next claim then comes as they are recorded and takes what is due
        by then (a claim per wake-up made a burst into many small write transactions, which
        on SQLite queued behind the worker's). With none in flight no recording is to come:
        a wake-up that arrives while the claim after the last recording runs (its snapshot
        may predate what woke us) was dropped, and the delivery waited for the poll."""
        draining = self._backlog and self._in_flight > 0
        if not draining and self._in_flight < self.concurrency:
            self._freed.set()

    async def run(self) -> None:
        """Deliver until cancelled: claim when woken (the transaction that made a delivery
        due or scheduled a retry commits: seojobs.store.listener), when slots come free, when
        the soonest delivery it knows of comes due, and at least every ``webhook_poll_interval``
        (for a claim that runs out: its dispatcher died mid-attempt, and no one says so)."""
        self._loop = asyncio.get_running_loop()
        listener = Listener(self.db, self.wake, WEBHOOK_CHANNEL)
        listener.start()
        # Made at the first delivery: its HTTP stack (aiohttp) is not loaded by a server or a
        # worker that never delivers one.
        sender: WebhookSender | None = None
        recorder = asyncio.create_task(self._record_loop())
        attempts: set[asyncio.Task[None]] = set()
        try:
            while True:
                self._freed.clear()  # before the claim: a batch recorded meanwhile wakes us
                free = self.concurrency - self._in_flight
                for due in await self._claim_free(free) if free > 0 else []:
                    if sender is None:
                        sender = WebhookSender(self.settings, resolver=self.resolver)
                    task = asyncio.create_task(self._attempt(sender, due))
                    attempts.add(task)
                    task.add_done_callback(attempts.discard)
                # Not asyncio.wait_for: on Python 3.11, a cancel that comes while a wake-up
                # is on its way to that wait is swallowed (it returns the wake-up), and the
                # dispatcher ran on after its worker's stop, the process alive for good.
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self._pause()):
                        await self._freed.wait()
        finally:
            for task in (recorder, *attempts):
                task.cancel()
            await asyncio.gather(recorder, *attempts, return_exceptions=True)
            if sender is not None:
                await sender.aclose()
            await listener.aclose()

    def _pause(self) -> float:
        """Until the next look: the fallback poll interval, or less when the soonest
        delivery the last look found comes due sooner (a retry this dispatcher scheduled
        too: the claim that follows every recording reads it). An idle dispatcher used to
        look every 0.2 s whether or not anything could be due: 5 reads a second in every
        worker, issue 24.1."""
        return seconds_until(self.clock(), self.settings.webhook_poll_interval, self._next_at)

    async def run_once(self, sender: WebhookSender) -> int:
        """Claim what is due (up to ``webhook_concurrency``), send it, record it; how many."""
        due = await asyncio.to_thread(self._claim, self.concurrency, {})
        if due:
            done = await asyncio.gather(*(self._outcome(sender, d) for d in due))
            await asyncio.to_thread(self._record, done)
        return len(due)

    async def _claim_free(self, free: int) -> list[DueDelivery]:
        try:
            due = await _finishing(self._claim, free, dict(self._busy))
        except Exception:
            log.exception("webhook dispatch failed; trying again")
            return []
        for each in due:
            self._busy[each.endpoint.id] += 1
        self._in_flight += len(due)
        return due

    async def _attempt(self, sender: WebhookSender, due: DueDelivery) -> None:
        try:
            done = await self._outcome(sender, due)
        except Exception:
            log.exception("webhook delivery %s failed; its claim will run out", due.delivery.id)
            done = _Done(due)
        self._done.append(done)
        self._ready.set()

    async def _record_loop(self) -> None:
        """Records finished attempts, all that finished meanwhile in one transaction, and frees
        their slots (a delivery holds its slot until recorded: in flight never exceeds
        ``webhook_concurrency``, and its claim outlives the attempt)."""
        while True:
            await self._ready.wait()
            self._ready.clear()
            batch, self._done = self._done, []
            try:
                await _finishing(self._record, batch)
            except Exception:
                log.exception("recording webhook attempts failed; their claims will run out")
            for done in batch:
                self._busy[done.due.endpoint.id] -= 1
                if not self._busy[done.due.endpoint.id]:
                    del self._busy[done.due.endpoint.id]
            self._in_flight -= len(batch)
            self._freed.set()

    def _claim(self, limit: int, busy: dict[int, int]) -> list[DueDelivery]:
        """Claims up to ``limit`` due deliveries and fixes the new ones' messages, in one
        transaction. Skips the (cheap, read-only) look for due ones while a backlog is being
        drained: the previous claim got some. A claim that gets none leaves when the soonest
        delivery comes due (``_next_at``)."""
        now = self.clock()
        if not self._backlog:
            with self.db.read() as conn:
                self._next_at = hook_sql.next_due(conn, now)
            if self._next_at is None or self._next_at > now:
                return []
        with self.db.write() as conn:
            due = hook_sql.claim_due(
                self.db, conn, now, limit, per_endpoint=self.per_endpoint, busy=busy
            )
            stored = {d.delivery.id for d in due if d.delivery.msg_id and d.delivery.payload}
            due = self._with_messages(conn, due)
            held = [
                (d.delivery.id, None, None)
                if d.delivery.id in stored
                else (d.delivery.id, d.delivery.msg_id, d.delivery.payload)
                for d in due
            ]
            hook_sql.hold(conn, held, now, self.lock_for)
            # None claimed (a backlog drained, another dispatcher was first, or what is due
            # waits for an endpoint's slot here): wake-ups were ignored meanwhile
            # (``_woken``), so read what comes due next; what is due already waits for
            # slots to come free (``_record_loop`` wakes us) or for the fallback poll.
            self._next_at = None if due else hook_sql.next_due(conn, now, after=True)
        self._backlog = bool(due)
        return due

    def _with_messages(self, conn: Connection, due: list[DueDelivery]) -> list[DueDelivery]:
        """Each new message's id and body (stored by the claim, before its first attempt)."""
        new = [d for d in due if d.delivery.msg_id is None or d.delivery.payload is None]
        if not new:
            return due
        wanted = [d.delivery.job_id for d in new if d.delivery.job_id is not None]
        found = job_sql.get_many(conn, wanted)
        fixed: dict[int, DeliveryRecord] = {}
        for each in new:
            delivery = each.delivery
            job = found.get(delivery.job_id) if delivery.job_id is not None else None
            data: dict[str, Any] = job_body(job) if job else {"id": delivery.job_id}
            if job is not None and delivery.event_type == SCHEDULED_CHECK:
                data["submission_id"] = job.parent_id  # the job whose follow-up it is
            msg_id, payload = message(delivery.event_type, delivery.created_at, data)
            fixed[delivery.id] = replace(delivery, msg_id=msg_id, payload=payload)
        return [replace(d, delivery=fixed.get(d.delivery.id, d.delivery)) for d in due]

    async def _outcome(self, sender: WebhookSender, due: DueDelivery) -> _Done:
        delivery, endpoint = due.delivery, due.endpoint
        if not endpoint.enabled:
            reason = f"the endpoint is disabled: {endpoint.disabled_reason or 'by its owner'}"
            return _Done(due, reason=reason)
        assert delivery.msg_id is not None and delivery.payload is not None  # fixed at claim
        body = delivery.payload.encode()
        now = self.clock()
        headers = signed_headers(
            endpoint.signing_secrets(now), delivery.msg_id, int(time.time()), body
        )
        started = time.monotonic()
        try:
            answer = await sender.post(endpoint.url, body, headers)
        except FetchError as exc:
            outcome = AttemptOutcome(None, _ms(started), None, f"{exc.kind}: {exc.message}")
        else:
            head = answer.body[:HEAD_CHARS].decode("utf-8", "replace")
            outcome = AttemptOutcome(answer.status, _ms(started), head, None)
        return _Done(due, outcome=outcome)

    def _record(self, batch: Sequence[_Done]) -> None:
        now = self.clock()
        recorded = []
        for done in batch:
            if done.outcome is not None:
                state, next_at, endpoint_values = self._next(done.due, done.outcome, now)
                recorded.append(
                    hook_sql.Recorded(
                        done.due.delivery.id,
                        done.outcome,
                        state,
                        next_at,
                        done.due.endpoint.id,
                        endpoint_values,
                    )
                )
        given_up = [(d.due.delivery.id, d.reason) for d in batch if d.reason is not None]
        if not recorded and not given_up:
            return
        with self.db.write() as conn:
            hook_sql.record_attempts(conn, recorded, now)
            for delivery_id, reason in given_up:
                hook_sql.give_up(conn, delivery_id, reason, now)

    def _next(
        self, due: DueDelivery, outcome: AttemptOutcome, now: datetime
    ) -> tuple[str, datetime | None, dict[str, Any] | None]:
        """(the delivery's state, its next attempt, what changes on the endpoint)."""
        endpoint = due.endpoint
        if outcome.succeeded:
            return "delivered", None, ({"failing_since": None} if endpoint.failing_since else None)
        if outcome.status_code == 410:
            reason = "the endpoint answered 410 Gone"
            return "failed", None, {"enabled": False, "disabled_reason": reason, "updated_at": now}
        schedule = self.settings.webhook_retry_schedule
        attempts = due.delivery.attempts + 1
        state, next_at = "failed", None
        if attempts <= len(schedule):
            delay = schedule[attempts - 1] * random.uniform(1 - JITTER, 1 + JITTER)
            state, next_at = "pending", now + timedelta(seconds=delay)
        return state, next_at, _failing(endpoint, outcome, now, self.settings)


def _failing(
    endpoint: EndpointRecord, outcome: AttemptOutcome, now: datetime, settings: Settings
) -> dict[str, Any] | None:
    since = endpoint.failing_since
    if since is None:
        return {"failing_since": now}
    if (now - since).total_seconds() < settings.webhook_disable_after_seconds:
        return None
    last = outcome.error or f"the endpoint answered {outcome.status_code}"
    reason = f"deliveries have failed since {rfc3339(since)} (last: {last})"
    return {"enabled": False, "disabled_reason": reason[:2000], "updated_at": now}


async def _finishing(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` in a thread; cancelled, it still waits for the thread's transaction to
    end (a thread left running would hold its connection past the database's disposal)."""
    work = asyncio.ensure_future(asyncio.to_thread(fn, *args))
    try:
        return await asyncio.shield(work)
    except asyncio.CancelledError:
        with contextlib.suppress(Exception):
            await work
        raise


def _ms(started: float) -> float:
    return (time.monotonic() - started) * 1000
