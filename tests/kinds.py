"""Kinds used by the tests, loaded as a plug-in (SEOJOBS_PLUGINS=tests.kinds).

They record what they do in the database they run against (``test_log``), so a test can prove
from outside the worker process which items ran and how often.
"""

from __future__ import annotations

import asyncio
import os

from pydantic import BaseModel, Field
from sqlalchemy import Column, Integer, MetaData, String, Table, insert

from seojobs.engine import ItemResult, JobContext, JobFailed, Kind, Registry
from seojobs.store.records import ItemRecord

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


class NoopParams(BaseModel):
    pass


class ItemsParams(BaseModel):
    urls: list[str] = Field(min_length=1)
    item_delay: float = Field(default=0.0, ge=0)
    fail_items: list[str] = Field(default_factory=list)


class SleepParams(BaseModel):
    seconds: float = Field(ge=0, le=600)


class FailParams(BaseModel):
    code: str = "boom"
    message: str = "it failed"
    crash: bool = False


async def noop(ctx: JobContext) -> None:
    return None


async def items(ctx: JobContext) -> None:
    params = ctx.params
    assert isinstance(params, ItemsParams)

    def log(item: ItemRecord, event: str) -> None:
        with ctx.worker.db.write() as conn:
            conn.execute(
                insert(test_log).values(
                    job_id=ctx.job_id, item=item.input, event=event, pid=os.getpid()
                )
            )

    async def one(item: ItemRecord) -> ItemResult:
        await ctx.worker.run_db(log, item, "start")
        if params.item_delay:
            await asyncio.sleep(params.item_delay)
        if item.input in params.fail_items:
            return ItemResult.error("item_failed", f"{item.input} was told to fail")
        return ItemResult(outcome="ok", result={"length": len(item.input)})

    await ctx.run_items(one)
    ctx.result = {"seen": ctx.counters.get("ok", 0)}


async def log_run(ctx: JobContext) -> None:
    """Logs one row per execution: the claimed-exactly-once tests count them."""

    def write() -> None:
        with ctx.worker.db.write() as conn:
            conn.execute(insert(test_log).values(job_id=ctx.job_id, event="run", pid=os.getpid()))

    await ctx.worker.run_db(write)


async def sleep(ctx: JobContext) -> None:
    params = ctx.params
    assert isinstance(params, SleepParams)
    await asyncio.sleep(params.seconds)


async def fail(ctx: JobContext) -> None:
    params = ctx.params
    assert isinstance(params, FailParams)
    if params.crash:
        raise RuntimeError(params.message)
    raise JobFailed(params.code, params.message)


def register(registry: Registry) -> None:
    registry.add(Kind("test_noop", NoopParams, noop))
    registry.add(Kind("test_items", ItemsParams, items, items=lambda p: list(p.urls)))
    registry.add(Kind("test_sleep", SleepParams, sleep))
    registry.add(Kind("test_log_run", NoopParams, log_run))
    registry.add(Kind("test_fail", FailParams, fail))
