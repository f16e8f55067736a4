"""Webhook endpoints (``services.webhooks``, issue 27): register, change, rotate, delete, and
read an endpoint's deliveries. Delivering them is ``services.webhook_delivery``."""

from __future__ import annotations

import base64
import secrets
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from pydantic import BaseModel, ValidationError

from seojobs.fetch.errors import FetchError
from seojobs.fetch.webhook import WebhookSender
from seojobs.fielderrors import message
from seojobs.records import UserRecord
from seojobs.services.base import Part
from seojobs.services.errors import FieldError, Invalid, NotFound
from seojobs.store import webhooks as hook_sql
from seojobs.store.db import Connection
from seojobs.webhook_records import (
    ALL_EVENTS,
    EVENT_TYPES,
    JOB_FILTERS,
    AttemptRecord,
    DeliveryRecord,
    EndpointRecord,
    stored_events,
)

SECRET_BYTES = 32  # Standard Webhooks: 24 to 64 bytes


def new_secret() -> str:
    """A Standard Webhooks symmetric secret: ``whsec_`` and the base64 of a random key."""
    return "whsec_" + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode()


def checked_events(events: list[str] | str, known: Sequence[str]) -> list[str] | str:
    if events == ALL_EVENTS:
        return ALL_EVENTS
    if isinstance(events, str) or not events:
        raise Invalid("events", f"a list of event types, or {ALL_EVENTS!r}")
    for i, name in enumerate(events):
        if name not in known:
            listed = ", ".join(known)
            raise Invalid([_at(("events", i), f"unknown event type {name!r}; known: {listed}")])
    return events


def checked_filters(
    filters: Mapping[str, Any] | None,
    models: Mapping[str, type[BaseModel]],
    known: Sequence[str],
) -> dict[str, Any] | None:
    """An endpoint's conditions per event type, each checked against the conditions that
    event declares (422 naming ``filters.<type>.<field>``); stored as checked."""
    if filters is None:
        return None
    checked: dict[str, Any] = {}
    for name, given in filters.items():
        model = models.get(name)
        if name not in known:
            raise Invalid([_at(("filters", name), f"unknown event type {name!r}")])
        if model is None:
            raise Invalid([_at(("filters", name), f"{name} takes no filters")])
        if not isinstance(given, Mapping):
            raise Invalid([_at(("filters", name), "an object of conditions")])
        try:
            valid = model.model_validate(given)
        except ValidationError as exc:
            raise Invalid(
                [_at(("filters", name, *e["loc"]), message(e)) for e in exc.errors()]
            ) from None
        checked[name] = valid.model_dump(mode="json", exclude_unset=True)
    return checked


def _at(path: tuple[str | int, ...], message: str) -> FieldError:
    return FieldError(path, message)


def one_off_values(
    conn: Connection, user: UserRecord, job_id: int, url: str, now: datetime
) -> dict[str, Any]:
    """The endpoint of a job's own ``webhook_url``: its job events, signed with the user's
    callback secret (``POST /v1/webhook-callback-secret``), deleted with the job."""
    secret = hook_sql.callback_secret(conn, user.id)
    if secret is None:
        raise Invalid(
            "webhook_url",
            "make your callback secret first (POST /v1/webhook-callback-secret): it signs "
            "the callbacks",
        )
    return {
        "user_id": user.id,
        "job_id": job_id,
        "url": url,
        "events": ALL_EVENTS,
        "enabled": True,
        "secret": secret,
        "created_at": now,
        "updated_at": now,
    }


class Webhooks(Part):
    def event_types(self) -> list[str]:
        """Every event an endpoint may hear: the jobs' and those the kinds declare."""
        return [*EVENT_TYPES, *self.registry.change_events()]

    def _checked(self, values: dict[str, Any]) -> dict[str, Any]:
        known = self.event_types()
        if "events" in values:
            values["events"] = stored_events(checked_events(values["events"], known))
        if "filters" in values:
            models = {n: e.filters for n, e in self.registry.change_events().items() if e.filters}
            models.update(JOB_FILTERS)
            values["filters"] = checked_filters(values["filters"], models, known)
        return values

    def check_url(self, url: str, field: str = "url") -> None:
        """Refuse a URL the fetcher's address policy refuses (SSRF); sends nothing."""
        try:
            WebhookSender(self.settings).check(url)  # its HTTP session is never opened
        except FetchError as exc:
            raise Invalid(field, f"not a deliverable URL: {exc.message}") from None

    def create(
        self,
        user: UserRecord,
        *,
        url: str,
        events: list[str] | str,
        enabled: bool = True,
        description: str | None = None,
        project_id: int | None = None,
        filters: dict[str, Any] | None = None,
    ) -> EndpointRecord:
        """A new endpoint; its ``secret`` is in the record (shown once, by the caller)."""
        if project_id is not None:
            self.base.project(user, project_id)
        now = self.clock()
        values = {
            "user_id": user.id,
            "project_id": project_id,
            "url": url,
            **self._checked({"events": events, "filters": filters}),
            "description": description,
            "enabled": enabled,
            "secret": new_secret(),
            "created_at": now,
            "updated_at": now,
        }
        with self.db.write() as conn:
            return hook_sql.create_endpoint(conn, values)

    def new_callback_secret(self, user: UserRecord) -> str:
        """Make (or replace) the secret that signs the user's jobs' ``webhook_url`` callbacks;
        shown once. Jobs created before keep the secret they were created with."""
        made = new_secret()
        with self.db.write() as conn:
            hook_sql.set_callback_secret(conn, user.id, made)
        return made

    def of(self, user: UserRecord) -> list[EndpointRecord]:
        with self.db.read() as conn:
            return hook_sql.endpoints_of(conn, user.id)

    def get(self, user: UserRecord, endpoint_id: int) -> EndpointRecord:
        with self.db.read() as conn:
            found = hook_sql.get_endpoint(conn, endpoint_id, user.id)
        if found is None:
            raise NotFound(f"webhook {endpoint_id}")
        return found

    def update(self, user: UserRecord, endpoint_id: int, changes: dict[str, Any]) -> EndpointRecord:
        """Change any of url, events, enabled, description, project_id, filters (checked as
        on creation). Enabling again clears the reason it was disabled and its failures."""
        self.get(user, endpoint_id)
        values = self._checked(dict(changes))
        if values.get("project_id") is not None:
            self.base.project(user, values["project_id"])
        if values.get("enabled") is True:
            values.update(disabled_reason=None, failing_since=None)
        values["updated_at"] = self.clock()
        with self.db.write() as conn:
            updated = hook_sql.update_endpoint(conn, endpoint_id, values)
        if updated is None:
            raise NotFound(f"webhook {endpoint_id}")
        return updated

    def rotate(self, user: UserRecord, endpoint_id: int) -> EndpointRecord:
        """A new secret; the previous one keeps signing too for the overlap (both are sent)."""
        current = self.get(user, endpoint_id)
        now = self.clock()
        overlap = timedelta(seconds=self.settings.webhook_secret_overlap_seconds)
        values = {
            "secret": new_secret(),
            "previous_secret": current.secret,
            "previous_secret_until": now + overlap,
            "updated_at": now,
        }
        with self.db.write() as conn:
            updated = hook_sql.update_endpoint(conn, endpoint_id, values)
        if updated is None:
            raise NotFound(f"webhook {endpoint_id}")
        return updated

    def delete(self, user: UserRecord, endpoint_id: int) -> None:
        with self.db.write() as conn:
            if not hook_sql.delete_endpoint(conn, endpoint_id, user.id):
                raise NotFound(f"webhook {endpoint_id}")

    def deliveries(
        self, user: UserRecord, endpoint_id: int, *, before: int | None, limit: int
    ) -> list[tuple[DeliveryRecord, list[AttemptRecord]]]:
        self.get(user, endpoint_id)
        with self.db.read() as conn:
            return hook_sql.deliveries_of(conn, endpoint_id, before=before, limit=limit)

    def replay(self, user: UserRecord, endpoint_id: int, delivery_id: int) -> None:
        """Send a delivery again now, with its id and body (a delivery being sent is left)."""
        self.get(user, endpoint_id)
        with self.db.write() as conn:
            if not hook_sql.replay(conn, endpoint_id, delivery_id, self.clock()):
                raise NotFound(f"delivery {delivery_id}")
