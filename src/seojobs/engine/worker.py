"""The async worker: claims jobs in batches, runs their handlers, keeps their leases alive.

Database calls run on a small thread pool (the store is synchronous SQLAlchemy Core); the event
loop only schedules, but for PostgreSQL's wake-ups: its LISTEN connection and a woken worker's
claim run on the loop itself (``seojobs.store.loopclaim``), with no thread to wake on the way.
The heartbeat that keeps the running jobs' leases has a thread and a connection of its own
(``seojobs.engine.heartbeat``): neither the loop nor the pool's queue holds it back.
Completions are buffered for a few milliseconds and written in one statement, the main
throughput lever for short jobs (River's BatchCompleter, graphile-worker). A completion
acknowledged only in memory is lost with the process, and the job runs again after rescue:
delivery is at-least-once, as in every queue surveyed in reference/queues.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import functools
import gc
import logging
import os
import socket
import threading
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any, ParamSpec, TypeVar, assert_never

from pydantic import ValidationError

from seojobs import telemetry
from seojobs.engine import kindsettings, maintenance, progress
from seojobs.engine.changes import ChangeEvents
from seojobs.engine.context import Interrupted, JobContext, JobFailed
from seojobs.engine.events import event
from seojobs.engine.heartbeat import Claim, Heartbeat
from seojobs.engine.host import (
    AddFinishedItem,
    AddItems,
    Change,
    Collect,
    RecordItems,
    ReplaceRows,
    SetFindings,
)
from seojobs.engine.maintenance import FireSchedule, Standing
from seojobs.engine.registry import Kind, Registry, UnknownKind
from seojobs.logfmt import REQUEST_ID, internal_message
from seojobs.outside import storable
from seojobs.records import ItemRecord, JobRecord, TrackedProject
from seojobs.settings import Settings
from seojobs.store import jobs as job_sql
from seojobs.store import kindrows, tracking
from seojobs.store import results as result_sql
from seojobs.store.clock import DatabaseClock, seconds_until
from seojobs.store.coltypes import utcnow
from seojobs.store.db import MAINTENANCE_CHANNEL, Database
from seojobs.store.errors import Unavailable
from seojobs.store.listener import Listener
from seojobs.store.loopclaim import LoopClaims

log = logging.getLogger("seojobs.worker")


P = ParamSpec("P")
T = TypeVar("T")

COMPLETE_BATCH = 500
COMPLETE_WINDOW = 0.005  # seconds a completion may wait for others to share its statement
CLAIM_BATCH = 500
YOUNG_COLLECTION_EVERY = 10_000  # allocations (CPython's default: 700); see freeze_startup


def freeze_startup() -> None:
    """For a process's entry point, once it is built: everything made at startup (every kind's
    models, the SQLAlchemy metadata, ~140,000 objects) lives as long as the process, so move it
    out of the collector's view. Each full collection walked all of it, and took about a fifth
    of a worker's time on short jobs (bench/queue.py, timed with gc.callbacks). The API does the
    same in its lifespan. Young collections then come every 10,000 allocations instead of 700:
    a job's objects mostly die before one, and the collector's time in a burn-down of short
    jobs fell from 0.17-0.52 s to 0.05-0.08 s of 3-4 s."""
    gc.collect()
    gc.freeze()
    _gen0, gen1, gen2 = gc.get_threshold()
    gc.set_threshold(YOUNG_COLLECTION_EVERY, gen1, gen2)


# glibc's mallopt(3) parameters, and what a worker process sets them to (see tune_malloc).
M_MMAP_THRESHOLD, M_ARENA_MAX = -3, -8
MALLOC_TUNING = (
    ("MALLOC_ARENA_MAX", M_ARENA_MAX, 2),
    ("MALLOC_MMAP_THRESHOLD_", M_MMAP_THRESHOLD, 1 << 20),
)


def tune_malloc() -> None:
    """For a worker process's entry point, before its threads start: glibc's heap kept
    compact (issue 30.6: a 100,000-page audit within 300 MB). Two arenas rather than up to
    eight per CPU (each thread that meets contention gets one, and holds what it freed
    there); blocks of 1 MiB or more always mapped on their own (glibc raises that threshold
    when such a block is freed, after which the growing columns of an audit's site-wide phase
    are copied within the heap on each growth, leaving holes). Measured on a 20,000-page
    audit's site-wide phase (docs/bench/audit.md): 8 MB less at its peak, the heap's free
    bytes 4-6 MB rather than 13-18. A parameter set in the environment (``MALLOC_ARENA_MAX``,
    ``MALLOC_MMAP_THRESHOLD_``) is left as it is; elsewhere than glibc, nothing."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return
    for name, param, value in MALLOC_TUNING:
        if name not in os.environ:
            mallopt(param, value)


class Worker:
    def __init__(
        self,
        db: Database,
        settings: Settings,
        registry: Registry,
        *,
        concurrency: int | None = None,
        worker_id: str | None = None,
        clock: Callable[[], datetime] | None = None,
        maintenance: bool = True,
        shutdown_grace: float | None = None,
        queues: Iterable[str] | None = None,
        fire_schedule: FireSchedule | None = None,
        background: Sequence[Callable[[], Awaitable[None]]] = (),
    ) -> None:
        self.db = db
        self.settings = settings
        self.registry = registry
        self.concurrency = concurrency or settings.worker_concurrency
        self.worker_id = worker_id or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        # Leases, leadership, claims and schedules on the database's clock (store/clock.py),
        # unless a clock is given (tests that move time themselves).
        self._db_clock = DatabaseClock(db) if clock is None else None
        self.clock: Callable[[], datetime] = self._db_clock or clock or utcnow
        self.run_maintenance = maintenance
        self._standing = Standing()  # the leader lease, the last prune
        self.fire_schedule = fire_schedule
        # Loops that live as long as the worker, given by the layers above (webhook delivery).
        self.background = tuple(background)
        # The kinds this worker runs: those of its queues (all, by default; then jobs of kinds
        # nobody registered are claimed too, and fail as unknown_kind rather than wait).
        self.queues = frozenset(queues) if queues is not None else None
        self._served = (
            None
            if self.queues is None
            else sorted(k.name for k in registry.kinds() if k.queue in self.queues)
        )
        self._limited = {k.name: k.concurrency for k in registry.kinds() if k.concurrency}
        # One user's share of this worker's slots (issue 25.4a): the rest stay free for other
        # users' jobs, so one user's long jobs never hold every slot. None: no share.
        reserved = settings.worker_reserved_slots
        self.user_share = max(1, self.concurrency - reserved) if reserved else None
        self._owners: dict[int, int] = {}  # running job -> its user (when a share applies)
        # Running jobs per user, kept as jobs start and end (on the event loop): the claim
        # loop asks before every claim, and counting the owners each time cost a hot path.
        self._held: Counter[int] = Counter()
        self._left_out = False  # the last claim left some user's jobs out
        # When the soonest pending job not due at the last look comes due (None: none, or
        # unknown): an idle claim loop sleeps until then, or its fallback poll.
        self._next_at: datetime | None = None
        self._kind_settings: dict[str, Any] = {}
        # The change events the kinds declare, written with the collections they compare.
        self.changes = ChangeEvents(registry)
        # Whether, and for which running jobs, to look for due job.progress deliveries.
        self.progress = progress.Progress(db)
        self.heartbeat = Heartbeat(
            db,
            self.worker_id,
            settings.lease_seconds,
            self.clock,
            self._db_clock,
            self._claims_lost,
        )
        self.shutdown_grace = settings.lease_seconds if shutdown_grace is None else shutdown_grace
        self.executor = ThreadPoolExecutor(max_workers=4, thread_name_prefix="seojobs-db")
        self.running: dict[int, tuple[asyncio.Task[None], JobContext[Any] | None, JobRecord]] = {}
        self.claimed_total = 0
        self._released: set[int] = set()  # jobs handed back during a graceful stop
        self._stopping = asyncio.Event()
        self._wake = asyncio.Event()
        self._maintenance_woken = asyncio.Event()
        self._slot_free = asyncio.Event()
        self._completions: list[tuple[int, int, dict[str, Any] | None]] = []
        # Completed jobs' run times, counted into the histogram a batch at a time.
        self._timings: list[tuple[tuple[str, str], float]] = []
        self._has_completions = asyncio.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None
        self._listener: Listener | None = None
        # PostgreSQL: claims without completions to carry run on the event loop (see
        # seojobs.store.loopclaim), where the LISTEN connection wakes the claim loop.
        self._loop_claims = LoopClaims(db) if db.dialect == "postgresql" else None

    # -- plumbing -------------------------------------------------------------------------

    async def run_db(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.executor, lambda: fn(*args, **kwargs))

    def wake(self) -> None:
        """Thread-safe: a new job may be ready. On the loop's own thread (PostgreSQL's
        listener) the claim loop is woken directly, without a hand-off through the loop."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        if threading.get_ident() == self._loop_thread:
            self._wake.set()
        else:
            loop.call_soon_threadsafe(self._wake.set)

    def wake_maintenance(self) -> None:
        """Thread-safe: a schedule may tick sooner, or the leader resigned."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._maintenance_woken.set)

    def stop(self) -> None:
        """Thread-safe request for a graceful stop (what SIGTERM does). Before ``run()``
        has started, it makes ``run()`` return at once without claiming anything."""
        loop = self._loop
        if loop is None:
            self._stopping.set()
        elif not loop.is_closed():
            loop.call_soon_threadsafe(self._stop_now)

    def _stop_now(self) -> None:
        self._stopping.set()
        # Whichever of the two the claim loop waits for (_wait_any): it then sees the stop.
        self._wake.set()
        self._slot_free.set()

    # -- main -----------------------------------------------------------------------------

    async def run(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        others = {MAINTENANCE_CHANNEL: self.wake_maintenance} if self.run_maintenance else {}
        self._listener = Listener(self.db, self.wake, others=others)
        self._listener.start()
        with contextlib.suppress(Exception):  # else at the progress loop's next look
            await self.run_db(self.progress.refresh)
        helpers = [
            asyncio.create_task(self._completer_loop(), name="completer"),
            asyncio.create_task(self._progress_loop(), name="progress"),
        ]
        if self.run_maintenance:
            helpers.append(asyncio.create_task(self._maintenance_loop(), name="maintenance"))
        with contextlib.suppress(Exception):  # the store away: 0 until the next heartbeat
            await self.run_db(self._sync_clock)
        helpers += [asyncio.create_task(_forever(loop)) for loop in self.background]
        self.heartbeat.start(self._loop)
        try:
            await self._claim_loop()
            await self._drain()
        finally:
            for task in helpers:
                task.cancel()
            await asyncio.gather(*helpers, return_exceptions=True)
            await asyncio.get_running_loop().run_in_executor(None, self.heartbeat.stop)
            await self._flush_completions()
            await self._listener.aclose()
            if self._loop_claims is not None:
                await self._loop_claims.close()
            if self.run_maintenance:
                with contextlib.suppress(Exception):
                    await self.run_db(maintenance.resign, self.db, self.worker_id)
            self.executor.shutdown(wait=True)

    async def _claim_loop(self) -> None:
        """Claim when woken (a job made, released or rescued: NOTIFY on PostgreSQL, the
        file's change on SQLite, this process's commits), when a slot comes free, when the
        soonest delayed job comes due, and at least every ``poll_interval`` (a fallback: an
        idle worker looked every interval whether or not anything could be due, issue 24.1).
        A wake-up that comes while a claim or a look is on its way is kept (``_wake`` is
        cleared before them): the loop claims again at once."""
        polled = False  # the last wait ran out: no wake-up said a job was ready
        while not self._stopping.is_set():
            free = self.concurrency - len(self.running)
            if free <= 0:
                self._slot_free.clear()
                await self._wait_any(self._slot_free, wait_s=None)
                continue
            self._wake.clear()
            limit, full = self._room(min(free, CLAIM_BATCH))
            self._left_out = bool(full)
            # Finished jobs ride along with the next claim: one write transaction instead of
            # two, which matters most on SQLite's single writer (Oban Pro's "ack with fetch").
            acks = self._take_completions()
            looked = polled and not acks
            try:
                if looked and not await self._look():
                    # An idle worker's poll: a read, instead of a claim (on SQLite one that
                    # takes the one writer's lock for nothing); a job made meanwhile wakes us.
                    claimed = []
                elif acks or self._loop_claims is None:
                    claimed = await self.run_db(self._claim, limit, acks, full)
                else:
                    claimed = await self._claim_on_loop(limit, full)
            except Exception:
                log.exception("claim failed; retrying after the poll interval")
                self._completions[:0] = acks
                self._has_completions.set()
                claimed, looked, self._next_at = [], True, None
            for job in claimed:
                self._start(job)
            if claimed:  # the claim counter, per kind once per batch
                for kind, n in Counter(job.kind for job in claimed).items():
                    _claims(kind).inc(n)
            polled = False
            if len(claimed) < limit:
                if not looked and not self._wake.is_set():
                    # Nothing more to take now: when does the soonest delayed job come due?
                    # (A job made since the claim woke us: the loop claims again at once.)
                    try:
                        await self._look()
                    except Exception:
                        self._next_at = None  # the fallback poll; the claim says what failed
                await self._wait_any(self._wake, wait_s=self._pause())
                polled = not self._wake.is_set()

    async def _look(self) -> bool:
        """Is some pending job due (what a claim could take, and more: any kind, any user)?
        Notes when the soonest pending job due later comes due (``_next_at``). On
        PostgreSQL on the claim connection, on the loop, as the claims."""
        if self._loop_claims is None:
            due, self._next_at = await self.run_db(self._look_sync)
            return due
        now = self.clock()
        due, self._next_at = await self._loop_claims.run(lambda c: job_sql.look_async(c, now))
        return due

    def _look_sync(self) -> tuple[bool, datetime | None]:
        with self.db.read() as conn:
            return job_sql.look(conn, self.clock())

    def _pause(self) -> float:
        """Until the next look: the fallback poll, or less when a delayed job comes due."""
        return seconds_until(self.clock(), self.settings.poll_interval, self._next_at)

    def _take_completions(self) -> list[tuple[int, int, dict[str, Any] | None]]:
        if self._timings:
            telemetry.JOB_DURATION.add(self._timings)
            self._timings = []
        taken = self._completions[:COMPLETE_BATCH]
        del self._completions[:COMPLETE_BATCH]
        return taken

    async def _wait_any(self, event: asyncio.Event, wait_s: float | None) -> None:
        """Until ``event`` is set or ``wait_s`` has passed; a stop sets ``event`` too
        (``_stop_now``). One wait on the loop, where a task per event and ``asyncio.wait``
        cost a woken worker four more tasks and loop turns before its claim."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(wait_s):
                await event.wait()

    def _room(self, limit: int) -> tuple[int, list[int]]:
        """How many jobs the next claim may take, and the users it must leave out: those who
        hold their share of this worker's slots. A claim takes at most what the busiest user
        still in the running may add, so no user ends up over the share whatever it claims."""
        if self.user_share is None:
            return limit, []
        held = self._held
        full = sorted(user for user, n in held.items() if n >= self.user_share)
        busiest = max((n for n in held.values() if n < self.user_share), default=0)
        return min(limit, self.user_share - busiest), full

    def _claim(
        self,
        limit: int,
        acks: list[tuple[int, int, dict[str, Any] | None]],
        full: list[int] | None = None,
    ) -> list[JobRecord]:
        plan = self._claim_plan(limit)
        if not acks and self.db.dialect == "postgresql":
            # Each claim statement is atomic on its own (and they claim distinct jobs): in
            # autocommit, without a BEGIN and a COMMIT round trip around it, a woken idle
            # worker starts its job two round trips sooner. (The claim loop runs these on the
            # event loop instead: _claim_on_loop.)
            with self.db.autocommit() as conn:
                return self._claim_with(conn, plan, self.clock(), limit, full or [])
        with self.db.write() as conn:
            now = self.clock()
            if acks:
                self._check_completed(
                    acks, job_sql.complete_many(self.db, conn, acks, now, self.changes)
                )
            return self._claim_with(conn, plan, now, limit, full or [])

    async def _claim_on_loop(self, limit: int, full: list[int]) -> list[JobRecord]:
        """PostgreSQL, nothing to acknowledge: the claim statements in autocommit on the
        event loop (one round trip each; no thread to wake on the way in or out)."""
        assert self._loop_claims is not None
        plan = self._claim_plan(limit)

        async def claim(conn: Any) -> list[JobRecord]:
            now, lease = self.clock(), self.settings.lease_seconds
            claimed: list[JobRecord] = []
            owners: dict[int, int] | None = {} if self.user_share is not None else None
            for kinds, exclude, most in plan:
                most = min(most, limit - len(claimed))
                claimed += await job_sql.claim_async(
                    conn, self.worker_id, most, now, lease, **_filters(kinds, exclude, full, owners)
                )
            if owners:
                self._owners.update(owners)
            return claimed

        return await self._loop_claims.run(claim)

    def _claim_with(
        self,
        conn: Any,
        plan: list[tuple[list[str] | None, list[str], int]],
        now: datetime,
        limit: int,
        full: list[int],
    ) -> list[JobRecord]:
        claimed: list[JobRecord] = []
        owners: dict[int, int] | None = {} if self.user_share is not None else None
        lease = self.settings.lease_seconds
        for kinds, exclude, most in plan:
            most = min(most, limit - len(claimed))
            claimed += job_sql.claim(
                self.db,
                conn,
                self.worker_id,
                most,
                now,
                lease,
                **_filters(kinds, exclude, full, owners),
            )
        if owners:
            self._owners.update(owners)
        return claimed

    def _claim_plan(self, limit: int) -> list[tuple[list[str] | None, list[str], int]]:
        """``(kinds, excluded kinds, how many)`` per claim statement: one for the kinds
        without a concurrency cap, one per capped kind that has a free slot."""
        if not self._limited:
            return [(self._served, [], limit)]
        running: dict[str, int] = {}
        for _task, _ctx, job in self.running.values():
            running[job.kind] = running.get(job.kind, 0) + 1
        capped = sorted(self._limited)
        plan = [(self._served, capped, limit)]
        for name in capped:
            if self._served is not None and name not in self._served:
                continue
            free = self._limited[name] - running.get(name, 0)
            if free > 0:
                plan.append(([name], [], min(free, limit)))
        return plan

    @staticmethod
    def _check_completed(
        batch: list[tuple[int, int, dict[str, Any] | None]], done: set[int]
    ) -> None:
        if len(done) != len(batch):
            lost = sorted({job_id for job_id, _a, _r in batch} - done)
            log.warning("jobs %s finished after losing their claim; result dropped", lost)

    def _start(self, job: JobRecord) -> None:
        stale = self.running.get(job.id)
        if stale is not None:
            # An earlier attempt of this job still runs here: its claim ran out (heartbeats
            # late on a loaded machine), the job was rescued and this worker claimed it again.
            # That attempt can write nothing more; it stops, and the new claim takes its place
            # (its user's slot included). Before, its end removed the new claim from
            # ``running``: no heartbeat kept it, it was rescued again and again while it ran,
            # each rescue sending its batch in flight twice, and failed as worker_lost.
            log.warning(
                "job %s: claimed again after a rescue; its attempt %s here stops",
                job.id,
                stale[2].attempt,
            )
            stale[0].cancel()
        else:
            user = self._owners.get(job.id)
            if user is not None:
                self._held[user] += 1
        self.claimed_total += 1
        task = asyncio.create_task(self._execute(job), name=f"job-{job.id}")
        self.running[job.id] = (task, None, job)
        self.heartbeat.hold(job.id, job.attempt)
        task.add_done_callback(functools.partial(self._finished, job.id))

    def _finished(self, job_id: int, task: asyncio.Task[None]) -> None:
        entry = self.running.get(job_id)
        if entry is None or entry[0] is not task:
            return  # an attempt whose claim this worker took again (_start)
        del self.running[job_id]
        self.heartbeat.drop(job_id, entry[2].attempt)
        self.progress.next_at.pop(job_id, None)
        user = self._owners.pop(job_id, None)
        if user is not None:
            left = self._held[user] - 1
            if left > 0:
                self._held[user] = left
            else:
                del self._held[user]
        if self._left_out:  # that user may be under the share again: claim without waiting
            self._wake.set()
        if entry[2].kind in self._limited:
            # A slot of a capped kind came free: what its cap left out of a claim (this job's
            # own claim may have) can start. Nothing else wakes an idle claim loop for it on
            # PostgreSQL (the end is written with the next claim). One claim per capped job.
            self._wake.set()
        self._slot_free.set()

    async def _drain(self) -> None:
        """Graceful stop: jobs finish their current item, then are released."""
        in_flight = sorted(self.running)
        event(log, "shutdown", worker=self.worker_id, in_flight=in_flight)
        self._released.clear()
        for _task, ctx, _job in list(self.running.values()):
            if ctx is not None:
                ctx.stopping = True
        tasks = [task for task, _ctx, _job in self.running.values()]
        cancelled = 0
        if tasks:
            _done, pending = await asyncio.wait(tasks, timeout=self.shutdown_grace)
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
            cancelled = len(pending)
        event(
            log,
            "shutdown_done",
            worker=self.worker_id,
            in_flight=in_flight,
            released=sorted(self._released),
            ended=sorted(set(in_flight) - self._released),
            cut_at_grace=cancelled,
        )

    # -- one job --------------------------------------------------------------------------

    async def _execute(self, job: JobRecord) -> None:
        # The request that made the job, on every log line written for it: this task runs in
        # its own copy of the context (asyncio.create_task), the tasks it starts inherit it.
        REQUEST_ID.set(job.request_id)
        try:
            kind = self.registry.get(job.kind)
            params = kind.params.model_validate(job.params)
            kind_settings = self._settings_of(kind)
        except (UnknownKind, ValidationError) as exc:
            code = "unknown_kind" if isinstance(exc, UnknownKind) else "invalid_params"
            await self._fail(job, code, str(exc))
            return
        ctx: JobContext[Any] = JobContext(
            self,
            job,
            params,
            settings=self.settings,
            kind_settings=kind_settings,
            new_items=kind.new_items,
        )
        task = self.running[job.id][0]
        if task is asyncio.current_task():  # else a later claim of the job took its place
            self.running[job.id] = (task, ctx, job)
        if self._stopping.is_set():
            ctx.stopping = True
        started = time.monotonic()
        event(
            log, "job_start", job=job.id, kind=job.kind, attempt=job.attempt, items=job.items_total
        )
        try:
            async with asyncio.timeout(kind.timeout):
                await kind.handler(ctx)
        except Interrupted:
            await self._release_if_held(job, ctx)
        except JobFailed as exc:
            await self._fail(job, exc.code, exc.message, ctx, started)
        except TimeoutError:
            message = f"the job ran longer than {kind.timeout:g} s"
            await self._fail(job, "timeout", message, ctx, started)
        except asyncio.CancelledError:
            # Lease lost (heartbeat found the job gone) or the shutdown grace ran out.
            await asyncio.shield(self._release_if_held(job, ctx))
            raise
        except Exception:
            message = internal_message(log, f"job {job.id} ({job.kind}) raised")
            await self._fail(job, "internal_error", message, ctx, started)
        else:
            self._completions.append((job.id, job.attempt, storable(ctx.result)))
            self._has_completions.set()
            self._timings.append(((job.kind, "completed"), time.monotonic() - started))
            if log.isEnabledFor(logging.INFO):  # its fields cost a sum per job otherwise
                event(log, "job_end", outcome="completed", **_run_fields(job, ctx, started))

    def _settings_of(self, kind: Kind[Any]) -> Any:
        """The kind's own settings, read from the environment once per worker (values the
        central settings were given for it win: ``seojobs.engine.kindsettings``)."""
        if kind.settings is None:
            return None
        if kind.name not in self._kind_settings:
            self._kind_settings[kind.name] = kindsettings.build(kind.settings, self.settings)
        return self._kind_settings[kind.name]

    async def _fail(
        self,
        job: JobRecord,
        code: str,
        message: str,
        ctx: JobContext[Any] | None = None,
        started: float | None = None,
    ) -> None:
        def write() -> bool:
            with self.db.write() as conn:
                return job_sql.fail(conn, job.id, job.attempt, code, message, self.clock())

        message = storable(message)
        try:
            recorded = await self.run_db(write)
        except Unavailable:
            raise  # the store is away: the job is rescued once it is back
        except Exception:  # the message could not be written: the failure still must be
            code, message = "internal_error", internal_message(log, f"failing job {job.id} raised")
            recorded = await self.run_db(write)
        if started is not None:
            telemetry.JOB_DURATION.add([((job.kind, "failed"), time.monotonic() - started)])
        fields = (
            _run_fields(job, ctx, started)
            if ctx is not None and started is not None
            else {"job": job.id}
        )
        event(
            log,
            "job_end",
            logging.WARNING,
            outcome="failed" if recorded else "failed_claim_lost",
            code=code,
            **fields,
            message=message[:200],
        )

    async def _release_if_held(self, job: JobRecord, ctx: JobContext[Any]) -> None:
        def write() -> int:
            with self.db.write() as conn:
                return job_sql.release(conn, [(job.id, job.attempt)], self.clock())

        if not ctx.stopping:
            return
        released = await self.run_db(write)  # it wakes the workers (job_sql.release)
        if released:
            self._released.add(job.id)
            event(log, "job_released", job=job.id, kind=job.kind, items=_items(ctx))

    # -- JobHost (engine/host.py): what a running job's context asks of the store -----------

    async def items(
        self, job: JobRecord, after_seq: int, limit: int, *, only_open: bool
    ) -> list[ItemRecord]:
        def read() -> list[ItemRecord]:
            with self.db.read_statement() as conn:
                return job_sql.items_page(
                    conn, job.id, after_seq=after_seq, limit=limit, only_open=only_open
                )

        return await self.run_db(read)

    async def still_held(self, job: JobRecord) -> bool:
        def read() -> bool:
            with self.db.read_statement() as conn:
                return job_sql.still_held(conn, job.id, job.attempt)

        return await self.run_db(read)

    async def published(self, job: JobRecord, subject: str) -> Any:
        def read() -> Any:
            with self.db.read() as conn:
                found = result_sql.latest(conn, job.project_id, job.kind, subject)
            return None if found is None else found.data

        return await self.run_db(read)

    async def published_rows(
        self, job: JobRecord, subject: str, table: str, columns: Sequence[str], limit: int
    ) -> list[dict[str, Any]]:
        def read() -> list[dict[str, Any]]:
            with self.db.read() as conn:
                found = result_sql.latest(conn, job.project_id, job.kind, subject)
                if found is None or found.job_id is None:
                    return []
                return kindrows.rows_of(conn, table, found.job_id, columns, limit)

        return await self.run_db(read)

    async def project(self, job: JobRecord) -> TrackedProject:
        def read() -> TrackedProject:
            with self.db.read() as conn:
                return tracking.tracked_project(conn, job.project_id)

        return await self.run_db(read)

    async def write(self, job: JobRecord, *changes: Change) -> list[Any]:
        """Every change in one transaction, fenced by the job's claim; a lost claim stops the
        job (``Interrupted``) and none of them is kept."""

        # What came from outside, storable on both stores; a group of results is made so by
        # results.record (on PostgreSQL as it is encoded: one pass for the look and the JSON).
        cleaned = tuple(c if isinstance(c, RecordItems) else storable(c) for c in changes)
        # A group of results alone is one statement on PostgreSQL (results.record), its own
        # transaction there; anything else takes a transaction of its own.
        one = len(cleaned) == 1 and isinstance(cleaned[0], RecordItems)

        def run() -> list[Any]:
            with self.db.write_statement() if one else self.db.write() as conn:
                now = self.clock()
                return [self._apply(conn, job, change, now) for change in cleaned]

        try:
            written = await self.run_db(run)
        except job_sql.LeaseLost:
            raise Interrupted(f"job {job.id} is no longer held by this worker") from None
        if any(isinstance(change, RecordItems) for change in cleaned):
            await self._progress(job)
        return written

    async def _progress(self, job: JobRecord) -> None:
        """``job.progress`` for the endpoints that ask (engine.progress), looked for at most
        once per CHECK_SECONDS per job; a failure costs that event, never the job."""
        if not self.progress.due(job.id, time.monotonic()):
            return  # the usual case, decided on the event loop
        try:
            await self.run_db(progress.progress_due, self.db, job.id, self.clock())
        except Exception:
            log.exception("job.progress of job %s not written", job.id)

    async def _progress_loop(self) -> None:
        """Whether any endpoint asks for job.progress, looked up now and every CHECK_SECONDS
        (off the write path: a group of results stays one round trip)."""
        while True:
            await asyncio.sleep(progress.CHECK_SECONDS)
            try:
                await self.run_db(self.progress.refresh)
            except Exception:
                log.exception("looking for job.progress endpoints failed; trying again")

    def _apply(self, conn: Any, job: JobRecord, change: Change, now: datetime) -> Any:
        match change:
            case RecordItems(outcomes, counters, added):
                return result_sql.record(
                    self.db, conn, job.id, job.attempt, outcomes, counters, added, now
                )
            case AddItems(items):
                return result_sql.add_items(self.db, conn, job.id, job.attempt, items, now)
            case AddFinishedItem(item, outcome, counters):
                return result_sql.add_finished_item(
                    self.db, conn, job.id, job.attempt, item, outcome, counters, now
                )
            case SetFindings(findings, append):
                return result_sql.set_job_findings(
                    conn, job.id, job.attempt, findings, now, append=append
                )
            case Collect(rows):
                return result_sql.collect(
                    self.db,
                    conn,
                    job_id=job.id,
                    attempt=job.attempt,
                    project_id=job.project_id,
                    kind=job.kind,
                    rows=rows,
                    now=now,
                )
            case ReplaceRows(table, rows, append):
                return kindrows.replace(conn, job.id, job.attempt, table, rows, now, append=append)
            case _:
                assert_never(change)

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
                # One statement on PostgreSQL when no job has a result and no kind declares
                # change events (whose rows must share its transaction): no BEGIN and COMMIT
                # round trips around it.
                one = job_sql.complete_in_one(self.db, batch) and not self.changes.events
                with self.db.write_statement() if one else self.db.write() as conn:
                    return job_sql.complete_many(self.db, conn, batch, self.clock(), self.changes)

            try:
                done = await self.run_db(write)
            except Exception:
                log.exception("completing %d jobs failed; they will be rescued", len(batch))
                continue
            self._check_completed(batch, done)
        self._has_completions.clear()

    def _claims_lost(self, lost: list[Claim]) -> None:
        """The heartbeat found these claims no longer held: their jobs stop."""
        for job_id, attempt in lost:
            entry = self.running.get(job_id)
            # (A later claim of the job by this worker, made meanwhile, is not the lost one.)
            if entry is not None and entry[2].attempt == attempt:
                log.warning("job %s: claim lost (cancelled or rescued); stopping it", job_id)
                entry[0].cancel()

    def _sync_clock(self) -> None:
        if self._db_clock is not None:
            self._db_clock.sync()

    def _maintain(self) -> maintenance.MaintenanceReport:
        # The leader's lease and the ticks due: to the database's time, as the heartbeat
        # last read it (a pass read it anew each time: a third of an idle pass's reads, five
        # a second in the tests' workers; issue 24.1), or read now when it is older.
        if self._db_clock is not None:
            self._db_clock.sync_unless_within(self.heartbeat.interval)
        return maintenance.run_once(
            self.db,
            self.settings,
            self.worker_id,
            self.clock(),
            self.fire_schedule,
            self._standing,
        )

    async def _maintenance_loop(self) -> None:
        """A pass now, then when the soonest thing it read comes due (``next_at``: a lease
        runs out, a schedule ticks, the leader's lease is to be renewed or can be taken,
        pruning), when woken (``MAINTENANCE_CHANNEL``: a schedule made, enabled or moved;
        the leader resigned), and at the latest ``lease_seconds`` after the last (a lease
        claimed since runs out no sooner); never sooner than ``maintenance_interval`` after
        the last. An idle worker passed every interval whatever could be due (issue 24.1)."""
        loop = asyncio.get_running_loop()
        while True:
            started = loop.time()
            self._maintenance_woken.clear()  # before the pass: a wake-up meanwhile is kept
            try:
                report = await self.run_db(self._maintain)
            except Exception:
                log.exception("maintenance pass failed")
                pause = 0.0  # again after the interval
            else:
                pause = seconds_until(self.clock(), self.settings.lease_seconds, report.next_at)
            await self._wait_any(self._maintenance_woken, wait_s=pause)
            rest = started + self.settings.maintenance_interval - loop.time()
            if rest > 0:
                await asyncio.sleep(rest)


def _filters(
    kinds: list[str] | None, exclude: list[str], full: list[int], owners: dict[int, int] | None
) -> job_sql.ClaimFilters:
    """One claim statement's filters: its kinds, the users left out, the owners to read."""
    return {"kinds": kinds, "exclude": exclude, "exclude_users": full, "owners": owners}


# A metric's series per label values, looked up once: labels() locks and checks every call.
@functools.cache
def _claims(kind: str) -> Any:
    return telemetry.CLAIMS.labels(kind)


async def _forever(loop: Callable[[], Awaitable[None]]) -> None:
    await loop()


def _items(ctx: JobContext[Any]) -> int:
    """Items the job has finished so far, every run of it included."""
    return sum(ctx.counters.values())


def _run_fields(job: JobRecord, ctx: JobContext[Any], started: float) -> dict[str, Any]:
    return {
        "job": job.id,
        "kind": job.kind,
        "duration_s": time.monotonic() - started,
        "items": _items(ctx),
        "items_total": job.items_total,
    }
