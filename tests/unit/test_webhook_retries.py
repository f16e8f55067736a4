"""What a failed webhook attempt leads to (issue 27.4): the retry schedule with its jitter, 410,
and an endpoint failing for longer than SEOJOBS_WEBHOOK_DISABLE_AFTER_SECONDS."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from seojobs.services.webhook_delivery import Dispatcher
from seojobs.settings import Settings
from seojobs.webhook_records import AttemptOutcome, DeliveryRecord, DueDelivery, EndpointRecord

NOW = datetime(2026, 12, 5, 12, 0, tzinfo=UTC)
SETTINGS = Settings(
    database_url="sqlite://",
    webhook_retry_schedule="10,100",
    webhook_disable_after_seconds=3600,
)
ENDPOINT = EndpointRecord(
    1, 1, None, None, "https://a.example/", "*", None, None, True, None,
    "whsec_AAAA", None, None, None, NOW, NOW,
)  # fmt: skip
DELIVERY = DeliveryRecord(
    1, 1, "job.completed", 7, "msg_1", "{}", "pending", 0, NOW, None, None, NOW, NOW
)
FAILED = AttemptOutcome(500, 3.0, "oops", None)


def _next(attempts: int, outcome: AttemptOutcome = FAILED, **endpoint: object) -> tuple:  # type: ignore[type-arg]
    due = DueDelivery(replace(DELIVERY, attempts=attempts), replace(ENDPOINT, **endpoint))
    return Dispatcher(None, SETTINGS)._next(due, outcome, NOW)  # type: ignore[arg-type]


def test_failures_follow_the_schedule_with_jitter_then_fail() -> None:
    state, at, endpoint = _next(0)
    assert state == "pending" and timedelta(seconds=9) <= at - NOW <= timedelta(seconds=11)
    assert endpoint == {"failing_since": NOW}  # the first failure starts the clock
    state, at, _ = _next(1, failing_since=NOW - timedelta(seconds=10))
    assert state == "pending" and timedelta(seconds=90) <= at - NOW <= timedelta(seconds=110)
    assert _next(2, failing_since=NOW - timedelta(seconds=120))[:2] == ("failed", None)


def test_success_clears_the_failures() -> None:
    ok = AttemptOutcome(204, 1.0, "", None)
    assert _next(1, ok, failing_since=NOW - timedelta(seconds=5)) == (
        "delivered",
        None,
        {"failing_since": None},
    )
    assert _next(0, ok) == ("delivered", None, None)


def test_410_disables_the_endpoint_at_once() -> None:
    state, at, endpoint = _next(0, AttemptOutcome(410, 1.0, "gone", None))
    assert (state, at) == ("failed", None)
    assert endpoint is not None and endpoint["enabled"] is False
    assert "410" in endpoint["disabled_reason"]


def test_an_endpoint_failing_past_the_limit_is_disabled_with_the_reason() -> None:
    since = NOW - timedelta(seconds=3601)
    timeout = AttemptOutcome(None, 15000.0, None, "timeout: no complete response within 15s")
    _state, _at, endpoint = _next(0, timeout, failing_since=since)
    assert endpoint is not None and endpoint["enabled"] is False
    assert "failed since 2026-12-05T10:59:59Z" in endpoint["disabled_reason"]
    assert "timeout" in endpoint["disabled_reason"]
    # Not yet past it: nothing changes on the endpoint.
    assert _next(0, timeout, failing_since=NOW - timedelta(seconds=60))[2] is None
