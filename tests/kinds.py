"""Kinds used by the tests, loaded as a plug-in (SEOJOBS_PLUGINS=tests.kinds).

They record what they do in the database they run against (``test_log``), so a test can prove
from outside the worker process which items ran and how often.
"""

from __future__ import annotations

import asyncio
import functools
import os
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

from pydantic import BaseModel, Field
from sqlalchemy import Column, Engine, Integer, MetaData, String, Table, create_engine, insert
from sqlalchemy.pool import NullPool

from seojobs.engine import Finding, ItemResult, JobContext, JobFailed, Kind, Registry
from seojobs.records import ItemRecord

log_metadata = MetaData()
test_log = Table(
    "test_log",
    log_metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("job_id", Integer, nullable=False),
    Column("item", String(200), nullable=True),
    Column("event", String(50), nullable=False),
    Column("pid", Integer, nullable=False),
)


@functools.cache
def _log_engine(url: str) -> Engine:
    # The log is this plug-in's own table, written through its own connection: a kind reaches
    # seojobs' store only through its context.
    # NullPool: no connection outlives its write (test databases are dropped under it).
    args = {"timeout": 30} if url.startswith("sqlite") else {}
    return create_engine(url, poolclass=NullPool, connect_args=args)


_LOG_LOCK = threading.Lock()


def write_log(ctx: JobContext[Any], event: str, item: str | None = None) -> None:
    # One log write at a time per process, as when they went through the worker's small
    # thread pool: a crowd of SQLite writers would starve the workers' own heartbeats.
    with _LOG_LOCK, _log_engine(ctx.settings.database_url).begin() as conn:
        conn.execute(
            insert(test_log).values(job_id=ctx.job_id, item=item, event=event, pid=os.getpid())
        )


class NoopParams(BaseModel):
    pass


class ItemsParams(BaseModel):
    urls: list[str] = Field(min_length=1)
    item_delay: float = Field(default=0.0, ge=0)
    fail_items: list[str] = Field(default_factory=list)
    concurrency: int = Field(default=1, ge=1)
    backlog: int = Field(default=0, ge=0)  # run_items' results waiting for a write
    delay_step: float = Field(default=0.0, ge=0)  # item n sleeps n x this longer
    # Each item first waits for this file to exist (RELEASE_SECONDS at most): a test that must
    # see the job part-way (a browser test reading its first counters) holds it until then.
    # "{attempt}" in it is the claim's attempt: each attempt of the job held apart.
    wait_for_file: str = ""
    log_end: bool = False  # an "end" row (item: the attempt) once this attempt's run ends


class SleepParams(BaseModel):
    seconds: float = Field(ge=0, le=600)


class FailParams(BaseModel):
    code: str = "boom"
    message: str = "it failed"
    crash: bool = False


async def noop(ctx: JobContext[NoopParams]) -> None:
    return None


RELEASE_SECONDS = 60.0


async def _released(path: Path) -> None:
    deadline = time.monotonic() + RELEASE_SECONDS
    while not path.exists() and time.monotonic() < deadline:
        await asyncio.sleep(0.05)


async def items(ctx: JobContext[ItemsParams]) -> None:
    params = ctx.params

    async def one(item: ItemRecord) -> ItemResult:
        await asyncio.to_thread(write_log, ctx, "start", item.input)
        if params.wait_for_file:
            await _released(Path(params.wait_for_file.replace("{attempt}", str(ctx.job.attempt))))
        if params.item_delay or params.delay_step:
            await asyncio.sleep(params.item_delay + item.seq * params.delay_step)
        if item.input in params.fail_items:
            return ItemResult.error("item_failed", f"{item.input} was told to fail")
        return ItemResult(outcome="ok", result={"length": len(item.input)})

    try:
        await ctx.run_items(one, concurrency=params.concurrency, backlog=params.backlog)
    finally:
        if params.log_end:
            write_log(ctx, "end", str(ctx.job.attempt))  # (no await: it may be a cancel)
    ctx.result = {"seen": ctx.counters.get("ok", 0)}


async def log_run(ctx: JobContext[NoopParams]) -> None:
    """Logs one row per execution: the claimed-exactly-once tests count them."""

    await asyncio.to_thread(write_log, ctx, "run")


async def sleep(ctx: JobContext[SleepParams]) -> None:
    await asyncio.sleep(ctx.params.seconds)


async def block_loop(ctx: JobContext[SleepParams]) -> None:
    """Holds its worker's event loop for ``seconds``: a synchronous call made on the loop, as
    a kind's CPU work there does (a parse, a score over every page, the import of a library
    at its first use), however a loaded machine stretches it."""
    time.sleep(ctx.params.seconds)


async def fail(ctx: JobContext[FailParams]) -> None:
    params = ctx.params
    if params.crash:
        raise RuntimeError(params.message)
    raise JobFailed(params.code, params.message)


class CrawlParams(BaseModel):
    start: str
    item_delay: float = Field(default=0.0, ge=0)
    concurrency: int = Field(default=2, ge=1)
    backlog: int = Field(default=0, ge=0)


LINK = re.compile(r'href="([^"#]+)"')


async def crawl(ctx: JobContext[CrawlParams]) -> None:
    """A small crawler: every page's same-site links become items (once each, however many
    pages link to them); a page without a title is a finding; the page count is collected."""
    site = urlsplit(ctx.params.start).netloc

    async def one(item: ItemRecord) -> ItemResult:
        await asyncio.to_thread(write_log, ctx, "start", item.input)
        if ctx.params.item_delay:
            await asyncio.sleep(ctx.params.item_delay)
        page = await fetcher.fetch(item.input)
        if not page.ok:
            return ItemResult.error("fetch_failed", page.error or f"HTTP {page.status}")
        html = page.body.decode(errors="replace")
        links = [urljoin(page.final_url, href) for href in LINK.findall(html)]
        await ctx.add_items(u for u in links if urlsplit(u).netloc == site)
        found = (
            () if "<title>" in html else (Finding("missing_title", "warning", {"url": item.input}),)
        )
        return ItemResult(outcome="crawled", result={"links": len(links)}, findings=found)

    from seojobs.fetch import Fetcher  # as the built-in kinds: aiohttp at the first crawl

    async with Fetcher(ctx.settings) as fetcher:
        await ctx.run_items(one, concurrency=ctx.params.concurrency, backlog=ctx.params.backlog)
    await ctx.collect(site, {"pages": ctx.counters.get("crawled", 0)})


class SummaryParams(BaseModel):
    findings: int = Field(default=3, ge=0)
    hold: float = Field(default=0.0, ge=0, le=600)  # the first claim waits, findings written
    gated: bool = False  # computing the findings blocks on the test's GATES[job id]


@dataclass
class Gate:
    """A test's hold on a ``gated`` summary job while its findings are computed: ``reached``
    is set once they are being drawn, which then blocks its thread (as an audit's CPU-bound
    site-wide checks hold theirs) until the test sets ``opened`` (GATE_SECONDS at most)."""

    reached: threading.Event = field(default_factory=threading.Event)
    opened: threading.Event = field(default_factory=threading.Event)


GATES: dict[int, Gate] = {}
GATE_SECONDS = 15.0


def _site_findings(ctx: JobContext[SummaryParams]) -> Iterator[Finding]:
    seen: dict[str, Any] = {}
    if ctx.params.gated:
        gate = GATES[ctx.job_id]
        gate.reached.set()
        seen["gate_opened"] = gate.opened.wait(GATE_SECONDS)
    for n in range(ctx.params.findings):
        yield Finding("site_wide", "notice", {"n": n, **seen})


async def summary(ctx: JobContext[SummaryParams]) -> None:
    """Writes job-level findings, logs that it did, then (its first claim only) waits: the
    moment a crash test kills the worker, before the job completes."""
    await ctx.add_findings(_site_findings(ctx))
    await asyncio.to_thread(write_log, ctx, "findings_written")
    if ctx.job.rescue_count == 0:
        await asyncio.sleep(ctx.params.hold)
    ctx.result = {"findings": ctx.params.findings}


def register(registry: Registry) -> None:
    registry.add(Kind("test_noop", NoopParams, noop))
    registry.add(Kind("test_items", ItemsParams, items, items=lambda p: list(p.urls)))
    registry.add(Kind("test_sleep", SleepParams, sleep))
    registry.add(Kind("test_log_run", NoopParams, log_run))
    registry.add(Kind("test_fail", FailParams, fail))
    registry.add(Kind("test_crawl", CrawlParams, crawl, items=lambda p: [p.start]))
    registry.add(Kind("test_summary", SummaryParams, summary))
    # A kind with a queue of its own and one job at a time per worker (a browser pool's kind).
    registry.add(Kind("test_capped", SleepParams, sleep, queue="capped", concurrency=1))
    registry.add(Kind("test_timed", SleepParams, sleep, timeout=0.5))
    registry.add(Kind("test_block_loop", SleepParams, block_loop))
