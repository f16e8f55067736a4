"""The wait machine and the poll policy: pure, with an injected clock, no sockets."""

from __future__ import annotations

import itertools
import logging
import random
from collections.abc import Iterable, Iterator
from dataclasses import replace

import httpx
import pytest

from seojobs.client import Client, PollPolicy, RateLimitedError, WaitTimeout
from seojobs.client._base import Outcome, wait_steps
from seojobs.client.models import CheckJob, Job, PollHint
from seojobs.client.policy import RetryPolicy

SEED_000 = [15.0, 22.5, 33.75, 50.625, 75.9375, 113.90625, 170.859375, 256.2890625, 300.0, 300.0]


class FakeTime:
    """A clock that only moves when something sleeps on it."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        assert seconds >= 0
        self.sleeps.append(seconds)
        self.now += seconds


def job(status: str, job_id: int = 7) -> Job:
    return CheckJob(job_id=job_id, status=status)


def unfinished() -> Outcome:
    return Outcome(job=job("processing"))


def limited(retry_after: float | None) -> Outcome:
    return Outcome(rate_limited=RateLimitedError(429, "Too many requests", retry_after=retry_after))


holds: list[float] = []  # the Prefer: wait of each poll of the last drive()


def drive(
    policy: PollPolicy,
    outcomes: Iterable[Outcome],
    *,
    poll_first: bool,
    rng: random.Random | None = None,
    long_polls: bool = False,
) -> tuple[Job | BaseException, list[float], list[float]]:
    """Run the machine on a fake clock: (result or the exception, sleeps, poll times). Seed
    000's schedule alone unless ``long_polls`` (then ``holds`` lists each Prefer: wait)."""
    time = FakeTime()
    answers: Iterator[Outcome] = iter(outcomes)
    if not long_polls:
        policy = replace(policy, first_long_polls=0)
    steps = wait_steps(policy, poll_first=poll_first, elapsed=time.clock, rng=rng)
    polls: list[float] = []
    holds.clear()
    outcome: Outcome | None = None
    try:
        while True:
            action, value = steps.send(outcome)
            outcome = None
            if action == "sleep":
                assert value is not None
                time.sleep(value)
            else:
                polls.append(time.now)
                holds.append(value)
                outcome = next(answers)
    except StopIteration as done:
        return done.value, time.sleeps, polls
    except WaitTimeout as exc:
        return exc, time.sleeps, polls


# -- long polls first (issue 27.6) ----------------------------------------------------------------


def held(status: str, honoured: bool = True) -> Outcome:
    return Outcome(job=job(status), honoured=honoured)


@pytest.mark.parametrize("poll_first", [False, True])
def test_a_job_that_ends_at_once_is_reported_by_the_first_long_poll(poll_first: bool) -> None:
    result, sleeps, polls = drive(
        PollPolicy(), [held("completed", honoured=False)], poll_first=poll_first, long_polls=True
    )
    assert isinstance(result, Job) and result.status == "completed"
    assert polls == [0.0] and holds == [20.0] and sleeps == []


def test_long_polls_go_on_while_honoured_one_a_second_then_seed_000s_schedule() -> None:
    outcomes = [*[held("processing")] * 10, unfinished(), unfinished(), held("completed", False)]
    result, sleeps, polls = drive(PollPolicy(), outcomes, poll_first=False, long_polls=True)
    assert isinstance(result, Job) and result.status == "completed"
    assert holds == [20.0] * 10 + [0.0] * 3
    assert polls[:10] == [float(i) for i in range(10)]  # one a second at most
    assert sleeps == [1.0] * 9 + SEED_000[:3]


def test_a_server_that_ignores_prefer_gets_one_long_poll_then_the_schedule() -> None:
    outcomes = [held("processing", honoured=False), unfinished(), held("completed", False)]
    result, _sleeps, polls = drive(PollPolicy(), outcomes, poll_first=False, long_polls=True)
    assert isinstance(result, Job) and result.status == "completed"
    assert holds == [20.0, 0.0, 0.0] and polls == [0.0, 15.0, 37.5]


def test_a_429_on_a_long_poll_falls_back_to_the_schedule_after_its_retry_after() -> None:
    outcomes = [limited(40), held("completed", honoured=False)]
    result, sleeps, _ = drive(PollPolicy(), outcomes, poll_first=False, long_polls=True)
    assert isinstance(result, Job) and result.status == "completed"
    assert holds == [20.0, 0.0] and sleeps == [40.0]


def test_long_polls_ask_no_longer_than_the_deadline_leaves() -> None:
    policy = PollPolicy(start=1, deadline=5.5)
    outcomes = [held("processing")] * 3 + [held("completed")]
    result, _, polls = drive(policy, outcomes, poll_first=False, long_polls=True)
    assert isinstance(result, Job) and holds == [5.0, 4.0, 3.0, 2.0] and polls == [0, 1, 2, 3]
    # Under a second left: no long poll at all, the schedule alone.
    result, _, _ = drive(
        PollPolicy(start=0.2, deadline=0.5), [unfinished(), held("completed")],
        poll_first=False, long_polls=True,
    )  # fmt: skip
    assert isinstance(result, Job) and holds == [0.0, 0.0]


# -- seed 000's schedule --------------------------------------------------------------------------


def test_after_submit_first_poll_at_15s_then_x1_5_capped_at_300() -> None:
    outcomes = [*[unfinished()] * 9, Outcome(job=job("completed"))]
    result, sleeps, polls = drive(PollPolicy(), outcomes, poll_first=False)
    assert isinstance(result, Job) and result.status == "completed"
    assert sleeps == SEED_000
    assert polls[0] == 15.0
    assert polls == list(itertools.accumulate(SEED_000))


def test_unknown_state_polls_at_once_then_the_same_schedule() -> None:
    outcomes = [*[unfinished()] * 4, Outcome(job=job("failed"))]
    result, sleeps, polls = drive(PollPolicy(), outcomes, poll_first=True)
    assert isinstance(result, Job) and result.status == "failed"  # failed is terminal too
    assert polls[0] == 0.0
    assert sleeps == SEED_000[:4]


def test_429_doubles_the_delay_and_never_undercuts_retry_after() -> None:
    outcomes = [
        limited(7),  # doubled 15 -> 30, above Retry-After
        limited(100),  # doubled 30 -> 60, but the server said 100
        unfinished(),  # x1.5 from 100
        limited(500),  # doubled 150 -> 300 (the ceiling); Retry-After wins, even past it
        limited(None),  # no Retry-After: doubled from 500, capped at 300
        Outcome(job=job("completed")),
    ]
    result, sleeps, _ = drive(PollPolicy(), outcomes, poll_first=False)
    assert isinstance(result, Job)
    assert sleeps == [15.0, 30.0, 100.0, 150.0, 500.0, 300.0]


def test_a_failed_poll_counts_as_unfinished() -> None:
    outcomes = [Outcome(transport=OSError("reset")), unfinished(), Outcome(job=job("completed"))]
    _, sleeps, _ = drive(PollPolicy(), outcomes, poll_first=False)
    assert sleeps == SEED_000[:3]


def test_deadline_is_never_slept_past_and_the_timeout_carries_the_last_state() -> None:
    result, sleeps, polls = drive(
        PollPolicy(), itertools.repeat(unfinished(), 2000), poll_first=False
    )
    assert isinstance(result, WaitTimeout)
    assert isinstance(result.last, Job) and result.last.status == "processing"
    assert sum(sleeps) == pytest.approx(86_400.0)
    assert max(polls) == pytest.approx(86_400.0)  # one last look at the deadline
    assert max(sleeps) == 300.0
    assert "processing" in str(result)


def test_timeout_before_any_answer_carries_none() -> None:
    policy = PollPolicy(start=10, deadline=25)
    result, sleeps, polls = drive(policy, itertools.repeat(limited(60), 100), poll_first=False)
    assert isinstance(result, WaitTimeout) and result.last is None
    # A Retry-After beyond the deadline ends the wait instead of sleeping past it.
    assert sleeps == [10.0] and polls == [10.0]


def test_long_poll_time_is_taken_off_the_next_sleep() -> None:
    held = [Outcome(job=job("processing"), held=20.0), Outcome(job=job("processing"), held=20.0)]
    outcomes = [*held, Outcome(job=job("completed"))]
    _, sleeps, _ = drive(PollPolicy(long_poll=20), outcomes, poll_first=True)
    assert sleeps == [0.0, 2.5]  # 15 - 20 -> 0, then 22.5 - 20


# -- jitter ---------------------------------------------------------------------------------------


def test_jitter_stays_within_its_bounds_and_does_vary() -> None:
    policy = PollPolicy(jitter=0.2)
    outcomes = [*[unfinished()] * 9, Outcome(job=job("completed"))]
    _, sleeps, _ = drive(policy, outcomes, poll_first=False, rng=random.Random(3))
    assert len(sleeps) == len(SEED_000)
    for slept, planned in zip(sleeps, SEED_000, strict=True):
        assert planned * 0.8 <= slept <= planned * 1.2
    assert sleeps != SEED_000  # the jitter is applied


def test_jitter_never_goes_below_retry_after() -> None:
    policy = PollPolicy(start=10, jitter=0.5, ceiling=20)
    for seed in range(50):
        outcomes = [limited(20), Outcome(job=job("completed"))]
        _, sleeps, _ = drive(policy, outcomes, poll_first=False, rng=random.Random(seed))
        assert sleeps[1] >= 20.0  # doubled to the ceiling (20) = Retry-After; jitter only adds


def test_jitter_never_crosses_the_deadline() -> None:
    policy = PollPolicy(start=40, jitter=0.5, deadline=100)
    for seed in range(50):
        result, sleeps, _ = drive(
            policy, itertools.repeat(unfinished(), 2000), poll_first=False, rng=random.Random(seed)
        )
        assert isinstance(result, WaitTimeout)
        assert sum(sleeps) <= 100.0 + 1e-9


def test_jittered_bounds() -> None:
    policy = PollPolicy(jitter=0.1)
    rng = random.Random(1)
    values = [policy.jittered(100.0, rng) for _ in range(1000)]
    assert 90.0 <= min(values) < 92.0 and 108.0 < max(values) <= 110.0
    assert all(policy.jittered(100.0, rng, floor=105.0) >= 105.0 for _ in range(100))
    assert PollPolicy().jittered(42.0) == 42.0


# -- a job type's poll hint (served by GET /v1/job-types) and validation ---------------------------


def hint(first: float, ceiling: float, deadline: float) -> PollHint:
    return PollHint(first_seconds=first, ceiling_seconds=ceiling, deadline_seconds=deadline)


def test_a_hint_of_one_interval_polls_at_that_interval_a_range_grows() -> None:
    outcomes = [*[unfinished()] * 3, Outcome(job=job("completed"))]
    _, sleeps, _ = drive(PollPolicy.from_hint(hint(10, 10, 3600)), outcomes, poll_first=False)
    assert sleeps == [10.0, 10.0, 10.0, 10.0]
    _, sleeps, _ = drive(PollPolicy.from_hint(hint(30, 60, 7200)), outcomes, poll_first=False)
    assert sleeps == [30.0, 45.0, 60.0, 60.0]


def test_no_hint_is_seed_000s_schedule_and_overrides_apply() -> None:
    assert PollPolicy.from_hint(None) == PollPolicy()
    assert PollPolicy.from_hint(hint(10, 10, 60), deadline=5) == PollPolicy(
        start=10, ceiling=10, factor=1.0, deadline=5
    )


def served(types: list[dict[str, object]]) -> httpx.Response:
    return httpx.Response(200, json={"data": types, "next_cursor": None})


HINT = {"first_seconds": 10, "ceiling_seconds": 10, "deadline_seconds": 3600}


@pytest.mark.parametrize(
    ("answers", "asked_again"),
    [
        # An older server: no /v1/job-types (404), or types without hints: asked once.
        ([httpx.Response(404, json={"title": "Not Found"})], False),
        ([served([{"name": "geo_lookup", "description": ""}])], False),
        # A passing failure: this wait falls back, the next one asks again.
        ([httpx.Response(503), served([{"name": "geo_lookup", "poll_hint": HINT}])], True),
    ],
)
def test_the_hints_are_read_once_and_without_them_the_default_applies(
    answers: list[httpx.Response], asked_again: bool
) -> None:
    asked: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        asked.append(request.url.path)
        return answers[min(len(asked), len(answers)) - 1]

    client = Client("http://api.test", "k", transport=httpx.MockTransport(handler), retries=0)
    with client:
        assert client.poll_policy("geo_lookup") == PollPolicy()
        again = client.poll_policy("geo_lookup")
    assert asked == ["/v1/job-types"] * (2 if asked_again else 1)
    assert again == (PollPolicy.from_hint(hint(10, 10, 3600)) if asked_again else PollPolicy())


def test_a_malformed_hint_leaves_that_type_to_the_default() -> None:
    bad = {"first_seconds": -1, "ceiling_seconds": 10, "deadline_seconds": 60}
    answer = served([{"name": "a", "poll_hint": bad}, {"name": "b", "poll_hint": HINT}])
    client = Client("http://api.test", "k", transport=httpx.MockTransport(lambda _r: answer))
    with client:
        assert client.poll_policy("a") == PollPolicy()
        assert client.poll_policy("b").start == 10


@pytest.mark.parametrize(
    "bad", [{"start": -1}, {"factor": 0.5}, {"jitter": 1.0}, {"rate_limit_factor": 0}]
)
def test_policy_rejects_nonsense(bad: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        PollPolicy(**bad)


def test_retry_policy_is_full_jitter_and_capped() -> None:
    policy = RetryPolicy(attempts=5, base=0.5, cap=4.0)
    rng = random.Random(2)
    for attempt in range(8):
        bound = min(4.0, 0.5 * 2**attempt)
        values = [policy.delay(attempt, rng) for _ in range(200)]
        assert min(values) >= 0 and max(values) <= bound
        assert max(values) > bound * 0.8  # spread over the whole range


# -- the machine inside a client: unknown statuses ------------------------------------------------


def test_unknown_status_is_unfinished_and_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    answers = iter(["queued", "queued", "paused", "queued", "completed"])

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"job_id": 7, "status": next(answers)})

    time = FakeTime()
    transport = httpx.MockTransport(handler)
    client = Client("http://api.test", "k", transport=transport, sleep=time.sleep, clock=time.clock)
    with caplog.at_level(logging.WARNING, logger="seojobs.client"), client:
        done = client.wait("index_check", 7, policy=PollPolicy(start=1, factor=1))
    assert done.status == "completed"
    assert time.sleeps == [1.0] * 4  # every unknown status was waited through
    messages = [r.getMessage() for r in caplog.records if r.name == "seojobs.client"]
    assert sum("'queued'" in m for m in messages) == 1
    assert sum("'paused'" in m for m in messages) == 1
