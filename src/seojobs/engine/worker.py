"""The async worker: claims jobs in batches, runs their handlers, keeps their leases alive.

Database calls run on a small thread pool (the store is synchronous SQLAlchemy Core); the event
loop only schedules. Completions are buffered for a few milliseconds and written in one
statement, the main throughput lever for short jobs (River's BatchCompleter, graphile-worker).
A completion acknowledged only in memory is lost with the process, and the job runs again after
rescue: delivery is at-least-once, as in every queue surveyed in reference/queues.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import socket
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any, ParamSpec, TypeVar

from pydantic import ValidationError

from seojobs.engine import maintenance
from seojobs.engine.context import Interrupted, JobContext, JobFailed
from seojobs.engine.listener import Listener
from seojobs.engine.registry import Registry, UnknownKind
from seojobs.settings import Settings
from seojobs.store import jobs as job_sql
from seojobs.store.coltypes import utcnow
from seojobs.store.db import Database
from seojobs.store.records import ItemOutcome, ItemRecord, JobRecord

log = logging.getLogger("seojobs.worker")

P = ParamSpec("P")
T = TypeVar("T")

COMPLETE_BATCH = 500
COMPLETE_WINDOW = 0.005  # seconds a completion may wait for others to share its statement
CLAIM_BATCH = 500


class Worker:
    def __init__(
        self,
        db: Database,
        settings: Settings,
        registry: Registry,
        *,
        concurrency: int | None = None,
        worker_id: str | None = None,
        clock: Callable[[], datetime] = utcnow,
        maintenance: bool = True,
        shutdown_grace: float | None = None,
    ) -> None:
        self.db = db
        self.settings = settings
        self.registry = registry
        self.concurrency = concurrency or settings.worker_concurrency
        self.worker_id = worker_id or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.clock = clock
        self.run_maintenance = maintenance
        self.shutdown_grace = settings.lease_seconds if shutdown_grace is None else shutdown_grace
        self.executor = ThreadPoolExecutor(max_workers=4, thread_name_prefix="seojobs-db")
        self.running: dict[int, tuple[asyncio.Task[None], JobContext | None, JobRecord]] = {}
        self.claimed_total = 0
        self._stopping = asyncio.Event()
        self._wake = asyncio.Event()
        self._slot_free = asyncio.Event()
        self._completions: list[tuple[int, int, dict[str, Any] | None]] = []
        self._has_completions = asyncio.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._listener: Listener | None = None

    # -- plumbing -------------------------------------------------------------------------

    async def run_db(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.executor, lambda: fn(*args, **kwargs))

    def wake(self) -> None:
        """Thread-safe: a new job may be ready."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._wake.set)

    def stop(self) -> None:
        """Thread-safe request for a graceful stop (what SIGTERM does). Before ``run()``
        has started, it makes ``run()`` return at once without claiming anything."""
        loop = self._loop
        if loop is None:
            self._stopping.set()
        elif not loop.is_closed():
            loop.call_soon_threadsafe(self._stopping.set)

    # -- main -----------------------------------------------------------------------------

    async def run(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._listener = Listener(self.db, self.wake)
        self._listener.start()
        helpers = [
            asyncio.create_task(self._heartbeat_loop(), name="heartbeat"),
            asyncio.create_task(self._completer_loop(), name="completer"),
        ]
        if self.run_maintenance:
            helpers.append(asyncio.create_task(self._maintenance_loop(), name="maintenance"))
        try:
            await self._claim_loop()
            await self._drain()
        finally:
            for task in helpers:
                task.cancel()
            await asyncio.gather(*helpers, return_exceptions=True)
            await self._flush_completions()
            self._listener.stop()
            if self.run_maintenance:
                with contextlib.suppress(Exception):
                    await self.run_db(maintenance.resign, self.db, self.worker_id)
            self.executor.shutdown(wait=True)

    async def _claim_loop(self) -> None:
        while not self._stopping.is_set():
            free = self.concurrency - len(self.running)
            if free <= 0:
                self._slot_free.clear()
                await self._wait_any(self._slot_free, wait_s=None)
                continue
            self._wake.clear()
            limit = min(free, CLAIM_BATCH)
            # Finished jobs ride along with the next claim: one write transaction instead of
            # two, which matters most on SQLite's single writer (Oban Pro's "ack with fetch").
            acks = self._take_completions()
            try:
                claimed = await self.run_db(self._claim, limit, acks)
            except Exception:
                log.exception("claim failed; retrying after the poll interval")
                self._completions[:0] = acks
                self._has_completions.set()
                claimed = []
            for job in claimed:
                self._start(job)
            if len(claimed) < limit:
                await self._wait_any(self._wake, wait_s=self.settings.poll_interval)

    def _take_completions(self) -> list[tuple[int, int, dict[str, Any] | None]]:
        taken = self._completions[:COMPLETE_BATCH]
        del self._completions[:COMPLETE_BATCH]
        return taken

    async def _wait_any(self, event: asyncio.Event, wait_s: float | None) -> None:
        waiters = [
            asyncio.ensure_future(event.wait()),
            asyncio.ensure_future(self._stopping.wait()),
        ]
        try:
            await asyncio.wait(waiters, timeout=wait_s, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in waiters:
                w.cancel()

    def _claim(
        self, limit: int, acks: list[tuple[int, int, dict[str, Any] | None]]
    ) -> list[JobRecord]:
        if not acks and self.db.dialect == "postgresql":
            return self._claim_alone(limit)
        with self.db.write() as conn:
            now = self.clock()
            if acks:
                self._check_completed(acks, job_sql.complete_many(self.db, conn, acks, now))
            return job_sql.claim(
                self.db, conn, self.worker_id, limit, now, self.settings.lease_seconds
            )

    def _claim_alone(self, limit: int) -> list[JobRecord]:
        """A claim with no acks to carry is one statement: on PostgreSQL it runs in autocommit,
        atomic on its own, without a BEGIN and a COMMIT round trip around it. A woken idle
        worker claims this way, so it starts the job two round trips sooner."""
        with self.db.engine.connect() as conn:
            conn = conn.execution_options(isolation_level="AUTOCOMMIT")
            return job_sql.claim(
                self.db, conn, self.worker_id, limit, self.clock(), self.settings.lease_seconds
            )

    @staticmethod
    def _check_completed(
        batch: list[tuple[int, int, dict[str, Any] | None]], done: set[int]
    ) -> None:
        if len(done) != len(batch):
            lost = sorted({job_id for job_id, _a, _r in batch} - done)
            log.warning("jobs %s finished after losing their claim; result dropped", lost)

    def _start(self, job: JobRecord) -> None:
        self.claimed_total += 1
        task = asyncio.create_task(self._execute(job), name=f"job-{job.id}")
        self.running[job.id] = (task, None, job)
        task.add_done_callback(functools.partial(self._finished, job.id))

    def _finished(self, job_id: int, _task: asyncio.Task[None]) -> None:
        self.running.pop(job_id, None)
        self._slot_free.set()

    async def _drain(self) -> None:
        """Graceful stop: jobs finish their current item, then are released."""
        for _task, ctx, _job in list(self.running.values()):
            if ctx is not None:
                ctx.stopping = True
        tasks = [task for task, _ctx, _job in self.running.values()]
        if not tasks:
            return
        _done, pending = await asyncio.wait(tasks, timeout=self.shutdown_grace)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)

    # -- one job --------------------------------------------------------------------------

    async def _execute(self, job: JobRecord) -> None:
        try:
            kind = self.registry.get(job.kind)
            params = kind.params.model_validate(job.params)
        except (UnknownKind, ValidationError) as exc:
            code = "unknown_kind" if isinstance(exc, UnknownKind) else "invalid_params"
            await self._fail(job, code, str(exc))
            return
        ctx = JobContext(self, job, params)
        task, _none, _job = self.running[job.id]
        self.running[job.id] = (task, ctx, job)
        if self._stopping.is_set():
            ctx.stopping = True
        try:
            await kind.handler(ctx)
        except Interrupted:
            await self._release_if_held(job, ctx)
        except JobFailed as exc:
            await self._fail(job, exc.code, exc.message)
        except asyncio.CancelledError:
            # Lease lost (heartbeat found the job gone) or the shutdown grace ran out.
            await asyncio.shield(self._release_if_held(job, ctx))
            raise
        except Exception as exc:
            log.exception("job %s (%s) raised", job.id, job.kind)
            await self._fail(job, "internal_error", f"{type(exc).__name__}: {exc}")
        else:
            self._completions.append((job.id, job.attempt, ctx.result))
            self._has_completions.set()

    async def _fail(self, job: JobRecord, code: str, message: str) -> None:
        def write() -> bool:
            with self.db.write() as conn:
                return job_sql.fail(conn, job.id, job.attempt, code, message, self.clock())

        if not await self.run_db(write):
            log.warning("job %s: could not record failure %s (claim lost)", job.id, code)

    async def _release_if_held(self, job: JobRecord, ctx: JobContext) -> None:
        def write() -> int:
            with self.db.write() as conn:
                return job_sql.release(conn, [(job.id, job.attempt)], self.clock())

        if not ctx.stopping:
            return
        released = await self.run_db(write)
        if released:
            log.info("job %s released for another worker to resume", job.id)
            self.db.wake_local()

    def open_items(self, job_id: int, after: int, limit: int) -> list[ItemRecord]:
        with self.db.read() as conn:
            return job_sql.items_page(conn, job_id, after_seq=after, limit=limit, only_open=True)

    def still_held(self, job_id: int, attempt: int) -> bool:
        with self.db.read() as conn:
            return job_sql.still_held(conn, job_id, attempt)

    async def record_items(
        self, ctx: JobContext, outcomes: list[ItemOutcome], counters: dict[str, int]
    ) -> None:
        def write() -> None:
            with self.db.write() as conn:
                job_sql.record_items(
                    conn, ctx.job.id, ctx.job.attempt, outcomes, counters, self.clock()
                )

        try:
            await self.run_db(write)
        except job_sql.LeaseLost:
            raise Interrupted(f"job {ctx.job.id} is no longer held by this worker") from None

    # -- background loops -----------------------------------------------------------------

    async def _completer_loop(self) -> None:
        while True:
            await self._has_completions.wait()
            if len(self._completions) < COMPLETE_BATCH:
                await asyncio.sleep(COMPLETE_WINDOW)
            await self._flush_completions()

    async def _flush_completions(self) -> None:
        while self._completions:
            batch = self._take_completions()

            def write(batch: list[tuple[int, int, dict[str, Any] | None]] = batch) -> set[int]:
                with self.db.write() as conn:
                    return job_sql.complete_many(self.db, conn, batch, self.clock())

            try:
                done = await self.run_db(write)
            except Exception:
                log.exception("completing %d jobs failed; they will be rescued", len(batch))
                continue
            self._check_completed(batch, done)
        self._has_completions.clear()

    async def _heartbeat_loop(self) -> None:
        interval = max(self.settings.lease_seconds / 3, 0.05)
        while True:
            await asyncio.sleep(interval)
            held = {(job.id, job.attempt) for _t, _c, job in self.running.values()}
            if not held:
                continue

            def beat(held: set[tuple[int, int]] = held) -> set[int]:
                with self.db.write() as conn:
                    return job_sql.heartbeat(
                        conn, self.worker_id, held, self.clock(), self.settings.lease_seconds
                    )

            try:
                still = await self.run_db(beat)
            except Exception:
                log.exception("heartbeat failed")
                continue
            for job_id, _attempt in held - {(j, a) for j, a in held if j in still}:
                entry = self.running.get(job_id)
                if entry is not None:
                    log.warning("job %s: claim lost (cancelled or rescued); stopping it", job_id)
                    entry[0].cancel()

    async def _maintenance_loop(self) -> None:
        while True:
            try:
                await self.run_db(
                    maintenance.run_once, self.db, self.settings, self.worker_id, self.clock()
                )
            except Exception:
                log.exception("maintenance pass failed")
            await asyncio.sleep(self.settings.maintenance_interval)
