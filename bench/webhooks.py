"""Webhook delivery benchmark; what it measures and its targets: docs/bench/webhooks.md."""

from __future__ import annotations

import os
import sys

sys.path[0] = os.path.dirname(sys.path[0])  # the repo, not bench/ (queue.py)

import asyncio
import json
import statistics
import threading
import time
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import UTC
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import select
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from bench.lib import core, ours
from bench.lib.core import Server
from bench.lib.ours import (
    BURN_KIND,
    EXECUTOR_THREADS,
    Counter,
    create_user,
    insert_jobs,
    registry,
    running,
    warm,
)
from bench.lib.report import Report
from seojobs.engine.worker import Worker, freeze_startup
from seojobs.kinds import load_registry
from seojobs.services import Services
from seojobs.settings import Settings
from seojobs.store.db import Database
from seojobs.store.tables import jobs as jobs_table

TARGET_P99 = 1.0  # seconds from a job's completion to its delivery (issue 27), steady rate
STEADY_SHARE = 0.5  # the steady rate, by default: this share of the burst's drain rate
FEED_TICK = 0.02  # seconds between the steady feeder's inserts
STORES = ("sqlite", "postgresql")
HOOK = "/hook"
COUNT_POLL = 0.2  # seconds between asking the receiver how many it has


# -- the receiver: its own process, so its work does not share the worker's event loop -------

SEEN: list[tuple[float, str, int]] = []  # (arrival, epoch seconds; webhook-id; job id)


def receiver() -> Starlette:
    """``uvicorn --factory bench.webhooks:receiver``: records every delivery, answers 204."""

    async def hook(request: Request) -> Response:
        arrived = time.time()
        body = json.loads(await request.body())
        SEEN.append((arrived, request.headers["webhook-id"], int(body["data"]["id"])))
        return Response(status_code=204)

    async def count(_request: Request) -> Response:
        return PlainTextResponse(str(len(SEEN)))

    async def seen(_request: Request) -> Response:
        return JSONResponse(SEEN)

    return Starlette(
        routes=[Route(HOOK, hook, methods=["POST"]), Route("/count", count), Route("/seen", seen)]
    )


# -- one run ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Run:
    store: str
    mode: str  # "burst" (all at once: reported) or "steady" (fed at ``rate``: judged)
    rate: float | None  # completions a second fed (steady)
    jobs: int
    delivered: int  # distinct jobs delivered
    duplicates: int  # deliveries beyond one per webhook-id
    seconds: float  # first completion to last delivery
    delays: list[float]  # per job: completion to its first delivery
    completing: float  # first completion to last completion (how tight the burst was)
    cpu: float  # of this process (worker, dispatcher; not the feeder): docs/bench/webhooks.md

    @property
    def cpu_ms(self) -> float:
        return self.cpu * 1000 / self.delivered if self.delivered else float("nan")

    @property
    def per_second(self) -> float:
        return self.delivered / self.seconds if self.seconds > 0 else float("nan")

    def quantile(self, q: float) -> float:
        if len(self.delays) < 2:
            return self.delays[0] if self.delays else float("nan")
        return statistics.quantiles(self.delays, n=1000, method="inclusive")[int(q * 1000) - 1]


def settings_for(url: str) -> Settings:
    # Loopback is the receiver's address: the deployment allows private networks.
    return Settings(database_url=url, allow_private_networks=True, lease_seconds=30.0)


class Feeder(threading.Thread):
    """Inserts ``jobs`` due jobs at ``rate`` a second, a few every ``FEED_TICK``, through a
    handle on the database of its own (the worker is woken as by another process); counts
    its own CPU seconds, which the run's leave out."""

    def __init__(self, url: str, project_id: int, jobs: int, rate: float) -> None:
        super().__init__(name="bench-feeder", daemon=True)
        self.url, self.project_id, self.jobs, self.rate = url, project_id, jobs, rate
        self.cpu = 0.0
        self.stop = threading.Event()

    def run(self) -> None:
        db = Database(self.url)
        started, fed = time.monotonic(), 0
        cpu = time.thread_time()
        try:
            while fed < self.jobs and not self.stop.is_set():
                due = min(self.jobs, int((time.monotonic() - started) * self.rate) + 1)
                if due > fed:
                    insert_jobs(db, self.project_id, due - fed)
                    fed = due
                self.stop.wait(FEED_TICK)
        finally:
            self.cpu = time.thread_time() - cpu
            db.dispose()


async def deliver(
    url: str, receiver_url: str, jobs: int, concurrency: int, feeder: Feeder | None
) -> float:
    """Run the worker (and its dispatcher) until the receiver has ``jobs`` deliveries; the
    CPU seconds this process spent meanwhile (the feeder's left out)."""
    settings = settings_for(url)
    db = Database(url)
    # One client for the whole run: httpx.get made a client (and an SSL context) per poll,
    # which cost this process as much CPU as the dispatcher's own requests.
    counter = httpx.Client(base_url=receiver_url, timeout=10)
    services = Services(db, settings, load_registry(settings))
    try:
        warm(db, EXECUTOR_THREADS)
        worker = Worker(
            db,
            settings,
            registry(BURN_KIND, Counter(jobs).hit),
            concurrency=concurrency,
            maintenance=False,
            background=[services.webhook_dispatcher().run],
        )
        freeze_startup()
        deadline = time.monotonic() + 120 + jobs / 20
        if feeder is not None:
            deadline += jobs / feeder.rate
        cpu = time.process_time()
        async with running(worker) as task:
            if feeder is not None:
                feeder.start()
            try:
                while await asyncio.to_thread(_count, counter) < jobs:
                    if task.done():
                        raise RuntimeError("the worker stopped before every delivery arrived")
                    if time.monotonic() > deadline:
                        raise TimeoutError("not every delivery arrived in time")
                    await asyncio.sleep(COUNT_POLL)
            finally:
                if feeder is not None:
                    feeder.stop.set()
                    await asyncio.to_thread(feeder.join)
            return time.process_time() - cpu - (feeder.cpu if feeder else 0.0)
    finally:
        counter.close()
        db.dispose()


def _count(counter: httpx.Client) -> int:
    return int(counter.get("/count").text)


def measure(
    store: str, url: str, jobs: int, concurrency: int, log: Path, rate: float | None
) -> Run:
    """One run on a fresh database: a burst (``rate`` None) or a steady rate."""
    user = create_user(url)
    db = Database(url)
    try:
        services = Services(db, settings_for(url), load_registry(settings_for(url)))
        record = services.accounts.authenticate(user.api_key)
        assert record is not None
        with Server("bench.webhooks:receiver", "/count", {}, log) as server:
            base = f"http://127.0.0.1:{server.port}"
            services.webhooks.create(record, url=base + HOOK, events=["job.completed"])
            feeder = None
            if rate is None:
                insert_jobs(url, user.project_id, jobs, BURN_KIND)
                core.progress(f"{store} burst: {jobs:,} jobs, worker concurrency {concurrency}")
            else:
                feeder = Feeder(url, user.project_id, jobs, rate)
                core.progress(f"{store} steady: {jobs:,} jobs at {rate:,.0f}/s")
            cpu = asyncio.run(deliver(url, base, jobs, concurrency, feeder))
            seen: list[list[Any]] = httpx.get(base + "/seen", timeout=60).json()
        with db.read() as conn:
            done = dict(conn.execute(select(jobs_table.c.id, jobs_table.c.completed_at)).all())
    finally:
        db.dispose()
    first: dict[int, float] = {}
    for arrived, _msg, job_id in seen:
        first[job_id] = min(arrived, first.get(job_id, arrived))
    completed = {
        job_id: (when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp()
        for job_id, when in done.items()
        if when is not None
    }
    delays = sorted(first[j] - completed[j] for j in first if j in completed)
    span = max(first.values()) - min(completed.values()) if first and completed else 0.0
    return Run(
        store,
        "burst" if rate is None else "steady",
        rate,
        jobs,
        delivered=len(first),
        duplicates=len(seen) - len({msg for _, msg, _ in seen}),
        seconds=span,
        delays=delays,
        completing=max(completed.values()) - min(completed.values()) if completed else 0.0,
        cpu=cpu,
    )


# -- the report -------------------------------------------------------------------------------


def targets(runs: list[Run]) -> list[core.Target]:
    found: list[core.Target] = []
    for run in runs:
        p99 = run.quantile(0.99)
        if run.mode == "steady":  # the burst's p99 is reported, not judged (docs/bench)
            what = f"{run.store}: steady {run.rate:,.0f}/s: p99 completion->delivery"
            found.append((f"{what} <= {TARGET_P99:g} s", f"{p99:.3f} s", p99 <= TARGET_P99))
        what = f"{run.store} {run.mode}: every completion delivered"
        got = f"{run.delivered:,} of {run.jobs:,}"
        found.append((what, got, run.delivered == run.jobs))
    return found


def main(argv: list[str] | None = None) -> int:
    parser = core.parser("bench/webhooks.py", __doc__.splitlines()[0])
    add = parser.add_argument
    add("--jobs", type=int, default=10_000, help="job completions")
    add("--stores", type=core.choice(STORES), default=("sqlite",), help="sqlite,postgresql")
    add("--concurrency", type=int, default=200, help="worker concurrency")
    rate = "steady completions a second (0: half the burst's measured drain rate)"
    add("--rate", type=float, default=0.0, help=rate)
    args = parser.parse_args(argv)
    if args.jobs < 1 or args.concurrency < 1 or args.rate < 0:
        parser.error("--jobs and --concurrency must be at least 1, --rate at least 0")
    results: Report[Run] = Report(
        "webhook delivery",
        [
            ("store", lambda r: r.store),
            ("mode", lambda r: r.mode),
            ("rate/s", lambda r: "all at once" if r.rate is None else f"{r.rate:,.0f}"),
            ("jobs", lambda r: f"{r.jobs:,}"),
            ("delivered", lambda r: f"{r.delivered:,}"),
            ("duplicates", lambda r: f"{r.duplicates:,}"),
            ("completing s", lambda r: f"{r.completing:.3f}"),
            ("deliveries/s", lambda r: f"{r.per_second:,.0f}"),
            ("CPU ms/delivery", lambda r: f"{r.cpu_ms:.2f}"),
            ("p50 delay s", lambda r: f"{r.quantile(0.5):.3f}"),
            ("p99 delay s", lambda r: f"{r.quantile(0.99):.3f}"),
            ("max delay s", lambda r: f"{max(r.delays, default=float('nan')):.3f}"),
        ],
        targets,
    )
    settings = Settings(database_url="sqlite://")
    dispatcher = ", ".join(
        f"{name} {getattr(settings, name, '(none)')}"
        for name in ("webhook_concurrency", "webhook_endpoint_concurrency")
    )

    def body(stack: ExitStack) -> None:
        scratch = ours.Scratch(stack, postgres="postgresql" in args.stores)
        results.start(scratch.pg, f"dispatcher: {dispatcher}")
        for store in args.stores:
            for mode in ("burst", "steady"):
                log = scratch.root / f"receiver-{store}-{mode}.log"
                url = scratch.new(store, f"bench_webhooks_{mode}")
                rate = None
                if mode == "steady":
                    rate = args.rate or max(1.0, results.runs[-1].per_second * STEADY_SHARE)
                results.add(measure(store, url, args.jobs, args.concurrency, log, rate))

    return results.main(body, "scratch databases removed")


if __name__ == "__main__":
    raise SystemExit(main())
