"""What a running job sees: its params, its items, and a way to record results."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from seojobs.store.records import ItemOutcome, ItemRecord, JobRecord

if TYPE_CHECKING:
    from seojobs.engine.worker import Worker

ITEM_PAGE = 200


class JobFailed(Exception):
    """Raised by a handler to end its job as ``failed`` with a code and message."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class Interrupted(Exception):
    """The job must stop now: the worker is shutting down or lost the job's claim."""


@dataclass(frozen=True)
class ItemResult:
    """A handler's verdict on one item."""

    outcome: str | None = None
    result: dict[str, Any] | None = None
    error_code: str | None = None
    error_message: str | None = None

    @property
    def failed(self) -> bool:
        return self.error_code is not None

    @classmethod
    def error(cls, code: str, message: str, result: dict[str, Any] | None = None) -> ItemResult:
        return cls(outcome="failed", result=result, error_code=code, error_message=message)


ItemHandler = Callable[[ItemRecord], Awaitable[ItemResult]]


class JobContext:
    def __init__(self, worker: Worker, job: JobRecord, params: BaseModel) -> None:
        self.worker = worker
        self.job = job
        self.params = params
        self.counters: dict[str, int] = dict(job.counters)
        self.result: dict[str, Any] | None = None
        self.stopping = False  # set on SIGTERM: finish the current item, then release
        # Results waiting for the next group commit, and the task writing them. One writer per
        # job: counters are written as a snapshot, so writes must not overtake each other.
        self._pending: list[tuple[list[tuple[ItemRecord, ItemResult]], asyncio.Future[None]]] = []
        self._flusher: asyncio.Task[None] | None = None

    @property
    def job_id(self) -> int:
        return self.job.id

    @property
    def settings(self) -> Any:
        return self.worker.settings

    def check(self) -> None:
        """Raise ``Interrupted`` if the job should stop before its next unit of work."""
        if self.stopping:
            raise Interrupted("worker is shutting down")

    async def open_items(self) -> AsyncIterator[ItemRecord]:
        """Unfinished items in order; finished ones (from an earlier claim) are skipped."""
        after = -1
        while True:
            page = await self.worker.run_db(self.worker.open_items, self.job.id, after, ITEM_PAGE)
            if not page:
                return
            for item in page:
                yield item
            after = page[-1].seq

    async def record(self, item: ItemRecord, verdict: ItemResult) -> None:
        """Store one item's result now; raises ``Interrupted`` if the job was taken away."""
        await self.record_many([(item, verdict)])

    async def record_many(self, finished: list[tuple[ItemRecord, ItemResult]]) -> None:
        """Store items' results; returns once they are committed.

        Group commit: results that finish while a write is in flight go together in the next
        transaction, so a job's writes never queue up one by one (measured in bench/check.py:
        one transaction per item, serialised, capped a job at ~200-250 items/s). Nothing
        waits on purpose: the first result is written at once.
        """
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._pending.append((finished, done))
        if self._flusher is None or self._flusher.done():
            # A task of its own, so a cancelled caller cannot strand the others' results.
            self._flusher = asyncio.create_task(self._flush())
        await done

    async def _flush(self) -> None:
        while self._pending:
            batch, self._pending = self._pending, []
            finished = [pair for pairs, _done in batch for pair in pairs]
            try:
                await self._write(finished)
            except BaseException as exc:
                for _pairs, done in batch:
                    if not done.done():
                        done.set_exception(_copy(exc))
                if isinstance(exc, asyncio.CancelledError):
                    raise
                continue
            for _pairs, done in batch:
                if not done.done():
                    done.set_result(None)

    async def _write(self, finished: list[tuple[ItemRecord, ItemResult]]) -> None:
        outcomes = [
            ItemOutcome(
                item_id=item.id,
                failed=verdict.failed,
                outcome=verdict.outcome,
                result=verdict.result,
                error_code=verdict.error_code,
                error_message=verdict.error_message,
            )
            for item, verdict in finished
        ]
        counters = dict(self.counters)
        for _item, verdict in finished:
            key = verdict.outcome or ("failed" if verdict.failed else "done")
            counters[key] = counters.get(key, 0) + 1
        await self.worker.record_items(self, outcomes, counters)
        self.counters = counters

    async def ensure_held(self) -> None:
        """Raise ``Interrupted`` if the job was cancelled or taken away, or the worker stops.

        Call it before work that cannot be undone, such as sending URLs to a provider.
        """
        self.check()
        if not await self.worker.run_db(self.worker.still_held, self.job.id, self.job.attempt):
            raise Interrupted(f"job {self.job.id} is no longer held by this worker")

    async def run_items(self, handle: ItemHandler, *, concurrency: int = 1) -> None:
        """Run ``handle`` over every unfinished item, recording each result as it finishes.

        Stops before the next item when the worker shuts down or the job is cancelled.
        """
        semaphore = asyncio.Semaphore(concurrency)
        failures: list[BaseException] = []

        async def one(item: ItemRecord) -> None:
            try:
                verdict = await handle(item)
                await self.record(item, verdict)
            except BaseException as exc:  # collected; re-raised after in-flight items settle
                failures.append(exc)
            finally:
                semaphore.release()

        interrupted: Interrupted | None = None
        # Leaving the TaskGroup normally lets items in flight finish and be recorded; raising
        # inside it would cancel them half done.
        async with asyncio.TaskGroup() as group:
            async for item in self.open_items():
                await semaphore.acquire()
                if failures or self.stopping:
                    semaphore.release()
                    if self.stopping:
                        interrupted = Interrupted("worker is shutting down")
                    break
                group.create_task(one(item))
        if failures:
            raise failures[0]
        if interrupted:
            raise interrupted


def _copy(exc: BaseException) -> BaseException:
    """One exception per waiting caller (raising one object in several tasks tangles tracebacks)."""
    if isinstance(exc, Interrupted):
        return Interrupted(str(exc))
    return exc
