"""Polling benchmark; what it measures and its targets: docs/bench/poll.md."""

from __future__ import annotations

import os
import sys

sys.path[0] = os.path.dirname(sys.path[0])  # the repo, not bench/ (queue.py)

import bisect
import heapq
import json
import math
import random
import statistics
from collections import deque
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

import httpx

from bench.lib import core
from bench.lib.core import Target
from bench.lib.report import Report
from seojobs.client import Client
from seojobs.client.models import Job, ProjectJob
from seojobs.client.scheduler import Scheduler

TERMINAL = frozenset({"completed", "failed"})


class SimClock:
    """The simulated clock; ``sleep`` advances it."""

    def __init__(self) -> None:
        self.now = 0.0

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += max(0.0, seconds)


@dataclass(frozen=True)
class Answer:
    status: int  # 200 or 429
    headers: dict[str, str]
    body: Any


class Limiter:
    """A moving window of accepted requests (what ``limits``' MovingWindowRateLimiter does)."""

    def __init__(self, limit: int, window: float) -> None:
        self.limit = limit
        self.window = window
        self.accepted: deque[float] = deque()

    def hit(self, now: float) -> tuple[bool, dict[str, str]]:
        while self.accepted and self.accepted[0] <= now - self.window:
            self.accepted.popleft()
        allowed = len(self.accepted) < self.limit
        if allowed:
            self.accepted.append(now)
        oldest = self.accepted[0] if self.accepted else now
        reset = max(0, math.ceil(oldest + self.window - now))
        remaining = self.limit - len(self.accepted)
        headers = {
            "RateLimit-Policy": f'"user";q={self.limit};w={int(self.window)}',
            "RateLimit": f'"user";r={remaining};t={reset}',
        }
        if not allowed:
            headers["Retry-After"] = str(max(1, reset))
        return allowed, headers


@dataclass
class World:
    """Jobs created at t=0, each finishing at its own time; the API over them."""

    finish: dict[int, float]
    limiter: Limiter | None
    requests: list[float] = field(default_factory=list)  # every request's time, 429s included
    refused: int = 0

    @classmethod
    def make(cls, jobs: int, span: float, seed: int, limit: int | None, window: float) -> World:
        rng = random.Random(seed)
        finish = {job_id: rng.uniform(0.0, span) for job_id in range(1, jobs + 1)}
        return cls(finish, Limiter(limit, window) if limit else None)

    # -- the API ------------------------------------------------------------------------

    def job_body(self, job_id: int, now: float) -> dict[str, Any]:
        done = now >= self.finish[job_id]
        progress = 100 if done else int(100 * now / self.finish[job_id])
        return {
            "job_id": job_id,
            "status": "completed" if done else "processing",
            "title": None,
            "total_urls": 1,
            "checked_urls": 1 if done else 0,
            "indexed_count": 1 if done else 0,
            "not_indexed_count": 0,
            "failed_count": 0,
            "progress_percent": progress,
            "created_at": "2026-01-01T00:00:00+00:00",
            "completed_at": None,
            "error": None,
        }

    def _admit(self, now: float) -> tuple[bool, dict[str, str]]:
        self.requests.append(now)
        if self.limiter is None:
            return True, {}
        allowed, headers = self.limiter.hit(now)
        if not allowed:
            self.refused += 1
        return allowed, headers

    def status(self, job_id: int, now: float) -> Answer:
        allowed, headers = self._admit(now)
        if not allowed:
            return Answer(429, headers, _problem(headers))
        if not self.is_done(job_id, now):
            headers = {**headers, "Retry-After": "10"}  # what the server sends while processing
        return Answer(200, headers, self.job_body(job_id, now))

    def listing(self, ids: list[int], now: float) -> Answer:
        allowed, headers = self._admit(now)
        if not allowed:
            return Answer(429, headers, _problem(headers))
        jobs = [self.job_body(i, now) for i in sorted(ids, reverse=True) if i in self.finish]
        return Answer(200, headers, {"jobs": jobs, "next_cursor": None})

    def is_done(self, job_id: int, now: float) -> bool:
        return now >= self.finish[job_id]

    def handler(self, clock: SimClock) -> Callable[[httpx.Request], httpx.Response]:
        """The same API over HTTP, for the real client (httpx.MockTransport)."""

        def handle(request: httpx.Request) -> httpx.Response:
            parts = request.url.path.rstrip("/").split("/")
            if parts[-1] == "jobs":
                query = parse_qs(request.url.query.decode())
                ids = [int(i) for i in query["ids"][0].split(",")] if "ids" in query else []
                answer = self.listing(ids, clock.now)
            else:
                answer = self.status(int(parts[-1]), clock.now)
            media = "application/problem+json" if answer.status >= 400 else "application/json"
            return httpx.Response(
                answer.status,
                content=json.dumps(answer.body).encode(),
                headers={**answer.headers, "Content-Type": media},
            )

        return handle


def _problem(headers: dict[str, str]) -> dict[str, Any]:
    return {
        "type": "https://seojobs.dev/problems/rate_limited",
        "title": "Too many requests",
        "status": 429,
        "detail": f"retry in {headers.get('Retry-After')} s",
        "violated_policies": ["user"],
    }


# -- seed 000's poller, one loop per job ------------------------------------------------------


def seed000(
    world: World,
    *,
    start: int = 15,
    ceiling: int = 300,
    deadline: int = 86_400,
    grow_first: bool = True,
) -> tuple[dict[int, float], int]:
    """Seed 000's ``wait_for`` for every job at once, as simulated coroutines (the loop, and
    the ``grow_first=False`` variant: docs/bench/poll.md); when each job became known as
    finished, and how many loops timed out."""
    known: dict[int, float] = {}
    timed_out = 0
    # (time, job id, delay, waited); the job id breaks ties deterministically.
    events: list[tuple[float, int, int, int]] = [(0.0, j, start, 0) for j in world.finish]
    heapq.heapify(events)
    while events:
        now, job_id, delay, waited = heapq.heappop(events)
        answer = world.status(job_id, now)
        if answer.status == 429:
            delay = min(delay * 2, ceiling)
            sleep = delay
        elif answer.body["status"] in TERMINAL:
            known[job_id] = now
            continue
        elif grow_first:
            delay = min(int(delay * 1.5), ceiling)
            sleep = delay
        else:
            sleep, delay = delay, min(int(delay * 1.5), ceiling)
        waited += sleep
        if waited >= deadline:
            timed_out += 1
            continue
        heapq.heappush(events, (now + sleep, job_id, delay, waited))
    return known, timed_out


# -- figures ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Figures:
    name: str
    jobs: int
    requests: int
    refused: int
    median_delay: float
    p90_delay: float
    busiest_minute: int
    last_known: float
    unknown: int  # jobs never seen finished (timed out)

    @property
    def per_job(self) -> float:
        return self.requests / self.jobs


def figures(name: str, world: World, known: dict[int, float]) -> Figures:
    delays = sorted(known[j] - world.finish[j] for j in known)
    return Figures(
        name=name,
        jobs=len(world.finish),
        requests=len(world.requests),
        refused=world.refused,
        median_delay=statistics.median(delays) if delays else math.inf,
        p90_delay=_quantile(delays, 0.9),
        busiest_minute=busiest(world.requests, 60.0),
        last_known=max(known.values(), default=math.inf),
        unknown=len(world.finish) - len(known),
    )


def _quantile(values: list[float], q: float) -> float:
    if not values:
        return math.inf
    return statistics.quantiles(values, n=100, method="inclusive")[round(q * 100) - 1]


def busiest(times: list[float], window: float) -> int:
    """The most requests in any ``window`` seconds [t, t + window)."""
    ordered = sorted(times)
    return max(
        (bisect.bisect_left(ordered, t + window) - i for i, t in enumerate(ordered)), default=0
    )


LIMIT, WINDOW = 120, 60.0
TARGET_SHARE = 0.05  # at most 5 % of seed 000's requests
TARGET_MEDIAN = 15.0  # seconds


def run_ours(world: World) -> tuple[dict[int, float], Scheduler]:
    """Our Scheduler with its defaults, over the real Client, on the simulated clock."""
    sim = SimClock()
    client = Client(
        "http://sim.invalid",
        "bench-key",
        transport=httpx.MockTransport(world.handler(sim)),
        sleep=sim.sleep,
        clock=sim.clock,
    )
    known: dict[int, float] = {}

    def done(job: Job | ProjectJob) -> None:
        known.setdefault(job.job_id, sim.now)

    with client:
        scheduler = Scheduler(client, on_done=done)
        for job_id in world.finish:
            scheduler.add("index_check", job_id)
        scheduler.run()
    return known, scheduler


def targets(runs: list[Figures]) -> list[Target]:
    if len(runs) < 4:
        return []
    reference, ours = runs[0], runs[3]
    allowed = TARGET_SHARE * reference.requests
    return [
        (
            f"requests <= {TARGET_SHARE:.0%} of seed 000's",
            f"{ours.requests} vs {allowed:.0f}",
            ours.requests <= allowed,
        ),
        ("no 429s", str(ours.refused), ours.refused == 0),
        (
            f"median detection delay <= {TARGET_MEDIAN:.0f} s",
            f"{ours.median_delay:.1f} s",
            ours.median_delay <= TARGET_MEDIAN,
        ),
        ("every job seen finished", f"{ours.jobs - ours.unknown}/{ours.jobs}", not ours.unknown),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = core.parser("bench/poll.py", __doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--span", type=float, default=600.0, help="finish times: U(0, span) s")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    results: Report[Figures] = Report(
        f"bench/poll.py: {args.jobs:,} jobs created at t=0, finishing at U(0, {args.span:.0f}) s "
        f"(seed {args.seed}); limit {LIMIT} requests per {WINDOW:.0f} s (moving window)",
        [
            ("poller", lambda f: f.name),
            ("requests", lambda f: f"{f.requests:,}"),
            ("req/job", lambda f: f"{f.per_job:.2f}"),
            ("429s", lambda f: f"{f.refused:,}"),
            ("busiest minute", lambda f: f"{f.busiest_minute:,}"),
            ("median delay s", lambda f: f"{f.median_delay:.1f}"),
            ("p90 delay s", lambda f: f"{f.p90_delay:.1f}"),
            ("all known at s", lambda f: f"{f.last_known:.0f}"),
            ("missed", lambda f: str(f.unknown)),
        ],
        targets,
        environment=["simulated, no network"],
    )

    def world(limited: bool) -> World:
        return World.make(args.jobs, args.span, args.seed, LIMIT if limited else None, WINDOW)

    def body(_stack: ExitStack) -> None:
        for name, limited, grow_first in (
            ("seed 000 poller, unlimited server", False, True),
            ("  variant: sleep 15 s before growing", False, False),
            ("seed 000 poller, 120/min limit", True, True),
        ):
            sim = world(limited)
            known, timed_out = seed000(sim, grow_first=grow_first)
            results.add(figures(name, sim, known))
        ours = world(True)
        known, scheduler = run_ours(ours)
        results.add(figures("our Scheduler, 120/min limit", ours, known))
        stats, (reference, _variant, limited_run, mine) = scheduler.stats, results.runs
        results.notes = [
            f"our Scheduler: {stats.requests} batched reads in {stats.rounds} rounds, "
            f"{stats.rate_limited} 429s, period {scheduler.min_period:.0f}-"
            f"{scheduler.max_period:.0f} s, share {scheduler.initial_share:.0%} of the budget",
            f"ours / seed 000 requests: {mine.requests / reference.requests:.1%} of the unlimited "
            f"reference, {mine.requests / limited_run.requests:.1%} of the rate-limited run",
        ]
        if timed_out:  # after the Scheduler's line, as before
            results.notes.insert(
                1, f"seed 000 under the limit: {timed_out} loops hit their 24 h deadline"
            )

    return results.main(body, "nothing to clean up")


if __name__ == "__main__":
    raise SystemExit(main())
