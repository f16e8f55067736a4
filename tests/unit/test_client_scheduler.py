"""The Scheduler's timer, budget and follow-ups against an in-memory API (no sockets), on an
injected clock."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import parse_qs

import httpx
import pytest

from seojobs.client import Client, WaitTimeout
from seojobs.client.models import Job
from seojobs.client.scheduler import Scheduler, wait_all
from tests.unit.test_client_wait import FakeTime

EPOCH = datetime(2026, 3, 1, tzinfo=UTC)


@dataclass
class FakeJob:
    kind: str
    finish_at: float
    extra: dict[str, Any] = field(default_factory=dict)


class FakeApi:
    """The v1 list endpoint (``ids=``) over jobs that finish at set times on ``time``.

    ``limit``/``window``: a moving-window limiter answering 429 with Retry-After, announcing
    its policy and what is left on every answer.
    """

    def __init__(self, time: FakeTime, *, limit: int = 120, window: float = 60.0) -> None:
        self.time = time
        self.limit = limit
        self.window = window
        self.jobs: dict[int, FakeJob] = {}
        self.arrivals: list[float] = []
        self.refused = 0
        self.ids_per_request: list[int] = []
        self.hook: Callable[[int, FakeJob], dict[str, Any]] | None = None

    def body(self, job_id: int) -> dict[str, Any]:
        job = self.jobs[job_id]
        done = self.time.now >= job.finish_at
        body = {
            "job_id": job_id,
            "status": "completed" if done else "processing",
            "progress_percent": 100 if done else 0,
        }
        body |= job.extra
        if self.hook is not None:
            body |= self.hook(job_id, job)
        return body

    def __call__(self, request: httpx.Request) -> httpx.Response:
        now = self.time.now
        accepted = [t for t in self.arrivals if t > now - self.window]
        headers = {"RateLimit-Policy": f'"user";q={self.limit};w={int(self.window)}'}
        if len(accepted) >= self.limit:
            self.refused += 1
            wait = max(1, math.ceil(accepted[0] + self.window - now))
            headers |= {"Retry-After": str(wait), "RateLimit": f'"user";r=0;t={wait}'}
            return httpx.Response(429, json={"title": "Too many", "status": 429}, headers=headers)
        self.arrivals.append(now)
        left = self.limit - len(accepted) - 1
        reset = math.ceil((accepted[0] if accepted else now) + self.window - now)
        headers["RateLimit"] = f'"user";r={left};t={reset}'
        kind = "index_submit" if "index-submit" in request.url.path else "index_check"
        ids = [int(i) for i in parse_qs(request.url.query.decode())["ids"][0].split(",")]
        self.ids_per_request.append(len(ids))
        found = [self.body(i) for i in ids if i in self.jobs and self.jobs[i].kind == kind]
        return httpx.Response(200, json={"jobs": found, "next_cursor": None}, headers=headers)


def client_for(api: FakeApi, time: FakeTime) -> Client:
    return Client(
        "http://api.test",
        "key",
        transport=httpx.MockTransport(api),
        sleep=time.sleep,
        clock=time.clock,
    )


def busiest(arrivals: list[float], window: float) -> int:
    return max((sum(1 for t in arrivals if s <= t < s + window) for s in arrivals), default=0)


def test_batched_reads_finish_every_job_and_report_each_once() -> None:
    time = FakeTime()
    api = FakeApi(time)
    for i in range(1, 2501):
        api.jobs[i] = FakeJob("index_check", finish_at=(i % 50) * 4.0)
    for i in range(3001, 3011):
        api.jobs[i] = FakeJob("index_submit", finish_at=30.0)
    done: list[tuple[str, int, float]] = []
    with client_for(api, time) as client:
        scheduler = Scheduler(
            client, min_period=5, on_done=lambda j: done.append((j.kind, j.job_id, time.now))
        )
        for job_id, job in api.jobs.items():
            scheduler.add(job.kind, job_id)
        result = scheduler.run()
    assert len(result) == len(done) == 2510
    assert len({(k, i) for k, i, _ in done}) == 2510
    assert max(api.ids_per_request) == 1000  # three requests cover 2,500 checks
    assert scheduler.stats.requests == len(api.arrivals)
    assert scheduler.stats.rate_limited == 0 and api.refused == 0
    # Nobody learns of a finished job much later than one round of reads (4 chunks, 5 s).
    late = [t - api.jobs[i].finish_at for _, i, t in done]
    assert max(late) <= 5.0 + 1e-9


def test_reads_of_a_round_are_staggered_not_burst() -> None:
    time = FakeTime()
    api = FakeApi(time)
    for i in range(1, 3001):
        api.jobs[i] = FakeJob("index_check", finish_at=1e9)
    with client_for(api, time) as client:
        scheduler = Scheduler(client, min_period=30, max_period=30)
        for i in api.jobs:
            scheduler.add("index_check", i)
        with pytest.raises(WaitTimeout):
            scheduler.run(timeout=300)
    gaps = [b - a for a, b in zip(api.arrivals, api.arrivals[1:], strict=False)]
    assert gaps and min(gaps) >= 10.0 - 1e-9  # 3 chunks per 30 s round, 10 s apart


def test_budget_share_holds_even_with_a_tiny_period() -> None:
    time = FakeTime()
    api = FakeApi(time)
    for i in range(1, 1201):
        api.jobs[i] = FakeJob("index_check", finish_at=i * 0.15)  # something moves every round
    with client_for(api, time) as client:
        scheduler = Scheduler(client, min_period=0.01, share=0.5)
        for i in api.jobs:
            scheduler.add("index_check", i)
        scheduler.run()
    assert api.refused == 0 and scheduler.stats.rate_limited == 0
    assert busiest(api.arrivals, 60.0) <= 60  # half of 120/minute


def test_what_is_left_of_the_budget_slows_the_timer() -> None:
    time = FakeTime()
    api = FakeApi(time)
    api.arrivals = [0.0] * 100  # another process spent 100 of the 120 just now
    time.now = 0.5
    for i in range(1, 11):
        api.jobs[i] = FakeJob("index_check", finish_at=1e9)
    with client_for(api, time) as client:
        scheduler = Scheduler(client, min_period=0.5, share=0.5)
        for i in api.jobs:
            scheduler.add("index_check", i)
        with pytest.raises(WaitTimeout):
            scheduler.run(timeout=120)
    assert api.refused == 0
    ours = api.arrivals[100:]
    early = [t for t in ours if t < 60.0]
    assert len(early) <= 10  # share 0.5 of the 20 left within the minute
    assert len(ours) > len(early)  # and it picks up once the window frees


def test_429_pauses_for_retry_after_and_halves_the_share() -> None:
    time = FakeTime()
    api = FakeApi(time, limit=2, window=60)
    api.arrivals = [0.0, 0.0]
    for i in range(1, 4):
        api.jobs[i] = FakeJob("index_check", finish_at=70.0)
    with client_for(api, time) as client:
        client.pace = False  # let the 429 through to the scheduler
        scheduler = Scheduler(client, min_period=1)
        for i in api.jobs:
            scheduler.add("index_check", i)
        first = scheduler.tick()
        assert scheduler.stats.rate_limited == 1 and api.refused == 1
        assert first >= 60.0  # Retry-After of the 429
        assert scheduler.share == 0.25
        scheduler.run()
    assert len(scheduler.done) == 3


def test_quiet_rounds_stretch_the_period_and_a_change_resets_it() -> None:
    time = FakeTime()
    api = FakeApi(time)
    api.jobs[1] = FakeJob("index_check", finish_at=1e9)
    api.jobs[2] = FakeJob("index_check", finish_at=1e9)
    with client_for(api, time) as client:
        scheduler = Scheduler(client, min_period=4, max_period=20)
        scheduler.add("index_check", 1)
        scheduler.add("index_check", 2)
        waits = [scheduler.tick() for _ in range(6)]
        api.jobs[2].finish_at = 0.0
        waits.append(scheduler.tick())
        waits.append(scheduler.tick())
    assert waits[:6] == [4.0, 6.0, 9.0, 13.5, 20.0, 20.0]
    assert waits[6:] == [4.0, 6.0]
    assert scheduler.stats.rounds == 8


def test_a_submission_follows_its_scheduled_check_without_polling_before_it_is_due() -> None:
    time = FakeTime()
    api = FakeApi(time)
    check_at = 3 * 86_400.0
    api.jobs[1] = FakeJob("index_submit", finish_at=20.0)
    api.jobs[2] = FakeJob("index_check", finish_at=check_at + 60.0)

    def follow_up(job_id: int, job: FakeJob) -> dict[str, Any]:
        if job_id != 1:
            return {}
        now = time.now
        state = "pending" if now < check_at else "processing"
        if now >= check_at + 60.0:
            state = "completed"
        due = EPOCH + timedelta(seconds=check_at)
        return {
            "scheduled_check_days": 3,
            "scheduled_check_status": state,
            "scheduled_check_at": due.isoformat(),
            "scheduled_check_run_id": None if state == "pending" else 2,
        }

    api.hook = follow_up
    done: list[tuple[str, int, float]] = []
    with client_for(api, time) as client:
        scheduler = Scheduler(
            client,
            min_period=5,
            max_period=60,
            on_done=lambda j: done.append((j.kind, j.job_id, time.now)),
            wall=lambda: EPOCH + timedelta(seconds=time.now),
        )
        scheduler.add("index_submit", 1)
        scheduler.run()
    assert [(k, i) for k, i, _ in done] == [("index_submit", 1), ("index_check", 2)]
    assert done[0][2] >= check_at + 60.0
    # Three days of waiting cost a handful of reads, none between the submission finishing
    # and the check being due.
    assert not [t for t in api.arrivals if 25.0 < t < check_at]
    assert len(api.arrivals) < 40


def test_unknown_ids_are_dropped_by_the_timer_and_kept_by_poll_once() -> None:
    time = FakeTime()
    api = FakeApi(time)
    api.jobs[1] = FakeJob("index_check", finish_at=10.0)
    with client_for(api, time) as client:
        scheduler = Scheduler(client, min_period=5)
        scheduler.add("index_check", 1)
        scheduler.add("index_check", 99)
        scheduler.poll_once()
        assert ("index_check", 99) in scheduler.open
        assert scheduler.open[("index_check", 99)].last is None
        assert scheduler.missing == {("index_check", 99)}
        done = scheduler.run()
    assert list(done) == [("index_check", 1)]
    assert scheduler.stats.missing == 1


def test_wait_all_convenience() -> None:
    time = FakeTime()
    api = FakeApi(time)
    api.jobs[1] = FakeJob("index_check", finish_at=12.0)
    api.jobs[2] = FakeJob("index_submit", finish_at=3.0)
    with client_for(api, time) as client:
        done = wait_all(client, [("check", 1), ("index-submit", 2)], min_period=2)
    assert {k: j.status for k, j in done.items()} == {
        ("index_check", 1): "completed",
        ("index_submit", 2): "completed",
    }
    assert all(isinstance(j, Job) for j in done.values())


def test_bad_settings_are_refused() -> None:
    client = Client("http://api.test", "k")
    with pytest.raises(ValueError):
        Scheduler(client, share=0)
    with pytest.raises(ValueError):
        Scheduler(client, min_period=10, max_period=5)
    client.close()
