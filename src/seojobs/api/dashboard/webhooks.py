"""Webhook endpoints on the dashboard (issue 27.7): list and add them (the secret shown once,
on the page that answers the creation), pause or resume and delete one, and read one's
deliveries with their attempts, replaying any. Through the same services as ``/v1/webhooks``;
forms are CSRF-checked and charged to the user's request budget like every other."""

from __future__ import annotations

from typing import Any, Final

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import Response

from seojobs.api.dashboard.auth import Viewer, check_csrf, one_read, read_form, services_of
from seojobs.api.dashboard.render import page
from seojobs.api.dashboard.routes import Signed, enabled_field, see_other
from seojobs.api.inputs import CheckedRoute
from seojobs.api.webhooks import DeliveryId, WebhookId
from seojobs.kinds.urls import check_url
from seojobs.services import Invalid
from seojobs.textrules import title_problem
from seojobs.webhook_records import ALL_EVENTS, EVENT_TYPES

router = APIRouter(route_class=CheckedRoute, include_in_schema=False)
DELIVERIES: Final = 50  # the latest shown on an endpoint's page


@router.get("/dashboard/webhooks", name="dashboard_webhooks")
async def webhook_list(request: Request, who: Signed) -> Response:
    return await _list_page(request, who, sent={}, error=None, status_code=200)


async def _list_page(
    request: Request, who: Viewer, *, sent: dict[str, str], error: str | None, status_code: int
) -> Response:
    endpoints = await run_in_threadpool(services_of(request).webhooks.of, who.user)
    context = {
        "endpoints": endpoints,
        "event_types": EVENT_TYPES,
        "sent": sent,
        "error": error,
        "all_events": ALL_EVENTS,
    }
    return page(request, "webhooks.html", context, status_code=status_code, viewer=who)


def _events(form: dict[str, str]) -> list[str] | str:
    """The events ticked; none ticked (or "all") means every event."""
    if form.get("all_events") == "on":
        return ALL_EVENTS
    ticked = [name for name in EVENT_TYPES if form.get(f"event:{name}") == "on"]
    return ticked or ALL_EVENTS


@router.post("/dashboard/webhooks", name="dashboard_webhook_create")
async def webhook_create(request: Request, who: Signed) -> Response:
    form = await read_form(request)
    check_csrf(who.csrf, form)
    url = form.get("url", "").strip()
    description = form.get("description", "").strip() or None
    error = None
    try:
        url = check_url(url)  # the API's rules for a webhook URL, and the same messages
    except ValueError as exc:
        error = f"url: {exc}"
    if error is None and description is not None:
        problem = title_problem(description)
        error = None if problem is None else f"description: {problem}"
    if error is None:
        services = services_of(request)

        def create() -> Any:
            services.webhooks.check_url(url)
            return services.webhooks.create(
                who.user, url=url, events=_events(form), description=description
            )

        try:
            endpoint = await run_in_threadpool(create)
        except Invalid as exc:
            error = str(exc)
        else:
            # The answer to the creation is the only page that ever shows the secret.
            context = {"endpoint": endpoint}
            return page(request, "webhook_secret.html", context, status_code=201, viewer=who)
    return await _list_page(request, who, sent=form, error=error, status_code=422)


@router.get("/dashboard/webhooks/{webhook_id}", name="dashboard_webhook")
async def webhook_page(request: Request, who: Signed, webhook_id: WebhookId) -> Response:
    services = services_of(request)

    def read() -> dict[str, Any]:
        endpoint = services.webhooks.get(who.user, webhook_id)
        found = services.webhooks.deliveries(who.user, webhook_id, before=None, limit=DELIVERIES)
        return {"endpoint": endpoint, "deliveries": found}

    context = await one_read(services, read)
    return page(request, "webhook.html", context, viewer=who)


@router.post("/dashboard/webhooks/{webhook_id}/enabled", name="dashboard_webhook_enable")
async def webhook_enable(request: Request, who: Signed, webhook_id: WebhookId) -> Response:
    form = await read_form(request)
    check_csrf(who.csrf, form)
    services = services_of(request)
    changes = {"enabled": enabled_field(form)}
    await run_in_threadpool(services.webhooks.update, who.user, webhook_id, changes)
    return see_other("/dashboard/webhooks")


@router.post("/dashboard/webhooks/{webhook_id}/delete", name="dashboard_webhook_delete")
async def webhook_delete(request: Request, who: Signed, webhook_id: WebhookId) -> Response:
    form = await read_form(request)
    check_csrf(who.csrf, form)
    await run_in_threadpool(services_of(request).webhooks.delete, who.user, webhook_id)
    return see_other("/dashboard/webhooks")


@router.post(
    "/dashboard/webhooks/{webhook_id}/deliveries/{delivery_id}/replay",
    name="dashboard_webhook_replay",
)
async def delivery_replay(
    request: Request, who: Signed, webhook_id: WebhookId, delivery_id: DeliveryId
) -> Response:
    form = await read_form(request)
    check_csrf(who.csrf, form)
    services = services_of(request)
    await run_in_threadpool(services.webhooks.replay, who.user, webhook_id, delivery_id)
    return see_other(f"/dashboard/webhooks/{webhook_id}")
