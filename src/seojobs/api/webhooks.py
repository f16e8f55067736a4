"""Webhook endpoints (issue 27): ``/v1/webhooks`` in seed 001's style (``{"data": ...}``,
problem+json naming the field), with their deliveries and replay. The secret is in the body
of the creation and of a rotation, and never again."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, Field, StringConstraints, WithJsonSchema

from seojobs.api import problems
from seojobs.api.deps import Svc, User
from seojobs.api.ids import MAX_ID, IdDigits, parse_cursor
from seojobs.api.inputs import FORBID, NO_NUL, TOLERATED_KEYS, CheckedRoute
from seojobs.api.text import Title
from seojobs.api.v1 import Cursor, Limit
from seojobs.kinds.urls import Url
from seojobs.timefmt import rfc3339, rfc3339_or_none
from seojobs.webhook_records import (
    EVENT_TYPES,
    AttemptRecord,
    DeliveryRecord,
    EndpointRecord,
)

router = APIRouter(
    prefix="/v1", tags=["webhooks"], responses=problems.RESPONSES, route_class=CheckedRoute
)

WebhookId = Annotated[int, Path(ge=1, le=MAX_ID, description="The endpoint's id."), IdDigits]
DeliveryId = Annotated[int, Path(ge=1, le=MAX_ID, description="The delivery's id."), IdDigits]
# The input gate refuses NUL in any string or key of a body: the document says so.
EventName = Annotated[str, StringConstraints(min_length=1, max_length=100, pattern=NO_NUL)]
# One event type's conditions: any JSON the gate lets through (the service checks them
# against the conditions the event declares).
Conditions = Annotated[dict[str, Any], WithJsonSchema({"type": "object", **TOLERATED_KEYS})]
# At least one event type (the service refuses an empty list): the document says so, or a
# client generated from it sends [] and meets a 422 the schema did not announce.
Events = Annotated[list[EventName], Field(min_length=1)] | Literal["*"]
EVENTS_DOC = (
    f"Event types ({', '.join(EVENT_TYPES)}, and the change events the job types declare: "
    "rank.changed, backlink.lost, audit.issues_new, ...; see the webhooks guide), or `*` for "
    "all of them."
)


class WebhookIn(BaseModel):
    model_config = FORBID

    url: Url = Field(description="Where deliveries are POSTed (http or https).")
    events: Events = Field(default="*", description=EVENTS_DOC)
    enabled: bool = True
    description: Title | None = None
    project_id: int | None = Field(
        default=None, ge=1, le=MAX_ID, description="Only this project's events."
    )
    filters: dict[EventName, Conditions] | None = Field(
        default=None,
        description="Per change event type, conditions its events must meet (e.g. "
        '`{"rank.changed": {"min_change": 3, "top": 10}}`); job events take none.',
    )


class WebhookPatch(BaseModel):
    model_config = FORBID

    url: Url | None = None
    events: Events | None = Field(default=None, description=EVENTS_DOC)
    enabled: bool | None = None
    description: Title | None = None
    project_id: int | None = Field(default=None, ge=1, le=MAX_ID)
    filters: dict[EventName, Conditions] | None = None


class Webhook(BaseModel):
    id: int
    url: str
    events: list[str] | Literal["*"]
    enabled: bool
    disabled_reason: str | None
    description: str | None
    project_id: int | None
    filters: dict[str, dict[str, Any]] | None
    created_at: str
    updated_at: str
    secret: str | None = Field(
        default=None, description="Only in the answer that made it (creation, rotation)."
    )


class WebhookData(BaseModel):
    data: Webhook


class WebhookPage(BaseModel):
    data: list[Webhook]
    next_cursor: str | None


class Attempt(BaseModel):
    attempted_at: str
    status_code: int | None
    latency_ms: float
    response_head: str | None = Field(description="The first bytes of the answer.")
    error: str | None


class Delivery(BaseModel):
    id: int
    webhook_id: str | None = Field(description="The `webhook-id` header: one per event.")
    event_type: str
    job_id: int | None
    status: str = Field(description="pending, delivered or failed.")
    attempts: list[Attempt]
    next_attempt_at: str | None
    last_error: str | None
    created_at: str


class DeliveryPage(BaseModel):
    data: list[Delivery]
    next_cursor: str | None


def webhook_body(endpoint: EndpointRecord, *, secret: bool = False) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": endpoint.id,
        "url": endpoint.url,
        "events": endpoint.event_list,
        "enabled": endpoint.enabled,
        "disabled_reason": endpoint.disabled_reason,
        "description": endpoint.description,
        "project_id": endpoint.project_id,
        "filters": endpoint.filters,
        "created_at": rfc3339(endpoint.created_at),
        "updated_at": rfc3339(endpoint.updated_at),
    }
    if secret:
        body["secret"] = endpoint.secret
    return body


def _attempt(attempt: AttemptRecord) -> dict[str, Any]:
    return {
        "attempted_at": rfc3339(attempt.attempted_at),
        "status_code": attempt.status_code,
        "latency_ms": round(attempt.latency_ms, 1),
        "response_head": attempt.response_head,
        "error": attempt.error,
    }


def delivery_body(delivery: DeliveryRecord, attempts: list[AttemptRecord]) -> dict[str, Any]:
    return {
        "id": delivery.id,
        "webhook_id": delivery.msg_id,
        "event_type": delivery.event_type,
        "job_id": delivery.job_id,
        "status": delivery.state,
        "attempts": [_attempt(a) for a in attempts],
        "next_attempt_at": (
            rfc3339_or_none(delivery.next_attempt_at) if delivery.state == "pending" else None
        ),
        "last_error": delivery.last_error,
        "created_at": rfc3339(delivery.created_at),
    }


@router.post(
    "/webhooks", status_code=201, response_model=WebhookData, operation_id="create_webhook"
)
def create_webhook(body: WebhookIn, user: User, svc: Svc) -> Response:
    """Register an endpoint. The answer carries its signing `secret` (`whsec_...`), once. A URL
    the server may not deliver to (a private or loopback address, unless the deployment
    allows private networks) is refused with 422. (No Idempotency-Key: its stored answer
    would keep the secret.)"""
    svc.webhooks.check_url(body.url)
    endpoint = svc.webhooks.create(user, **body.model_dump())
    data = webhook_body(endpoint, secret=True)
    return JSONResponse(
        {"data": data}, status_code=201, headers={"Location": f"/v1/webhooks/{endpoint.id}"}
    )


@router.get("/webhooks", response_model=WebhookPage, operation_id="list_webhooks")
def list_webhooks(user: User, svc: Svc, cursor: Cursor = None, limit: Limit = 100) -> Response:
    """Your endpoints, oldest first."""
    after = parse_cursor(cursor) or 0
    found = [e for e in svc.webhooks.of(user) if e.id > after]
    page = found[:limit]
    next_cursor = str(page[-1].id) if len(found) > limit else None
    return JSONResponse({"data": [webhook_body(e) for e in page], "next_cursor": next_cursor})


@router.get("/webhooks/{webhook_id}", response_model=WebhookData, operation_id="get_webhook")
def get_webhook(webhook_id: WebhookId, user: User, svc: Svc) -> Response:
    """One of your endpoints (without its secret)."""
    return JSONResponse({"data": webhook_body(svc.webhooks.get(user, webhook_id))})


@router.patch("/webhooks/{webhook_id}", response_model=WebhookData, operation_id="update_webhook")
def update_webhook(webhook_id: WebhookId, body: WebhookPatch, user: User, svc: Svc) -> Response:
    """Change an endpoint: the fields given. `enabled: true` re-enables one that was disabled
    (its reason and failures are cleared)."""
    # null leaves url, events and enabled as they are; it clears the others.
    kept = ("url", "events", "enabled")
    changes = {
        name: value
        for name, value in body.model_dump(exclude_unset=True).items()
        if value is not None or name not in kept
    }
    if "url" in changes:
        svc.webhooks.check_url(changes["url"])
    updated = svc.webhooks.update(user, webhook_id, changes)
    return JSONResponse({"data": webhook_body(updated)})


@router.delete(
    "/webhooks/{webhook_id}",
    status_code=204,
    response_class=Response,
    operation_id="delete_webhook",
)
def delete_webhook(webhook_id: WebhookId, user: User, svc: Svc) -> Response:
    """Delete an endpoint with its deliveries."""
    svc.webhooks.delete(user, webhook_id)
    return Response(status_code=204)


@router.post(
    "/webhooks/{webhook_id}/rotate-secret",
    response_model=WebhookData,
    operation_id="rotate_webhook_secret",
)
def rotate_webhook_secret(webhook_id: WebhookId, user: User, svc: Svc) -> Response:
    """A new signing `secret` (in this answer only). The previous one keeps signing too for
    `SEOJOBS_WEBHOOK_SECRET_OVERLAP_SECONDS`: each delivery carries both signatures."""
    return JSONResponse({"data": webhook_body(svc.webhooks.rotate(user, webhook_id), secret=True)})


@router.get(
    "/webhooks/{webhook_id}/deliveries",
    response_model=DeliveryPage,
    operation_id="list_webhook_deliveries",
)
def list_deliveries(
    webhook_id: WebhookId, user: User, svc: Svc, cursor: Cursor = None, limit: Limit = 100
) -> Response:
    """The endpoint's deliveries, newest first, each with its attempts (status code, latency,
    the first bytes of the answer)."""
    before = parse_cursor(cursor)
    found = svc.webhooks.deliveries(user, webhook_id, before=before, limit=limit + 1)
    page = found[:limit]
    next_cursor = str(page[-1][0].id) if len(found) > limit else None
    data = [delivery_body(d, attempts) for d, attempts in page]
    return JSONResponse({"data": data, "next_cursor": next_cursor})


@router.post(
    "/webhooks/{webhook_id}/deliveries/{delivery_id}/replay",
    status_code=202,
    response_class=Response,
    operation_id="replay_webhook_delivery",
)
def replay_delivery(
    webhook_id: WebhookId, delivery_id: DeliveryId, user: User, svc: Svc
) -> Response:
    """Send a delivery again, now, with the same `webhook-id` and body."""
    svc.webhooks.replay(user, webhook_id, delivery_id)
    return Response(status_code=202)


class CallbackSecret(BaseModel):
    secret: str = Field(description="Signs your jobs' `webhook_url` callbacks; shown once.")


class CallbackSecretData(BaseModel):
    data: CallbackSecret


@router.post(
    "/webhook-callback-secret",
    status_code=201,
    response_model=CallbackSecretData,
    operation_id="make_webhook_callback_secret",
)
def make_callback_secret(user: User, svc: Svc) -> Response:
    """Make (or replace) the secret that signs the one-off callbacks of jobs started with a
    `webhook_url`, shown in this answer only. Jobs started before keep the secret they were
    started with."""
    secret = svc.webhooks.new_callback_secret(user)
    return JSONResponse({"data": {"secret": secret}}, status_code=201)
