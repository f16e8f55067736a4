"""Rank-check collection benchmark; what it measures and its targets: docs/bench/collect.md."""

from __future__ import annotations

import os
import sys

sys.path[0] = os.path.dirname(sys.path[0])  # the repo, not bench/ (queue.py)

import argparse
import asyncio
import time
from argparse import Namespace as Options  # what parse_args returns
from collections import deque
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from bench.lib import core, ours
from bench.lib.auditsite import bind
from bench.lib.report import Report
from bench.lib.site import Child, serve_app
from seojobs.engine.maintenance import fire_due_schedules
from seojobs.kinds import load_registry
from seojobs.kinds.rank_check.declared import RankCheckSettings
from seojobs.kinds.rank_check.params import KeywordAt
from seojobs.providers.ranks import RankQuery
from seojobs.providers.serper_ranks import SerperRanks
from seojobs.services import Services
from seojobs.services.collection_config import CollectionEntry
from seojobs.settings import Settings
from seojobs.store import jobs as job_sql
from seojobs.store.coltypes import utcnow
from seojobs.store.db import Database

STORES = ("sqlite", "postgresql")
API_KEY = "bench-serper-key"
DOMAIN = "example.com"
COMPETITORS = ("rival-one.example", "rival-two.example", "rival-three.example")
LOCATION, LANGUAGE, DEVICE, DEPTH = 2840, "en", "desktop", 100  # the tracked defaults
RESULTS = 10  # organic results the fake answers per keyword
BULK = 1_000  # tracked keywords per add (the API's most per request)
TARGET = 0.8  # the whole job >= 0.8 x the adapter alone
WARM_KEYWORDS = 100
ADAPTER, JOB = "adapter alone", "whole job"


def parse_args(argv: list[str] | None) -> Options:
    parser = core.parser(
        "bench/collect.py",
        "A project's rank_check collection of N tracked keywords run by one seojobs Worker "
        "against a local fake Serper (tests/fakes/ranks.py, its own process), beside the "
        "Serper rank adapter called directly for the same keywords against the same fake.",
    )
    add = parser.add_argument
    add("--keywords", type=int, default=2000, help="tracked keywords")
    add("--store", type=core.choice(STORES), default="sqlite", help="sqlite,postgresql")
    add("--concurrency", type=int, help="the job's and the adapter's (None: the setting's default)")
    add("--rounds", type=int, default=1, help="interleaved rounds; the medians are judged")
    add("--no-pin", dest="pin", action="store_false", help="the fake off CPU 1, the bench off 0")
    add("--serve-fake", action="store_true", help=argparse.SUPPRESS)
    add("--cpu", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.keywords < 1 or args.rounds < 1:
        parser.error("--keywords and --rounds must be at least 1")
    if args.concurrency is None:
        args.concurrency = RankCheckSettings.model_fields["concurrency"].default
    if args.concurrency < 1:
        parser.error("--concurrency must be at least 1")
    return args


# -- the fake Serper, in a child process -------------------------------------------------------


def keyword(n: int) -> str:
    return f"garden tool {n}"


def results_of(n: int) -> list[str]:
    """Keyword n's organic results: the project at position n % 10 + 1 except every fifth
    keyword, the competitors around it, other sites for the rest."""
    links = [f"https://site{(n + i) % 97}.example/page/{n}" for i in range(RESULTS)]
    for j, rival in enumerate(COMPETITORS):
        links[(n + 3 * j + 1) % RESULTS] = f"https://www.{rival}/p/{n}"
    if n % 5:
        links[n % RESULTS] = f"https://www.{DOMAIN}/products/{n}"
    return links


def ranked(n: int) -> bool:
    return n % 5 != 0


def serve_fake(keywords: int, cpu: int | None) -> None:
    """``FakeSerperRanks`` (tests/fakes/ranks.py) filled for ``keywords`` keywords, on a
    loopback socket; prints its port as one JSON line and serves until stdin closes."""
    from tests.fakes.ranks import FakeSerperRanks

    if cpu is not None:
        os.sched_setaffinity(0, {cpu})
    fake = FakeSerperRanks(API_KEY)
    for n in range(keywords):
        fake.results(keyword(n), *results_of(n))
        if n % 3 == 0:
            fake.features(keyword(n), "people_also_ask", "related_searches")
    fake.requests = deque(maxlen=0)  # type: ignore[assignment]  # it keeps every request
    sock = bind()
    serve_app(fake.app, [sock], {"port": sock.getsockname()[1]})


# -- the two systems ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Run:
    system: str
    store: str
    keywords: int
    seconds: float
    cpu: float  # this process, every thread, over the timed span
    fake_cpu: float  # the fake's process over the same span
    loop_wait: float  # seconds the event-loop thread was runnable but not on a CPU

    @property
    def rate(self) -> float:
        return self.keywords / self.seconds

    @property
    def cpu_ms(self) -> float:
        return self.cpu * 1000 / self.keywords

    @property
    def fake_cpu_ms(self) -> float:
        return self.fake_cpu * 1000 / self.keywords


def settings_for(url: str, fake_url: str, concurrency: int) -> Settings:
    return Settings(
        database_url=url,
        lease_seconds=ours.LEASE_SECONDS,
        poll_interval=ours.POLL_INTERVAL,
        serper_key=API_KEY,
        serper_base_url=fake_url,
        rank_check_providers={"google": ["serper"]},
        rank_check_concurrency=concurrency,
    )


async def adapter_alone(settings: Settings, keywords: int, lanes: int) -> tuple[float, float]:
    """(seconds, CPU seconds) of ``SerperRanks.serp`` for every keyword in ``lanes`` lanes
    (the job's concurrency); each answer checked."""
    todo = iter([RankQuery(keyword(n), LOCATION, LANGUAGE, DEVICE, DEPTH) for n in range(keywords)])
    adapter = SerperRanks(settings)

    async def lane() -> None:
        for query in todo:
            serp = await adapter.serp(query)
            if len(serp.organic) != RESULTS:
                raise RuntimeError(f"adapter: {query.keyword!r} got {len(serp.organic)} results")

    try:
        started, cpu = time.perf_counter(), time.process_time()
        await asyncio.gather(*(lane() for _ in range(lanes)))
        return time.perf_counter() - started, time.process_time() - cpu
    finally:
        await adapter.aclose()


def prepare(settings: Settings, user_id: int, keywords: int) -> int:
    """The collection job's id, made untimed by the product's own path (docs/bench/collect.md:
    the project tracks the keywords, its collection is put, the due schedule fired)."""
    db = Database(settings.database_url)
    try:
        services = Services(db, settings, load_registry(settings))
        user = services.user(user_id)
        tracked = {"domain": DOMAIN, "competitors": [{"domain": d} for d in COMPETITORS]}
        project = services.accounts.create_project(user, "collect", tracked)
        for start in range(0, keywords, BULK):
            chunk = range(start, min(start + BULK, keywords))
            services.tracked.add_keywords(
                user, project.id, [KeywordAt(keyword=keyword(n)) for n in chunk]
            )
        services.collection.put(user, project.id, {"rank_check": CollectionEntry()})
        fired = fire_due_schedules(db, utcnow() + timedelta(seconds=1), services.schedules.fire)
        with db.read() as conn:
            found = job_sql.list_for_projects(conn, [project.id], limit=10)
        if fired != 1 or len(found) != 1 or found[0].kind != "rank_check":
            raise RuntimeError(f"the collection fired {fired} job(s): {found}")
        return found[0].id
    finally:
        db.dispose()


def verify(db: Database, job_id: int, keywords: int) -> None:
    """Every keyword checked, the right ones ranked, and the share of voice collected."""
    with db.read() as conn:
        job = job_sql.get(conn, job_id)
    assert job is not None
    expected = sum(ranked(n) for n in range(keywords))
    result = job.result or {}
    got = (job.items_done, job.items_failed, result.get("ranked"), result.get("not_ranked"))
    want = (keywords, 0, expected, keywords - expected)
    if got != want or "share_of_voice" not in result:
        raise RuntimeError(f"job {job_id}: (done, failed, ranked, not ranked) {got} != {want}")


async def whole_job(
    settings: Settings, job_id: int, keywords: int, fake: Child
) -> tuple[float, float, float, float]:
    """(seconds, CPU seconds, the fake's CPU seconds, loop wait) of one Worker from ``run()``
    until a second ``Database`` reads the collection job completed."""
    async with ours.timed_worker(settings) as run:
        meter = core.Meter(fake.pid)
        started, cpu = time.perf_counter(), time.process_time()
        ended = await ours.wait_completed(
            run.worker, run.task, run.probe, job_id, what="collection job", timeout=120
        )
        cpu = time.process_time() - cpu
        usage = meter.stop(ended - started)
        await asyncio.to_thread(verify, run.probe, job_id, keywords)
    return ended - started, cpu, usage.server_cpu, usage.loop_wait


def _median(runs: list[Run], system: str, attr: str, store: str | None = None) -> float:
    """The median of ``attr`` over ``system``'s runs (on ``store``; NaN when none ran)."""
    found = [r for r in runs if r.system == system and store in (None, r.store)]
    return core.median([getattr(r, attr) for r in found])


def targets(runs: list[Run]) -> list[core.Target]:
    """Issue 29's target, per store (docs/bench/collect.md: the CPU ratio is not judged)."""
    found: list[core.Target] = []
    for store in STORES:
        if any(r.store == store for r in runs) and any(r.system == ADAPTER for r in runs):
            rate = _median(runs, JOB, "rate", store) / _median(runs, ADAPTER, "rate")
            what = f"{store}: whole job >= {TARGET} x adapter alone (keywords/s)"
            found.append((what, f"{rate:.2f}", rate >= TARGET))
    return found


def report(keywords: int) -> Report[Run]:
    found: Report[Run] = Report(
        f"bench/collect.py: a rank_check collection of {keywords:,} tracked keywords",
        [
            ("system", lambda r: r.system),
            ("store", lambda r: r.store),
            ("seconds", lambda r: f"{r.seconds:.2f}"),
            ("keywords/s", lambda r: f"{r.rate:,.0f}"),
            ("x adapter", lambda r: f"{r.rate / _median(found.runs, ADAPTER, 'rate'):.2f}"),
            ("CPU ms/kw", lambda r: f"{r.cpu_ms:.3f}"),
            (
                "adapter CPU / CPU",
                lambda r: f"{_median(found.runs, ADAPTER, 'cpu_ms') / r.cpu_ms:.2f}",
            ),
            ("fake CPU ms/kw", lambda r: f"{r.fake_cpu_ms:.3f}"),
            ("loop waits", lambda r: f"{r.loop_wait / r.seconds:.0%}"),
        ],
        targets,
        lambda r: (
            f"{r.system}{'' if r.store == '-' else f' ({r.store})'}: {r.rate:,.0f} keywords/s, "
            f"{r.cpu_ms:.3f} CPU ms/keyword (fake {r.fake_cpu_ms:.3f}), "
            f"loop waited {r.loop_wait / r.seconds:.0%}"
        ),
    )
    return found


NOTES = [
    "CPU ms/kw: this process (every thread) over the timed span / keywords; the fake's own "
    "process (FastAPI + uvicorn, pinned apart) is the fake CPU column. loop waits: share of "
    "the wall time the event-loop thread was runnable but waiting for a CPU (other load).",
    "whole job: the clock runs from Worker.run() until a second Database reads the job "
    "completed; setting up the project, tracking the keywords, the collection and firing its "
    "schedule (the job's creation, 2,000 items) come before it.",
]


def main(argv: list[str] | None = None) -> int:
    opts = parse_args(argv)
    if opts.serve_fake:
        serve_fake(opts.keywords, opts.cpu)
        return 0
    results = report(opts.keywords)

    def body(stack: ExitStack) -> None:
        command = [str(Path(__file__).resolve()), "--serve-fake", "--keywords", str(opts.keywords)]
        fake = stack.enter_context(Child(command, 1 if opts.pin else None))
        if opts.pin:
            os.sched_setaffinity(0, {0})
        dbs = ours.Scratch(stack, postgres="postgresql" in opts.store, prefix="seojobs_collect")
        results.start(
            dbs.pg,
            core.versions("aiohttp", "uvicorn", "fastapi", "sqlalchemy"),
            f"rank_check concurrency {opts.concurrency} (the job's items at once; the adapter's "
            f"lanes); one Worker, maintenance off; Serper adapter, depth {DEPTH}, "
            f"{RESULTS} organic results per answer; "
            + ("benchmark on CPU 0, fake on CPU 1" if opts.pin else "no CPU pinning"),
        )

        def adapter(keywords: int) -> Run:
            settings = settings_for("sqlite://", fake.url, opts.concurrency)
            meter = core.Meter(fake.pid)
            seconds, cpu = asyncio.run(adapter_alone(settings, keywords, opts.concurrency))
            usage = meter.stop(seconds)
            return Run(ADAPTER, "-", keywords, seconds, cpu, usage.server_cpu, usage.loop_wait)

        def job(store: str, keywords: int) -> Run:
            with dbs.fresh(store) as (url, user_id):
                settings = settings_for(url, fake.url, opts.concurrency)
                job_id = prepare(settings, user_id, keywords)
                return Run(
                    JOB, store, keywords, *asyncio.run(whole_job(settings, job_id, keywords, fake))
                )

        core.progress("warming up")
        warm = min(WARM_KEYWORDS, opts.keywords)  # the fake answers for --keywords keywords
        adapter(warm)
        for store in opts.store:
            job(store, warm)
        for _round in range(opts.rounds):
            results.add(adapter(opts.keywords))  # interleaved: load bursts hit both alike
            for store in opts.store:
                results.add(job(store, opts.keywords))
        results.notes = NOTES

    return results.main(body, "fake stopped, scratch databases removed")


if __name__ == "__main__":
    raise SystemExit(main())
