"""The limiter storage's circuit breaker: skip after a failure, one try after the cool-down,
and two log lines per outage whatever the traffic."""

from __future__ import annotations

import logging

import pytest

from seojobs.api.breaker import Breaker


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "seojobs.ratelimit"]


def test_a_failure_skips_the_storage_for_the_cooldown_then_one_request_tries() -> None:
    clock = Clock()
    breaker = Breaker(5.0, "open", clock)
    assert breaker.allow() and not breaker.down
    breaker.failed(ConnectionError("refused"))
    assert breaker.down and breaker.retry_in() == 5.0
    assert [breaker.allow() for _ in range(100)] == [False] * 100
    clock.now += 5.0
    assert breaker.retry_in() == 0.0
    assert breaker.allow() is True  # the one try
    assert [breaker.allow() for _ in range(10)] == [False] * 10  # the others skip meanwhile
    breaker.failed(TimeoutError())
    assert breaker.retry_in() == 5.0 and not breaker.allow()
    clock.now += 5.0
    assert breaker.allow() is True
    breaker.succeeded()
    assert not breaker.down and breaker.retry_in() == 0.0
    assert all(breaker.allow() for _ in range(10))


def test_a_cancelled_try_lets_the_next_request_try() -> None:
    clock = Clock()
    breaker = Breaker(1.0, "open", clock)
    breaker.failed(OSError("reset"))
    clock.now += 1.0
    assert breaker.allow() is True
    breaker.abandoned()
    assert breaker.allow() is True


@pytest.mark.parametrize(
    "errors",
    [
        [ConnectionError("Error 111 connecting to 127.0.0.1:1. Connection refused.")],
        [TimeoutError()] * 3,
        [OSError("reset"), TimeoutError(), ConnectionError("closed by server")],
    ],
)
def test_an_outage_is_logged_once_and_its_end_once(
    caplog: pytest.LogCaptureFixture, errors: list[Exception]
) -> None:
    caplog.set_level(logging.INFO, logger="seojobs.ratelimit")
    clock = Clock()
    breaker = Breaker(1.0, "closed", clock)
    for error in errors:  # concurrent requests failing together, then failed probes
        breaker.failed(error)
        for _ in range(50):
            breaker.allow()
        clock.now += 1.0
    assert len(_lines(caplog)) == 1
    first = caplog.records[0]
    assert first.levelno == logging.WARNING and first.exc_info is None
    assert type(errors[0]).__name__ in first.getMessage()
    assert "'closed' policy" in first.getMessage()
    assert breaker.allow()
    breaker.succeeded()
    breaker.succeeded()  # later successes say nothing
    lines = _lines(caplog)
    assert len(lines) == 2 and "answers again" in lines[1]
    assert f"{50 * len(errors)} requests had the 'closed' policy" in lines[1]
    breaker.failed(TimeoutError())  # a new outage is a new line
    assert len(_lines(caplog)) == 3
