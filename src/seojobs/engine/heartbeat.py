"""A worker's heartbeat: the leases of the jobs it runs renewed every ``lease_seconds / 3``
from a thread and a database connection of their own.

It ran on the event loop, its statements through the worker's thread pool, and waited behind
both: the loop, held by a kind's work on it (measured at load 10-15 on two cores: the import
of aiohttp at a kind's first fetch, 0.15 s of CPU, held a new worker's loop 0.7-2.0 s), and
the pool's four threads, busy with the jobs' reads and writes. The lease ran out while its
worker ran the job; the job was rescued, often claimed again by the same worker, its items in
flight run again (a page fetched twice, a batch sent twice to a provider), and past
``max_rescues`` it failed as ``worker_lost``, its worker alive. Here no work of the worker's
is queued ahead of a beat; the beat waits only for the database itself (on SQLite its one
writer, on PostgreSQL a job's write transaction holding the job's row).

What the heartbeat must not do is keep the leases of a worker that makes no progress, whose
event loop (where every job runs) no longer turns: each beat asks the loop for an answer (a
callback), and once a question has gone unanswered for longer than a lease, beats renew
nothing until the loop answers; the leases then run out and are rescued. A job may thus hold
the loop up to about two leases before its claim is lost (it was two thirds of one). A worker
that is gone or stopped (SIGKILL, SIGSTOP), or that cannot reach the database, beats no more.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Callable
from datetime import datetime

from seojobs.store import jobs as job_sql
from seojobs.store.clock import DatabaseClock
from seojobs.store.db import Database, OwnConnection
from seojobs.store.errors import Unavailable

log = logging.getLogger("seojobs.worker")

# (job id, attempt): the claim a lease belongs to.
Claim = tuple[int, int]


class Heartbeat:
    """Started with the worker's loop, stopped before the loop ends. The loop tells it which
    claims the worker holds (:meth:`hold`, :meth:`drop`); ``lost`` is called on the loop with
    the claims a beat found no longer held (the job cancelled, or rescued)."""

    def __init__(
        self,
        db: Database,
        worker_id: str,
        lease_seconds: float,
        clock: Callable[[], datetime],
        db_clock: DatabaseClock | None,
        lost: Callable[[list[Claim]], None],
    ) -> None:
        self.worker_id = worker_id
        self.lease_seconds = lease_seconds
        self.interval = max(lease_seconds / 3, 0.05)
        self._clock = clock
        self._db_clock = db_clock  # read anew at each beat, for the whole worker
        self._lost = lost
        self._conn = OwnConnection(db)
        self._held: dict[int, int] = {}  # job id -> attempt
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._answered = True  # the loop answered the last question
        self._asked_at = 0.0  # time.monotonic() of the question it has not answered
        self._silent = False  # beats renew nothing until the loop answers

    # -- on the event loop ----------------------------------------------------------------

    def hold(self, job_id: int, attempt: int) -> None:
        with self._lock:
            self._held[job_id] = attempt

    def drop(self, job_id: int, attempt: int) -> None:
        """The claim ended here (a later claim of the job by this worker stays held)."""
        with self._lock:
            if self._held.get(job_id) == attempt:
                del self._held[job_id]

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._thread = threading.Thread(target=self._run, name="seojobs-heartbeat", daemon=True)
        self._thread.start()

    def _answer(self) -> None:
        self._answered = True

    # -- anywhere -------------------------------------------------------------------------

    def stop(self) -> None:
        """Blocks until the thread has ended (a beat under way finishes first)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    # -- on its thread --------------------------------------------------------------------

    def _run(self) -> None:
        try:
            while not self._stop.wait(self.interval):
                self.beat()
        finally:
            self._conn.close()

    def beat(self) -> None:
        """Read the database's clock, renew the leases still held (none while the loop has
        not answered for a lease), hand the loop those lost."""
        with self._lock:
            held = set(self._held.items())
        if held and not self._loop_answers():
            held = set()
        try:
            still = self._write(held)
        except Exception:
            log.exception("heartbeat failed")
            return
        lost = sorted(claim for claim in held if claim[0] not in still)
        if lost:
            self._on_loop(self._lost, lost)

    def _loop_answers(self) -> bool:
        """Has the event loop answered within a lease? Asked anew once it has answered."""
        now = time.monotonic()
        if self._answered:
            self._answered = False
            self._asked_at = now
            self._on_loop(self._answer)
        silent = now - self._asked_at > self.lease_seconds
        if silent != self._silent:
            self._silent = silent
            if silent:
                log.warning(
                    "the event loop has not turned for %.1f s: leases not renewed until it does",
                    now - self._asked_at,
                )
            else:
                log.warning("the event loop turns again: leases renewed")
        return not silent

    def _on_loop(self, callback: Callable[..., None], *args: object) -> None:
        loop = self._loop
        # (RuntimeError: the loop closed meanwhile, the worker has ended.)
        if loop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(callback, *args)

    def _write(self, held: set[Claim]) -> set[int]:
        # A connection used before may have died since (a server restart): once more, at
        # once, on a new one, rather than a beat later.
        retry = self._conn.is_open
        while True:
            try:
                return self._renew(held)
            except Unavailable:
                if not retry:
                    raise
                retry = False

    def _renew(self, held: set[Claim]) -> set[int]:
        with self._conn.transaction(write=bool(held)) as conn:
            if self._db_clock is not None:
                self._db_clock.sync(conn)
            if not held:
                return set()
            return job_sql.heartbeat(conn, self.worker_id, held, self._clock(), self.lease_seconds)
