"""Several wait machines on one timer (``_waits.wait_many``): pure, on a fake clock."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from dataclasses import replace

import pytest

from seojobs.client import PollPolicy, ProjectJob, RateLimitedError, WaitTimeout
from seojobs.client._base import Outcome, wait_steps
from seojobs.client._waits import Machine, wait_many
from tests.unit.test_client_wait import SEED_000, FakeTime

Answers = Callable[[int], Outcome[ProjectJob]]


def pj(job_id: int, status: str) -> ProjectJob:
    return ProjectJob(id=job_id, type="test_noop", status=status)


def after(n: int, job_id: int, status: str = "completed") -> Iterator[Outcome[ProjectJob]]:
    """``n`` unfinished answers, then the job ``status``."""
    return itertools.chain(
        itertools.repeat(Outcome(job=pj(job_id, "processing")), n),
        [Outcome(job=pj(job_id, status))],
    )


def run(
    entries: list[Machine[ProjectJob] | ProjectJob],
    answers: dict[int, Iterator[Outcome[ProjectJob]]],
    time: FakeTime,
) -> tuple[list[ProjectJob] | WaitTimeout, list[tuple[float, int]]]:
    """Drive the multiplexer; (result or the timeout, [(time, job index) of each poll])."""
    steps = wait_many(entries, elapsed=time.clock)
    polls: list[tuple[float, int]] = []
    outcome: Outcome[ProjectJob] | None = None
    try:
        while True:
            step = steps.send(outcome)
            outcome = None
            if step[0] == "sleep":
                time.sleep(step[1])
            else:
                _, index, _hold = step
                polls.append((time.now, index))
                outcome = next(answers[index])
    except StopIteration as done:
        return done.value, polls
    except WaitTimeout as exc:
        return exc, polls


def machine(policy: PollPolicy, time: FakeTime, **options: float) -> Machine[ProjectJob]:
    """A job's machine on seed 000's schedule (several jobs are never long-polled first)."""
    policy = replace(policy, first_long_polls=0)
    return wait_steps(policy, poll_first=False, elapsed=time.clock, **options)  # type: ignore[arg-type]


def times_of(polls: list[tuple[float, int]], index: int) -> list[float]:
    return [t for t, i in polls if i == index]


def test_one_job_polls_exactly_as_the_single_machine() -> None:
    time = FakeTime()
    result, polls = run([machine(PollPolicy(), time)], {0: after(9, 1)}, time)
    assert isinstance(result, list) and [j.status for j in result] == ["completed"]
    assert times_of(polls, 0) == list(itertools.accumulate(SEED_000))


def test_each_job_keeps_its_own_schedule_on_the_shared_timer() -> None:
    time = FakeTime()
    slow = PollPolicy(start=30, factor=1.0, ceiling=30, deadline=3600)  # rank_check's
    fast = PollPolicy(start=10, factor=1.0, ceiling=10, deadline=3600)  # ai_search's
    growing = PollPolicy(start=15, factor=1.5, ceiling=300, deadline=86_400)  # seed 000's
    entries: list[Machine[ProjectJob] | ProjectJob] = [
        machine(slow, time),
        machine(fast, time),
        machine(growing, time),
    ]
    result, polls = run(entries, {0: after(3, 1), 1: after(5, 2), 2: after(2, 3)}, time)
    assert isinstance(result, list) and [j.id for j in result] == [1, 2, 3]
    assert times_of(polls, 0) == [30, 60, 90, 120]
    assert times_of(polls, 1) == [10, 20, 30, 40, 50, 60]
    assert times_of(polls, 2) == [15, 37.5, 71.25]
    # One request at a time, in time order (ties: the earlier job first).
    assert polls == sorted(polls)


def test_a_429_on_one_job_holds_only_that_job() -> None:
    time = FakeTime()
    policy = PollPolicy(start=10, factor=1.0, ceiling=10, deadline=3600)
    limited = Outcome[ProjectJob](rate_limited=RateLimitedError(429, "Too many", retry_after=45))
    answers = {
        0: itertools.chain([limited], after(0, 1)),
        1: after(6, 2),
    }
    result, polls = run([machine(policy, time), machine(policy, time)], answers, time)
    assert isinstance(result, list)
    assert times_of(polls, 0) == [10, 55]  # never sooner than its Retry-After
    assert times_of(polls, 1) == [10, 20, 30, 40, 50, 60, 70]


def test_finished_jobs_are_returned_without_a_poll_and_the_first_floor_holds() -> None:
    time = FakeTime()
    done = pj(5, "failed")
    policy = PollPolicy(start=1, factor=2, ceiling=60, deadline=600)
    entries: list[Machine[ProjectJob] | ProjectJob] = [
        done,
        machine(policy, time, first_floor=5.0),
    ]
    result, polls = run(entries, {1: after(2, 6)}, time)
    assert isinstance(result, list) and result[0] is done and result[1].status == "completed"
    assert times_of(polls, 1) == [5, 7, 11]  # the 202's Retry-After, then 2, 4
    assert all(i == 1 for _, i in polls)


def test_the_first_deadline_ends_the_wait_with_every_last_state() -> None:
    time = FakeTime()
    short = PollPolicy(start=10, factor=1.0, ceiling=10, deadline=35)
    entries: list[Machine[ProjectJob] | ProjectJob] = [
        pj(1, "completed"),
        machine(short, time),
        machine(short, time),
        machine(short, time),
    ]
    answers = {
        1: after(1, 2, "failed"),
        2: itertools.repeat(Outcome(job=pj(3, "processing"))),
        3: itertools.repeat(Outcome[ProjectJob](transport=OSError("reset"))),
    }
    result, polls = run(entries, answers, time)
    assert isinstance(result, WaitTimeout)
    assert isinstance(result.last, list)
    assert [(j.id, j.status) if j else None for j in result.last] == [
        (1, "completed"),
        (2, "failed"),
        (3, "processing"),
        None,  # never answered
    ]
    assert "2 of 4 jobs not finished" in str(result)
    assert max(t for t, _ in polls) <= 35 and time.now <= 35


def test_one_job_timing_out_raises_its_own_timeout() -> None:
    time = FakeTime()
    policy = PollPolicy(start=10, factor=1.0, ceiling=10, deadline=25)
    result, _ = run(
        [machine(policy, time)], {0: itertools.repeat(Outcome(job=pj(9, "pending")))}, time
    )
    assert isinstance(result, WaitTimeout)
    assert isinstance(result.last, ProjectJob) and result.last.status == "pending"


@pytest.mark.parametrize("statuses", [["completed"], ["failed", "completed"], []])
def test_only_finished_jobs_make_no_poll_and_no_sleep(statuses: list[str]) -> None:
    time = FakeTime()
    jobs: list[Machine[ProjectJob] | ProjectJob] = [
        pj(i, s) for i, s in enumerate(statuses, start=1)
    ]
    result, polls = run(jobs, {}, time)
    assert result == jobs and polls == [] and time.sleeps == []
