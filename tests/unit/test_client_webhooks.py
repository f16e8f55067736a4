"""The SDK's webhook verification (issue 27) against the server's signing, both checked with
Standard Webhooks' reference implementation."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime

import pytest
from standardwebhooks import Webhook

from seojobs.client import webhooks
from seojobs.services.webhook_delivery import sign, signed_headers
from seojobs.services.webhooks import new_secret

BODY = json.dumps({"type": "job.completed", "timestamp": "2026-12-05T10:00:00Z", "data": {}})


def test_the_server_signs_as_the_reference_implementation_does() -> None:
    secret = new_secret()
    when = int(time.time())
    reference = Webhook(secret).sign("msg_1", datetime.fromtimestamp(when, UTC), BODY)
    assert sign(secret, "msg_1", when, BODY.encode()) == reference


def test_verify_returns_the_event_of_a_signed_delivery() -> None:
    secret = new_secret()
    headers = signed_headers([secret], "msg_2", int(time.time()), BODY.encode())
    event = webhooks.verify(BODY.encode(), headers, secret)
    assert event["type"] == "job.completed"
    # Header names in any case (frameworks differ), text or bytes alike.
    upper = {k.upper(): v for k, v in headers.items()}
    assert webhooks.verify(BODY, upper, secret) == event


def test_either_secret_verifies_during_a_rotation() -> None:
    old, new = new_secret(), new_secret()
    headers = signed_headers([new, old], "msg_3", int(time.time()), BODY.encode())
    assert webhooks.verify(BODY, headers, old) == webhooks.verify(BODY, headers, new)


@pytest.mark.parametrize("problem", ["wrong secret", "old", "tampered", "unsigned"])
def test_verify_refuses(problem: str) -> None:
    secret = new_secret()
    when = int(time.time()) - (600 if problem == "old" else 0)
    headers = signed_headers([secret], "msg_4", when, BODY.encode())
    body = BODY
    if problem == "wrong secret":
        secret = new_secret()
    elif problem == "tampered":
        body = BODY.replace("completed", "failed")
    elif problem == "unsigned":
        del headers["webhook-signature"]
    with pytest.raises(webhooks.InvalidWebhook):
        webhooks.verify(body, headers, secret)
