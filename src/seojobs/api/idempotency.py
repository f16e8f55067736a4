"""``Idempotency-Key`` on POSTs: same key and body replays the first answer; a different body
is 422; a request still in flight is 409. Keys are scoped per user and live 24 hours."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

from fastapi import Request
from fastapi.responses import JSONResponse, Response

from seojobs.api.problems import Problem
from seojobs.records import UserRecord
from seojobs.services import Services

MAX_KEY_LENGTH = 255
IN_FLIGHT_SECONDS = 120  # a request that died in flight stops blocking its key after this
HEADER = "Idempotency-Key"


def _key(request: Request) -> str | None:
    raw = request.headers.get(HEADER)
    if raw is None:
        return None
    key = raw.strip()
    # The draft sends a Structured-Field string ("..."); plain tokens are accepted too.
    if len(key) >= 2 and key[0] == key[-1] == '"':
        key = key[1:-1]
    if not key or len(key) > MAX_KEY_LENGTH or not key.isprintable():
        raise Problem(
            400,
            "Invalid Idempotency-Key",
            f"{HEADER} must be 1 to {MAX_KEY_LENGTH} printable characters",
            code="invalid_idempotency_key",
        )
    return key


def fingerprint(request: Request, payload: Any) -> str:
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(f"{request.method} {request.url.path}\n{canonical}".encode()).hexdigest()


def run(
    request: Request,
    svc: Services,
    user: UserRecord,
    payload: Any,
    produce: Callable[[str | None], JSONResponse],
) -> Response:
    """Answer a POST through the idempotency record of its key (if it has one).

    ``produce`` gets a job-level key derived from the header and the request: stored on the
    job (unique per project), it returns the same job even if this record was lost, e.g. the
    process died after creating the job but before saving the answer, and the in-flight
    record then went stale.
    """
    key = _key(request)
    if key is None:
        return produce(None)
    request_print = fingerprint(request, payload)
    job_key = hashlib.sha256(f"{key}\n{request_print}".encode()).hexdigest()
    outcome, stored = svc.idempotency.begin(user, key, request_print, IN_FLIGHT_SECONDS)
    if outcome == "mismatch":
        message = "this key was used with a different request; use a new key for a new request"
        raise Problem(
            422,
            "Idempotency-Key reused",
            code="idempotency_key_reused",
            errors=[{"field": "Idempotency-Key", "message": message}],
        )
    if outcome == "in_flight":
        raise Problem(
            409,
            "Request in progress",
            "a request with this Idempotency-Key is still being processed; retry shortly",
            code="idempotency_in_flight",
            headers={"Retry-After": "1"},
        )
    if outcome == "replay" and stored is not None:
        headers = {**stored.headers, "Idempotent-Replayed": "true"}
        return Response(
            stored.body,
            status_code=stored.status_code,
            headers=headers,
            media_type="application/json",
        )
    try:
        response = produce(job_key)
    except BaseException:
        svc.idempotency.abandon(user, key)
        raise
    kept = {k: v for k, v in response.headers.items() if k.lower() in ("location", "retry-after")}
    svc.idempotency.finish(user, key, response.status_code, bytes(response.body).decode(), kept)
    return response
