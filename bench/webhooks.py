"""Webhook delivery benchmark: ``python bench/webhooks.py [--jobs 10000] [--stores sqlite]
[--concurrency 200]``.

N pre-inserted no-op jobs are completed by one in-process worker whose dispatcher delivers a
``job.completed`` for each to one subscribed endpoint: a receiver on loopback in its own
process (uvicorn), which records when each delivery arrived. Measured: deliveries per second,
and the delay from each job's completion (its ``completed_at``) to its delivery, p50 and p99.
Targets, and how to read the report: docs/bench/webhooks.md.
"""

from __future__ import annotations

import sys
from pathlib import Path

# The repository root, not bench/ (where queue.py would shadow the standard library's queue).
sys.path[0] = str(Path(__file__).resolve().parents[1])

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import UTC
from typing import Any

import httpx
from sqlalchemy import select
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from bench.lib import cli
from bench.lib.jobs import BURN_KIND, Counter, burn_registry
from bench.lib.ours import EXECUTOR_THREADS, create_user, insert_jobs, running, warm
from bench.lib.scratch import ScratchPostgres, ScratchSqlite, pg_url, sqlite_url
from bench.lib.servers import Server
from seojobs.engine.worker import Worker, freeze_startup
from seojobs.kinds import load_registry
from seojobs.services import Services
from seojobs.settings import Settings
from seojobs.store.db import Database
from seojobs.store.tables import jobs as jobs_table

TARGET_P99 = 1.0  # seconds from a job's completion to its delivery (issue 27)
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
        routes=[
            Route(HOOK, hook, methods=["POST"]),
            Route("/count", count),
            Route("/seen", seen),
        ]
    )


# -- one run ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Run:
    store: str
    jobs: int
    delivered: int  # distinct jobs delivered
    duplicates: int  # deliveries beyond one per webhook-id
    seconds: float  # first completion to last delivery
    delays: list[float]  # per job: completion to its first delivery
    completing: float  # first completion to last completion (how tight the burst was)
    cpu: float  # CPU seconds of this process (the worker and its dispatcher) during the run

    @property
    def cpu_ms(self) -> float:
        """CPU ms per delivery: the worker's (running and completing the no-op jobs) and its
        dispatcher's together, the receiver's not (its own process)."""
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


async def deliver(url: str, receiver_url: str, jobs: int, concurrency: int) -> float:
    """Run the worker (and its dispatcher) until the receiver has ``jobs`` deliveries; the
    CPU seconds this process spent meanwhile."""
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
            burn_registry(Counter(jobs)),
            concurrency=concurrency,
            maintenance=False,
            background=[services.webhook_dispatcher().run],
        )
        freeze_startup()
        deadline = time.monotonic() + 120 + jobs / 20
        cpu = time.process_time()
        async with running(worker) as task:
            while await asyncio.to_thread(_count, counter) < jobs:
                if task.done():
                    raise RuntimeError("the worker stopped before every delivery arrived")
                if time.monotonic() > deadline:
                    raise TimeoutError("not every delivery arrived in time")
                await asyncio.sleep(COUNT_POLL)
            return time.process_time() - cpu
    finally:
        counter.close()
        db.dispose()


def _count(counter: httpx.Client) -> int:
    return int(counter.get("/count").text)


def measure(store: str, url: str, jobs: int, concurrency: int, log: Path) -> Run:
    user = create_user(url)
    db = Database(url)
    try:
        services = Services(db, settings_for(url), load_registry(settings_for(url)))
        record = services.accounts.authenticate(user.api_key)
        assert record is not None
        with Server("bench.webhooks:receiver", "/count", {}, log) as server:
            base = f"http://127.0.0.1:{server.port}"
            services.webhooks.create(record, url=base + HOOK, events=["job.completed"])
            insert_jobs(url, user.project_id, jobs, BURN_KIND)
            cli.progress(f"{store}: {jobs:,} jobs, worker concurrency {concurrency}")
            cpu = asyncio.run(deliver(url, base, jobs, concurrency))
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
        jobs,
        delivered=len(first),
        duplicates=len(seen) - len({msg for _, msg, _ in seen}),
        seconds=span,
        delays=delays,
        completing=max(completed.values()) - min(completed.values()) if completed else 0.0,
        cpu=cpu,
    )


# -- the report -------------------------------------------------------------------------------


def targets(runs: list[Run]) -> list[cli.Target]:
    found: list[cli.Target] = []
    for run in runs:
        p99 = run.quantile(0.99)
        found.append(
            (
                f"{run.store}: p99 completion->delivery <= {TARGET_P99:g} s",
                f"{p99:.3f} s",
                p99 <= TARGET_P99,
            )
        )
        found.append(
            (
                f"{run.store}: every completion delivered",
                f"{run.delivered:,} of {run.jobs:,}",
                run.delivered == run.jobs,
            )
        )
    return found  # fmt: skip


def report(runs: list[Run], pg: ScratchPostgres | None) -> str:
    settings = Settings(database_url="sqlite://")
    lines = [
        cli.machine(pg),
        "dispatcher: "
        + ", ".join(
            f"{name} {getattr(settings, name, '(none)')}"
            for name in ("webhook_concurrency", "webhook_endpoint_concurrency")
        ),
        "",
    ]
    lines += cli.columns(
        [
            ("store", lambda r: r.store),
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
        runs,
    )
    return "\n".join([*lines, "", *cli.judged(targets(runs)), ""])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=10_000, help="job completions (10,000)")
    parser.add_argument(
        "--stores", type=cli.choice(STORES), default=("sqlite",), help="sqlite,postgresql"
    )
    parser.add_argument("--concurrency", type=int, default=200, help="worker concurrency (200)")
    args = parser.parse_args(argv)
    if args.jobs < 1 or args.concurrency < 1:
        parser.error("--jobs and --concurrency must be at least 1")
    cli.unwind_on_sigterm()
    runs: list[Run] = []
    with ExitStack() as stack, tempfile.TemporaryDirectory() as tmp:
        pg = stack.enter_context(ScratchPostgres()) if "postgresql" in args.stores else None
        scratch = stack.enter_context(ScratchSqlite())
        with cli.partial_report(lambda: report(runs, pg), "scratch databases removed"):
            for store in args.stores:
                log = Path(tmp) / f"receiver-{store}.log"
                if store == "sqlite":
                    url = sqlite_url(scratch.new_path("webhooks"))
                else:
                    assert pg is not None
                    url = pg_url(pg.create("bench_webhooks"))
                runs.append(measure(store, url, args.jobs, args.concurrency, log))
        print(report(runs, pg), end="", flush=True)  # while PostgreSQL's version can be read
    return cli.exit_code(cli.failed(targets(runs)))


if __name__ == "__main__":
    raise SystemExit(main())
