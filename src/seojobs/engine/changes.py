"""Change events (issue 27): what the kinds declare beside their reads
(``seojobs.reads.ChangeEvent``), evaluated when a job's collections are published.

The worker hands :class:`ChangeEvents` to the completion (``store.jobs.complete_many``): in
the transaction that publishes a job's collections, each collection of a kind that declares
events is compared with the previous published collection of the same kind and subject in
the same project, and an outbox row (its message id and body fixed) is written for every
endpoint that hears the event and whose conditions (``filters``) it meets. Nothing is read
beyond one indexed lookup when no endpoint hears a change event; nothing is written when
nothing changed.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ValidationError

from seojobs.engine.registry import Registry
from seojobs.logfmt import logged_internal
from seojobs.reads import ChangeEvent
from seojobs.records import CollectionRecord
from seojobs.store import webhooks as hook_sql
from seojobs.store.db import Connection
from seojobs.webhook_records import EndpointRecord, message

log = logging.getLogger("seojobs.webhooks")


def conditions(event: ChangeEvent, endpoint: EndpointRecord) -> BaseModel | None:
    """The endpoint's conditions on ``event`` (their defaults when it set none)."""
    if event.filters is None:
        return None
    given = (endpoint.filters or {}).get(event.name) or {}
    try:
        return event.filters.model_validate(given)
    except ValidationError:  # checked when set; a model changed since: its defaults
        return event.filters()


def event_data(
    event: ChangeEvent,
    before: CollectionRecord | None,
    after: CollectionRecord,
    changed: Mapping[str, Any],
) -> dict[str, Any]:
    return {
        "project_id": after.project_id,
        "kind": after.kind,
        "subject": after.subject,
        **changed,
        "before": event.to_row(before) if before is not None else None,
        "after": event.to_row(after),
    }


class ChangeEvents:
    def __init__(self, registry: Registry) -> None:
        self.events = registry.change_events()
        self.of_kind: dict[str, list[ChangeEvent]] = defaultdict(list)
        for event in self.events.values():
            self.of_kind[event.kind].append(event)

    def __call__(self, conn: Connection, job_ids: list[int], now: datetime) -> None:
        if not self.events:
            return
        endpoints = hook_sql.change_endpoints(conn, job_ids, list(self.events))
        if not endpoints:
            return
        pairs = hook_sql.published_with_previous(conn, job_ids, list(self.of_kind))
        messages: list[dict[str, Any]] = []
        for before, after in pairs:
            for event in self.of_kind[after.kind]:
                hearing = [e for p, e in endpoints if p == after.project_id and e.hears(event.name)]
                if hearing:
                    messages += self._messages(event, before, after, hearing, now)
        hook_sql.add_messages(conn, messages, now)

    def _messages(
        self,
        event: ChangeEvent,
        before: CollectionRecord | None,
        after: CollectionRecord,
        hearing: Sequence[EndpointRecord],
        now: datetime,
    ) -> list[dict[str, Any]]:
        try:
            changed = event.compare(before, after)
            if changed is None:
                return []
            data = event_data(event, before, after, changed)
            sent = [e for e in hearing if self._meets(event, e, data)]
        except Exception:  # a collection no comparison expected: that event only, never the job
            logged_internal(log, f"comparing collection {after.id} for {event.name}")
            return []
        found = []
        for endpoint in sent:
            msg_id, payload = message(event.name, now, data)
            found.append(
                {
                    "endpoint_id": endpoint.id,
                    "event_type": event.name,
                    "job_id": after.job_id,
                    "msg_id": msg_id,
                    "payload": payload,
                }
            )
        return found

    @staticmethod
    def _meets(event: ChangeEvent, endpoint: EndpointRecord, data: Mapping[str, Any]) -> bool:
        if event.matches is None:
            return True
        return event.matches(conditions(event, endpoint), data)
