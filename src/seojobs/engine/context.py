"""What a running job sees: its params, its items, and ways to record what it learns.

A job reaches the store only through its context, and the context only through the small
``JobHost`` protocol of ``engine/host.py`` (the worker implements it): every write is fenced by
the job's claim.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import islice
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from seojobs.engine.host import (
    AddFinishedItem,
    AddItems,
    Change,
    Collect,
    JobHost,
    RecordItems,
    ReplaceRows,
    SetFindings,
)
from seojobs.records import (
    ItemOutcome,
    ItemRecord,
    JobRecord,
    NewFinding,
    NewItem,
    TrackedProject,
)

ITEM_PAGE = 200
ROWS_CHUNK = 2000  # kind rows written per transaction (replace_rows)
# How long a group of results waits for more (see JobContext._gather): a write costs about
# half a millisecond of CPU whatever its size (SQLite, bench/check.py), and items that finish
# one at a time (a host's politeness gate lets two pages through at once) would each pay it.
GROUP_WAIT = 0.02
P = TypeVar("P", bound=BaseModel)
# A finding: ``Finding("missing_title", "warning", {"url": ...})``.
Finding = NewFinding


def _take(values: Iterator[Any], count: int) -> list[Any]:
    return list(islice(values, count))


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
    """A handler's verdict on one item, with what the item revealed (written together):
    its findings, and the new items it found (``added``: a crawler's links, strings or dicts
    as ``JobContext.add_items`` takes them; those the job already has are skipped). Items
    added this way cost no write of their own, and a crash never keeps the result without
    them: both are stored, or neither and the item runs again."""

    outcome: str | None = None
    result: dict[str, Any] | None = None
    error_code: str | None = None
    error_message: str | None = None
    findings: tuple[NewFinding, ...] = field(default=())
    added: tuple[Any, ...] = field(default=())

    @property
    def failed(self) -> bool:
        return self.error_code is not None

    @classmethod
    def error(cls, code: str, message: str, result: dict[str, Any] | None = None) -> ItemResult:
        return cls(outcome="failed", result=result, error_code=code, error_message=message)


ItemHandler = Callable[[ItemRecord], Awaitable[ItemResult]]


class JobContext(Generic[P]):
    def __init__(
        self,
        host: JobHost,
        job: JobRecord,
        params: P,
        *,
        settings: Any,
        new_items: Callable[[Iterable[Any]], list[NewItem]],  # the kind's: dedupe by key
        kind_settings: Any = None,
    ) -> None:
        self._host = host
        self.job = job
        self.params: P = params
        self.settings: Any = settings
        self.kind_settings: Any = kind_settings  # the kind's own settings model, if it has one
        self._new_items = new_items
        self.counters: dict[str, int] = dict(job.counters)
        self.result: dict[str, Any] | None = None
        self.stopping = False  # set on SIGTERM: finish the current item, then release
        # Results waiting for the next group commit, and the task writing them. One writer per
        # job: counters are written as a snapshot, so writes must not overtake each other.
        self._pending: list[tuple[list[tuple[ItemRecord, ItemResult]], asyncio.Future[None]]] = []
        self._flusher: asyncio.Task[None] | None = None
        # Held during every write: one writer per job. Each write's counters snapshot then
        # counts everything written before it, and the store may write a job's changes in
        # one statement (PostgreSQL: store/results.record), which is safe only when no
        # other write of the same job runs beside it.
        self._writing = asyncio.Lock()
        # While run_items runs: items started and not yet recorded, the group size worth
        # waiting for, and an event set whenever either count changes.
        self._unrecorded = 0
        self._group_target = 1
        self._changed = asyncio.Event()
        # Claim checks (ensure_held) waiting for the next read of the claim, and the task
        # reading it: checks asked while a read is in flight share the next one.
        self._held_waiting: list[asyncio.Future[bool]] = []
        self._held_reader: asyncio.Task[None] | None = None

    @property
    def job_id(self) -> int:
        return self.job.id

    def check(self) -> None:
        """Raise ``Interrupted`` if the job should stop before its next unit of work."""
        if self.stopping:
            raise Interrupted("worker is shutting down")

    def open_items(self) -> AsyncIterator[ItemRecord]:
        """Unfinished items in order; finished ones (from an earlier claim) are skipped."""
        return self._open_items_after(-1)

    async def items(self) -> AsyncIterator[ItemRecord]:
        """Every item in order, finished ones with their results: what a kind reads back
        after ``run_items`` for checks over the whole job (a crawl's site-wide checks), which
        must see the items an earlier claim recorded too. The next page is read while the
        caller takes this one (a crawl's 5,000 records: 25 reads that each waited for the
        store, half the wall time of PostgreSQL's read-back, bench/audit.py)."""
        page = await self._host.items(self.job, -1, ITEM_PAGE, only_open=False)
        while page:
            ahead = asyncio.ensure_future(
                self._host.items(self.job, page[-1].seq, ITEM_PAGE, only_open=False)
            )
            try:
                for item in page:
                    yield item
            except BaseException:  # the caller stopped early (or failed): not read further
                ahead.cancel()
                if not ahead.cancelled():  # done already: its outcome is nobody's now
                    ahead.exception()
                raise
            page = await ahead

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
        self._changed.set()
        if self._flusher is None or self._flusher.done():
            # A task of its own, so a cancelled caller cannot strand the others' results.
            self._flusher = asyncio.create_task(self._flush())
        await done

    async def _flush(self) -> None:
        while self._pending:
            await self._gather()
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

    async def _gather(self) -> None:
        """Under run_items, let the next group grow a little: until it holds the results of
        half the concurrency, until every item still running is waiting in it (none will add
        to it soon), or for GROUP_WAIT seconds at most. An item keeps its concurrency slot until
        its result is written (or, with a ``backlog``, until it has a place in it), so at most
        ``concurrency`` (plus ``backlog``) items are ever run again after a crash; what the
        wait costs is a little latency per item, never a write."""
        deadline = asyncio.get_running_loop().time() + GROUP_WAIT
        while not self.stopping:
            waiting = sum(len(pairs) for pairs, _done in self._pending)
            if waiting >= self._group_target or waiting >= self._unrecorded:
                return
            self._changed.clear()
            try:
                async with asyncio.timeout_at(deadline):
                    await self._changed.wait()
            except TimeoutError:
                return

    async def _write(self, finished: list[tuple[ItemRecord, ItemResult]]) -> None:
        outcomes = [_outcome(item.id, verdict) for item, verdict in finished]
        found = [value for _item, verdict in finished for value in verdict.added]
        added = self._new_items(found) if found else []
        async with self._writing:
            counters = _counted(self.counters, [verdict for _item, verdict in finished])
            await self._host.write(self.job, RecordItems(outcomes, counters, added))
            self.counters = counters

    async def ensure_held(self) -> None:
        """Raise ``Interrupted`` if the job was cancelled or taken away, or the worker stops.

        Call it before work that cannot be undone, such as sending URLs to a provider.
        The claim is read after the call: calls made while a read is in flight share the next
        read (a rank check's items each ask before their search), as results share a write.
        """
        self.check()
        held: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._held_waiting.append(held)
        if self._held_reader is None or self._held_reader.done():
            # A task of its own, so a cancelled caller cannot strand the others' answer.
            self._held_reader = asyncio.create_task(self._read_held())
        if not await held:
            raise Interrupted(f"job {self.job.id} is no longer held by this worker")

    async def _read_held(self) -> None:
        while self._held_waiting:
            waiting, self._held_waiting = self._held_waiting, []
            try:
                held = await self._host.still_held(self.job)
            except BaseException as exc:
                for answer in waiting:
                    if not answer.done():
                        answer.set_exception(_copy(exc))
                if isinstance(exc, asyncio.CancelledError):
                    raise
                continue
            for answer in waiting:
                if not answer.done():
                    answer.set_result(held)

    async def add_items(self, values: Iterable[Any]) -> int:
        """Add items found while running (a crawler's links): strings or structured items
        (dicts). An item the job already has, by the kind's dedupe key, is skipped; returns
        how many were new. Added items are stored before this returns, so they survive a
        crash and are run by whichever worker resumes the job."""
        self.check()
        items = self._new_items(values)
        if not items:
            return 0
        async with self._writing:
            [added] = await self._host.write(self.job, AddItems(items))
        return int(added)

    async def add_finished_item(self, value: Any, verdict: ItemResult) -> bool:
        """Add an item already finished, with its verdict (result and findings), in one
        transaction; it is never run. For work a job got done on the way to other work (a
        crawler that followed a redirect has its target's answer). Returns False, adding
        nothing, if the job already has the item (by the kind's dedupe key)."""
        self.check()
        [item] = self._new_items([value])
        found = self._new_items(verdict.added) if verdict.added else []
        async with self._writing:
            counters = _counted(self.counters, [verdict])
            finished = AddFinishedItem(item, _outcome(0, verdict), counters)
            # What it found, in the same transaction (added even when the item was not: the
            # caller may count them as stored).
            changes = (finished, AddItems(found)) if found else (finished,)
            added, *_ = await self._host.write(self.job, *changes)
            if added:
                self.counters = counters
        return bool(added)

    async def add_findings(self, findings: Iterable[NewFinding]) -> None:
        """Findings about the whole job, as one set, like collected data: each call replaces
        the job-level findings an earlier call wrote, this claim's or a rescued one's, so a
        job resumed after a crash that reruns its final checks does not report them twice.
        Written a chunk of ``ROWS_CHUNK`` per transaction, ``findings`` read as they are
        written (a generator holds no more than a chunk: an audit's site-wide checks over
        100,000 pages): the first chunk replaces, the later ones add. A finding about one
        item goes in its ``ItemResult`` so that it is written once, with the item."""
        await self._in_chunks(findings, SetFindings)

    async def collect(self, subject: str, data: Any) -> None:
        """Store what the job collected about ``subject`` (a domain, a keyword); reads serve
        it as the project's latest once the job completes. Collecting a subject again in the
        same job replaces it."""
        await self.collect_many([(subject, data)])

    async def collect_many(self, rows: Iterable[tuple[str, Any]]) -> None:
        """``collect`` for each (subject, data) of ``rows``, a chunk of ``ROWS_CHUNK`` per
        transaction (one statement each): a rank check's 2,000 keywords in one write, not
        2,000. Within ``rows`` the last of a subject wins."""
        found = iter(rows)
        while chunk := list(islice(found, ROWS_CHUNK)):
            async with self._writing:
                await self._host.write(self.job, Collect(chunk))

    async def published(self, subject: str) -> Any:
        """What the project's latest completed collection of this kind holds about
        ``subject`` (None before the first): what a kind that reports changes between runs
        (a backlink's ``last_changed``) compares with. Never this job's own, unpublished
        data, so a job resumed after a crash compares with the same."""
        return await self._host.published(self.job, subject)

    async def published_rows(
        self, subject: str, table: str, columns: Sequence[str], limit: int
    ) -> list[dict[str, Any]]:
        """The rows of the kind's ``table`` (``columns`` of the first ``limit``, in key order)
        that the job of the project's latest completed collection of ``subject`` wrote: what
        the previous audit crawled (issue 30.3's orphans). ``[]`` before the first."""
        return await self._host.published_rows(self.job, subject, table, columns, limit)

    async def project(self) -> TrackedProject:
        """The job's project as it is now, with what it tracks (its domain, competitors,
        tracked keywords and prompts): e.g. a rank check's share of voice over the tracked
        keywords."""
        return await self._host.project(self.job)

    async def replace_rows(self, table: str, rows: Iterable[dict[str, Any]]) -> None:
        """Replace this job's rows in ``table``, a table its kind owns (``audit_pages``), a
        chunk of ``ROWS_CHUNK`` rows per transaction, ``rows`` read as they are written (a
        generator holds no more than a chunk: 100,000 audit pages): the first replaces
        the job's rows, the later ones add to them. A phase that runs again after a rescue
        starts with a replace, so it leaves one set of rows; the reads show a completed
        job's rows only."""
        self.check()
        await self._in_chunks(rows, lambda chunk, append: ReplaceRows(table, chunk, append))

    async def _in_chunks(
        self, values: Iterable[Any], change: Callable[[list[Any], bool], Change]
    ) -> None:
        """Write ``values`` a chunk of ``ROWS_CHUNK`` per transaction, as ``change(chunk,
        append)``: the first (even empty) replaces, the later ones add. Each chunk is drawn
        in a thread: ``values`` may compute as it goes (an audit's site-wide checks and link
        scores over 100,000 pages, seconds of CPU before a chunk is ready), and on the event
        loop that would hold back the worker's heartbeats, which keep the job's claim."""
        found = iter(values)
        append = False
        while (chunk := await asyncio.to_thread(_take, found, ROWS_CHUNK)) or not append:
            async with self._writing:
                await self._host.write(self.job, change(chunk, append))
            append = True

    async def run_items(
        self, handle: ItemHandler, *, concurrency: int = 1, backlog: int = 0
    ) -> None:
        """Run ``handle`` over every unfinished item, recording each result as it finishes,
        including items added while it runs (``add_items``), until none is left.

        ``concurrency`` items are handled at once. An item keeps its place until its result
        is written, unless ``backlog`` gives its result one of that many places to wait for
        its write in: the next item starts meanwhile, so a slow write (a commit's fsync on
        PostgreSQL) does not idle the handlers. A crash then runs again at most
        ``concurrency + backlog`` items: for items cheap to repeat (a crawl's pages), never
        for work that cannot be undone.

        Stops before the next item when the worker shuts down or the job is cancelled.
        """
        semaphore = asyncio.Semaphore(concurrency)
        waiting = _places(backlog)
        failures: list[BaseException] = []
        in_flight: set[asyncio.Task[None]] = set()
        finished = [0]  # items done so far (their results, and the items they added, written)

        async def one(item: ItemRecord) -> None:
            place = _Place(semaphore)  # given up when recorded, or once waiting in the backlog
            try:
                await self._record_in(item, await handle(item), waiting, place)
            except BaseException as exc:  # collected; re-raised after in-flight items settle
                failures.append(exc)
            finally:
                finished[0] += 1
                self._unrecorded -= 1
                self._changed.set()
                place.give_up()

        after = -1
        interrupted = False
        self._group_target = max(1, concurrency // 2)
        try:
            # Leaving the TaskGroup normally lets items in flight finish and be recorded;
            # raising inside it would cancel them half done.
            async with asyncio.TaskGroup() as group:
                while not failures:
                    if self.stopping:
                        interrupted = True
                        break
                    started, before = 0, finished[0]
                    async for item in self._open_items_after(after):
                        await semaphore.acquire()
                        if failures or self.stopping:
                            semaphore.release()
                            break
                        self._unrecorded += 1
                        task = group.create_task(one(item))
                        in_flight.add(task)
                        task.add_done_callback(in_flight.discard)
                        after, started = item.seq, started + 1
                    if started == 0 and not in_flight:
                        if finished[0] != before:
                            # An item finished while the open ones were read: what it added
                            # may be newer than that read (PostgreSQL lost /b this way).
                            continue
                        break  # nothing open, and nothing running that could add more
                    if started == 0:
                        # Items in flight may add more: look again once one of them is done.
                        await asyncio.wait(set(in_flight), return_when=asyncio.FIRST_COMPLETED)
        finally:
            self._group_target = 1
        if failures:
            raise failures[0]
        if interrupted:
            raise Interrupted("worker is shutting down")

    async def _record_in(
        self,
        item: ItemRecord,
        verdict: ItemResult,
        backlog: asyncio.Semaphore | None,
        place: _Place,
    ) -> None:
        """Record ``verdict``; with a ``backlog``, the item gives up its ``place`` among the
        concurrency once its result has one of the backlog's, and waits there."""
        if backlog is None:
            await self.record(item, verdict)
            return
        async with backlog:
            place.give_up()
            await self.record(item, verdict)

    async def _open_items_after(self, after: int) -> AsyncIterator[ItemRecord]:
        while True:
            page = await self._host.items(self.job, after, ITEM_PAGE, only_open=True)
            if not page:
                return
            for item in page:
                yield item
            after = page[-1].seq


class _Place:
    """An item's place among ``run_items``' concurrency, given back once."""

    def __init__(self, places: asyncio.Semaphore) -> None:
        self._places: asyncio.Semaphore | None = places

    def give_up(self) -> None:
        if self._places is not None:
            self._places.release()
            self._places = None


def _places(count: int) -> asyncio.Semaphore | None:
    """``count`` places to wait in (a backlog), or None for none."""
    return asyncio.Semaphore(count) if count > 0 else None


def _outcome(item_id: int, verdict: ItemResult) -> ItemOutcome:
    return ItemOutcome(
        item_id=item_id,
        failed=verdict.failed,
        outcome=verdict.outcome,
        result=verdict.result,
        error_code=verdict.error_code,
        error_message=verdict.error_message,
        findings=verdict.findings,
    )


def _counted(counters: dict[str, int], verdicts: list[ItemResult]) -> dict[str, int]:
    """``counters`` with ``verdicts`` counted, each under its outcome."""
    counted = dict(counters)
    for verdict in verdicts:
        key = verdict.outcome or ("failed" if verdict.failed else "done")
        counted[key] = counted.get(key, 0) + 1
    return counted


def _copy(exc: BaseException) -> BaseException:
    """One exception per waiting caller (raising one object in several tasks tangles tracebacks)."""
    if isinstance(exc, Interrupted):
        return Interrupted(str(exc))
    return exc
