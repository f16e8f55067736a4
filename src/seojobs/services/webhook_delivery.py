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
import hashlib
import hmac
import logging
import random
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from seojobs.fetch.errors import FetchError
from seojobs.fetch.guard import Resolver
from seojobs.fetch.webhook import WebhookSender
from seojobs.jobbody import job_body
from seojobs.settings import Settings
from seojobs.store import jobs as job_sql
from seojobs.store import webhooks as hook_sql
from seojobs.store.coltypes import utcnow
from seojobs.store.db import Database
from seojobs.store.jobs import SCHEDULED_CHECK
from seojobs.timefmt import rfc3339
from seojobs.webhook_records import AttemptOutcome, DueDelivery, EndpointRecord, message

log = logging.getLogger("seojobs.webhooks")

BATCH = 50
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


class Dispatcher:
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

    async def run(self) -> None:
        """Deliver until cancelled."""
        sender = WebhookSender(self.settings, resolver=self.resolver)
        try:
            while True:
                try:
                    sent = await self.run_once(sender)
                except Exception:
                    log.exception("webhook dispatch failed; trying again")
                    sent = 0
                if not sent:
                    await asyncio.sleep(self.settings.webhook_poll_interval)
        finally:
            await sender.aclose()

    async def run_once(self, sender: WebhookSender) -> int:
        due = await asyncio.to_thread(self._claim)
        if due:
            await asyncio.gather(*(self._deliver(sender, d) for d in due))
        return len(due)

    def _claim(self) -> list[DueDelivery]:
        now = self.clock()
        with self.db.read() as conn:
            if not hook_sql.has_due(conn, now):
                return []
        with self.db.write() as conn:
            return hook_sql.claim_due(self.db, conn, now, BATCH, self.lock_for)

    async def _deliver(self, sender: WebhookSender, due: DueDelivery) -> None:
        delivery, endpoint = due.delivery, due.endpoint
        if not endpoint.enabled:
            reason = f"the endpoint is disabled: {endpoint.disabled_reason or 'by its owner'}"
            await asyncio.to_thread(self._give_up, delivery.id, reason)
            return
        if delivery.msg_id is None or delivery.payload is None:
            msg_id, payload = await asyncio.to_thread(self._fix_message, due)
        else:
            msg_id, payload = delivery.msg_id, delivery.payload
        body = payload.encode()
        now = self.clock()
        headers = signed_headers(endpoint.signing_secrets(now), msg_id, int(time.time()), body)
        started = time.monotonic()
        try:
            answer = await sender.post(endpoint.url, body, headers)
        except FetchError as exc:
            outcome = AttemptOutcome(None, _ms(started), None, f"{exc.kind}: {exc.message}")
        else:
            head = answer.body[:HEAD_CHARS].decode("utf-8", "replace")
            outcome = AttemptOutcome(answer.status, _ms(started), head, None)
        await asyncio.to_thread(self._record, due, outcome)

    def _give_up(self, delivery_id: int, reason: str) -> None:
        with self.db.write() as conn:
            hook_sql.give_up(conn, delivery_id, reason, self.clock())

    def _fix_message(self, due: DueDelivery) -> tuple[str, str]:
        delivery = due.delivery
        with self.db.read() as conn:
            job = job_sql.get(conn, delivery.job_id) if delivery.job_id is not None else None
        data: dict[str, Any] = job_body(job) if job else {"id": delivery.job_id}
        if job is not None and delivery.event_type == SCHEDULED_CHECK:
            data["submission_id"] = job.parent_id  # the job whose follow-up it is
        msg_id, payload = message(delivery.event_type, delivery.created_at, data)
        with self.db.write() as conn:
            hook_sql.set_message(conn, delivery.id, msg_id, payload)
        return msg_id, payload

    def _record(self, due: DueDelivery, outcome: AttemptOutcome) -> None:
        now = self.clock()
        state, next_at, endpoint_values = self._next(due, outcome, now)
        with self.db.write() as conn:
            hook_sql.record_attempt(
                conn,
                due.delivery.id,
                outcome,
                now,
                state=state,
                next_attempt_at=next_at,
                endpoint_id=due.endpoint.id,
                endpoint_values=endpoint_values,
            )

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


def _ms(started: float) -> float:
    return (time.monotonic() - started) * 1000
