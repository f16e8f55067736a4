"""Verify a webhook delivery from seojobs (issue 27) with Standard Webhooks' reference
implementation (the ``standardwebhooks`` package).

    from seojobs.client import webhooks

    event = webhooks.verify(request_body, request_headers, "whsec_...")
    if event["type"] == "job.completed":
        ...

Verify the raw body as received (bytes or text), before parsing it. A delivery whose
signature does not match the secret, or whose ``webhook-timestamp`` is more than five minutes
from now (a replay), raises :class:`InvalidWebhook`. Deduplicate on ``webhook-id``: it is the
same on every retry of one event.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from standardwebhooks import Webhook, WebhookVerificationError

from seojobs.client.errors import SeojobsError


class InvalidWebhook(SeojobsError):
    """The delivery is not signed by the secret, is too old, or is not a seojobs event."""


def verify(payload: bytes | str, headers: Mapping[str, str], secret: str) -> dict[str, Any]:
    """The event (``type``, ``timestamp``, ``data``) if the delivery is signed by ``secret``
    (``whsec_...``, as shown when the endpoint was made) and recent; else InvalidWebhook."""
    lowered = {name.lower(): value for name, value in headers.items()}
    try:
        event = Webhook(secret).verify(payload, lowered)
    except WebhookVerificationError as exc:
        raise InvalidWebhook(str(exc)) from None
    except ValueError as exc:  # a secret that is not base64, a body that is not JSON
        raise InvalidWebhook(f"cannot verify: {exc}") from None
    if not isinstance(event, dict) or "type" not in event:
        raise InvalidWebhook("not a seojobs event: no `type`")
    return event
