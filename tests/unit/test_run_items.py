"""``JobContext.run_items`` runs every item, including those found while it runs, whatever the
timing of its reads against its writes.

The host is the store as a worker sees it (``engine.host.JobHost``), held in lists: each read
sees the items as they were when it began and answers some loop turns later, as a database read
in another thread does (PostgreSQL: a statement's snapshot is taken as it starts). A write
that commits meanwhile is not in that answer. Before the fix a crawl could complete with a
found page never fetched: the look that saw no open item had begun while the page that found
it was being recorded (test_site_audit_links.py lost /d in 1 run in 20 on PostgreSQL under load).
"""

from __future__ import annotations

import asyncio
import dataclasses
from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import BaseModel

from seojobs.engine.context import ItemResult, JobContext
from seojobs.engine.host import Change, RecordItems
from seojobs.records import ItemRecord, JobRecord, NewItem

NOW = datetime(2026, 12, 5, tzinfo=UTC)
# A page and the pages it links to (a crawl's frontier grows as pages are recorded).
LINKS = {"/": ["/a", "/b"], "/a": ["/c"], "/b": ["/c", "/d"], "/c": [], "/d": ["/e"], "/e": []}


class NoParams(BaseModel):
    pass


def _job() -> JobRecord:
    return JobRecord(
        id=1, project_id=1, kind="crawl", params={}, state="processing", priority=0, title=None,
        run_at=NOW, created_at=NOW, started_at=NOW, updated_at=NOW, completed_at=None,
        attempt=1, worker_id="w", lease_expires_at=None, rescue_count=0, error_code=None,
        error_message=None, items_total=1, items_done=0, items_failed=0, counters={},
        result=None, parent_id=None, idempotency_key=None, schedule_id=None, schedule_tick=None,
    )  # fmt: skip


class LaggingHost:
    """A job's items in a list. A read answers ``read_lag`` loop turns after it looked; a
    write applies ``write_lag`` turns after it was sent, and returns as many turns later."""

    def __init__(self, first: str, read_lag: int, write_lag: int) -> None:
        self.read_lag, self.write_lag = read_lag, write_lag
        self.rows: list[ItemRecord] = []
        self._add([NewItem.of(first)])

    def _add(self, new: list[NewItem]) -> int:
        """Items the job does not have yet, by key (as the store's insert skips them)."""
        have = {row.key for row in self.rows}
        added = 0
        for n in new:
            if n.key in have:
                continue
            have.add(n.key)
            seq = len(self.rows)
            self.rows.append(
                ItemRecord(seq + 1, 1, seq, n.input, n.key, n.data, "pending", *[None] * 5)
            )
            added += 1
        return added

    @staticmethod
    async def _turns(n: int) -> None:
        for _ in range(n):
            await asyncio.sleep(0)

    async def items(
        self, job: JobRecord, after_seq: int, limit: int, *, only_open: bool
    ) -> list[ItemRecord]:
        seen = [
            r for r in self.rows if r.seq > after_seq and not (only_open and r.state != "pending")
        ]
        await self._turns(self.read_lag)  # what is written meanwhile is not in the answer
        return seen[:limit]

    async def still_held(self, job: JobRecord) -> bool:
        return True

    async def published(self, job: JobRecord, subject: str) -> Any:
        return None

    async def write(self, job: JobRecord, *changes: Change) -> list[Any]:
        await self._turns(self.write_lag)
        answers: list[Any] = []
        for change in changes:
            assert isinstance(change, RecordItems)
            done = {o.item_id for o in change.outcomes}
            self.rows = [_done(row) if row.id in done else row for row in self.rows]
            answers.append(self._add(change.added))
        await self._turns(self.write_lag)  # committed; the caller hears of it later
        return answers


def _done(row: ItemRecord) -> ItemRecord:
    return dataclasses.replace(row, state="done", outcome="crawled")


async def _crawl(read_lag: int, write_lag: int, work: int, concurrency: int) -> list[str]:
    """The pages a crawl from / ran, on a host whose reads and writes take the given loop
    turns, with pages that take ``work`` turns each."""
    host = LaggingHost("/", read_lag, write_lag)
    ctx = JobContext(
        host,
        _job(),
        NoParams(),
        settings=None,
        new_items=lambda values: [NewItem.of(v) for v in values],
    )
    ran: list[str] = []

    async def page(item: ItemRecord) -> ItemResult:
        ran.append(item.input)
        await host._turns(work)
        return ItemResult(outcome="crawled", added=tuple(LINKS[item.input]))

    async with asyncio.timeout(10):
        await ctx.run_items(page, concurrency=concurrency)
    left = [row.input for row in host.rows if row.state != "done"]
    return sorted(ran) if not left else [*sorted(ran), f"left open: {left}"]


@pytest.mark.parametrize("concurrency", [1, 4])
async def test_every_item_found_while_running_is_run(concurrency: int) -> None:
    # Every timing of pages against reads and writes in a small range (before the fix, 20 of
    # these 192 left the first page's links open: a page that ends while a look is under way).
    missed = {}
    for read_lag in (1, 3, 5, 8):
        for write_lag in (0, 1, 3):
            for work in range(16):
                ran = await _crawl(read_lag, write_lag, work, concurrency)
                if ran != sorted(LINKS):  # each page once, none left open
                    missed[(read_lag, write_lag, work)] = ran
    assert missed == {}
