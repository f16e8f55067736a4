"""Waiting on many jobs at once: one staggered timer, batched reads, a share of the budget.

Seed 000 warns that one polling loop per job burns the shared 120 requests/minute (20 jobs
every 10 s already use all of it). This scheduler instead reads the open jobs of a kind with
one request per 1,000 (the v1 list with ``ids=``). The requests of a round are spread evenly
over the round's period on a single timer ("staggered") rather than fired in a burst.

How often: a round takes ``min_period`` while jobs are moving and stretches x1.5 per quiet
round up to ``max_period`` (long jobs don't cost a request every few seconds for hours). Two
floors keep it inside the budget: at most ``share`` of the server's announced limit
(``RateLimit-Policy``, 120/minute when absent), and, when the server says only ``r`` requests
are left for ``t`` seconds (``RateLimit``), at most ``share`` of those ``r`` within ``t`` --
which also leaves room for other processes on the same key. A 429 pauses the timer for at
least its Retry-After and halves ``share``; it recovers slowly over clean rounds.

A submission created with ``checker`` is followed to its scheduled check: it stays open until
the check has finished (not polled at all before ``scheduled_check_at``), then the check itself
is read and reported through ``on_done`` as well.

Jobs of any other type are added as ``ANY_JOB`` and read on ``/v1/jobs/{id}``, which has no
batch read: one request per job per round, spread over the round like the batches.
"""

from __future__ import annotations

import contextlib
import logging
import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from seojobs.client import errors
from seojobs.client._base import KIND_PATH, MAX_IDS, chunks, kind_of
from seojobs.client.models import AnyJob, SubmitJob
from seojobs.client.sync import Client

log = logging.getLogger("seojobs.client")

DEFAULT_LIMIT = 120
DEFAULT_WINDOW = 60.0
MIN_SHARE = 0.05
STRETCH = 1.5  # period growth per quiet round
RECOVER = 1.1  # share growth per clean round, back up to the initial share


ANY_JOB = "job"  # a job of any type, read on /v1/jobs/{id}
# A lone job is first read with long polls (Prefer: wait), at most this many, this long each,
# one a second at most (the server answers as soon as the job changes: its progress too).
LONG_POLL_ROUNDS = 10
LONG_POLL_SECONDS = 20.0
LONG_POLL_SPACING = 1.0


def read_as(kind: str) -> str:
    """How a job of this type is read: the index kinds in v1's batches, the rest one by one."""
    return kind if kind in KIND_PATH else ANY_JOB


def _utcnow() -> datetime:
    return datetime.now(UTC)


def _batch(kind: str) -> int:
    return 1 if kind == ANY_JOB else MAX_IDS


@dataclass
class Tracked:
    kind: str
    job_id: int
    last: AnyJob | None = None
    follow_up_of: int | None = None  # for a scheduled check: its submission's id
    not_before: float | None = None  # clock time before which it is not read (check not due)


@dataclass
class Stats:
    requests: int = 0  # HTTP requests made, retries included
    rate_limited: int = 0  # 429 answers seen
    errors: int = 0  # reads that failed after the client's own retries
    finished: int = 0
    rounds: int = 0
    missing: int = 0  # ids the server no longer knows (pruned, or not this key's)
    periods: list[float] = field(default_factory=list)  # every sleep between two ticks


class Scheduler:
    def __init__(
        self,
        client: Client,
        *,
        share: float = 0.5,
        min_period: float = 5.0,
        max_period: float = 60.0,
        on_done: Callable[[AnyJob], None] | None = None,
        on_update: Callable[[AnyJob], None] | None = None,
        wall: Callable[[], datetime] = _utcnow,
    ) -> None:
        if not 0 < share <= 1:
            raise ValueError("share: must be in (0, 1]")
        if not 0 < min_period <= max_period:
            raise ValueError("periods: need 0 < min_period <= max_period")
        self.client = client
        self.share = share
        self.initial_share = share
        self.min_period = min_period
        self.max_period = max_period
        self.on_done = on_done
        self.on_update = on_update
        self.wall = wall
        self.open: dict[tuple[str, int], Tracked] = {}
        self.done: dict[tuple[str, int], AnyJob] = {}
        self.missing: set[tuple[str, int]] = set()
        self.stats = Stats()
        self.period = min_period
        self._queue: deque[tuple[str, list[int]]] = deque()
        self._round_size = 0
        self._round_changed = False
        self._round_limited = False
        self._failures = 0

    # -- what to watch -----------------------------------------------------------------

    def add(self, kind: str, job_id: int, *, follow_up_of: int | None = None) -> None:
        """Watch a job: ``kind`` an index kind, or ANY_JOB for a job of any type."""
        kind = kind if kind == ANY_JOB else kind_of(kind)
        key = (kind, job_id)
        if key not in self.done:
            self.open.setdefault(key, Tracked(kind, job_id, follow_up_of=follow_up_of))

    @property
    def pending(self) -> int:
        return len(self.open)

    # -- budget ------------------------------------------------------------------------

    def gap(self, now: float | None = None) -> float:
        """The shortest time between two of our requests that keeps us within our share."""
        now = self.client.clock() if now is None else now
        state = self.client.rate_limit
        limit = state.limit or DEFAULT_LIMIT
        window = state.window or DEFAULT_WINDOW
        gap = window / (self.share * limit)
        left = state.reset_left(now)
        if state.remaining is not None and left is not None:
            spare = self.share * state.remaining
            gap = max(gap, left / spare if spare > 0 else left)
        return gap

    def requests_per_round(self) -> int:
        counts: dict[str, int] = {}
        for tracked in self.open.values():
            counts[tracked.kind] = counts.get(tracked.kind, 0) + 1
        return sum(math.ceil(n / _batch(kind)) for kind, n in counts.items())

    def budget_period(self) -> float:
        """The shortest round that keeps a round of reads within our share of the budget."""
        return self.requests_per_round() * self.gap()

    # -- reading -----------------------------------------------------------------------

    def _due(self, now: float) -> list[tuple[str, list[int]]]:
        by_kind: dict[str, list[int]] = {}
        for tracked in self.open.values():
            if tracked.not_before is None or tracked.not_before <= now:
                by_kind.setdefault(tracked.kind, []).append(tracked.job_id)
        return [
            (kind, chunk)
            for kind, ids in sorted(by_kind.items())
            for chunk in chunks(sorted(ids), _batch(kind))
        ]

    def _read(self, kind: str, ids: list[int], *, drop_missing: bool = True) -> bool:
        """One batched read (one request for up to 1,000 ids). True if any job changed.

        Ids the server does not return (pruned after their retention, or not this key's jobs)
        would never finish: they go into ``missing`` and, with ``drop_missing``, stop being
        read.
        """
        before = self.client.requests_sent
        try:
            jobs = self._fetch(kind, ids)
        finally:
            self.stats.requests += self.client.requests_sent - before
        changed = False
        seen = set()
        for job in jobs:
            seen.add(job.job_id)
            changed |= self._update(kind, job)
        for job_id in sorted(set(ids) - seen):
            key = (kind, job_id)
            if key not in self.missing:
                log.warning("%s job %s is unknown to the server", kind, job_id)
                self.missing.add(key)
                self.stats.missing += 1
            if drop_missing:
                self.open.pop(key, None)
        return changed

    def _fetch(self, kind: str, ids: list[int]) -> list[AnyJob]:
        if kind != ANY_JOB:
            return list(
                self.client.list_pages(kind, ids, None, MAX_IDS, everything=True, retry_429=False)
            )
        found: list[AnyJob] = []
        for job_id in ids:
            with contextlib.suppress(errors.NotFoundError):  # reported as missing
                found.append(self.client.jobs.get(job_id, retry_429=False))
        return found

    def poll_once(self) -> bool:
        """Read every due job once, back to back. True if any job changed.

        Unknown ids stay in ``open`` (with ``last`` None) for the caller to inspect; they are
        listed in ``missing`` and dropped by the timer (``tick``/``run``).
        """
        changed = False
        for kind, ids in self._due(self.client.clock()):
            changed |= self._read(kind, ids, drop_missing=False)
        return changed

    def read_now(self, job_ids: list[int]) -> None:
        """Read these open jobs at once, out of the rounds (a webhook said they ended); ids
        not open are ignored. Errors are left to the rounds, which read them anyway."""
        by_kind: dict[str, list[int]] = {}
        for kind, job_id in self.open:
            if job_id in job_ids:
                by_kind.setdefault(kind, []).append(job_id)
        for kind, ids in sorted(by_kind.items()):
            with contextlib.suppress(errors.SeojobsError):
                self._read(kind, ids, drop_missing=False)

    def long_poll(self, wait: float, rounds: int = LONG_POLL_ROUNDS) -> None:
        """Before the rounds, for a lone job: read it asking the server to hold the answer
        until the job changes (``Prefer: wait``), up to ``rounds`` times (one a second at
        most) while it is open. A
        job that finishes at once is so reported at once, not a period later; the rounds
        (the poll hints' schedule) take over after. Errors are left to the rounds."""
        if len(self.open) != 1 or wait < 1:
            return
        [(kind, job_id)] = list(self.open)
        began = self.client.clock()
        for round_ in range(rounds):
            if round_:
                self.client.sleep(max(0.0, LONG_POLL_SPACING - (self.client.clock() - began)))
                began = self.client.clock()
            before = self.client.requests_sent
            try:
                if kind == ANY_JOB:
                    job: AnyJob = self.client.jobs.get(job_id, long_poll=wait, retry_429=False)
                else:
                    job = self.client.get(kind, job_id, long_poll=wait, retry_429=False)
            except errors.SeojobsError:
                return
            finally:
                self.stats.requests += self.client.requests_sent - before
            self._update(kind, job)
            if (kind, job_id) not in self.open:
                return

    def _update(self, kind: str, job: AnyJob) -> bool:
        key = (kind, job.job_id)
        tracked = self.open.get(key)
        if tracked is None:
            return False
        before = tracked.last
        tracked.last = job
        moved = before is None or _fingerprint(before) != _fingerprint(job)
        if moved and self.on_update:
            self.on_update(job)
        if not job.is_terminal or self._awaiting_follow_up(tracked, job):
            return moved
        del self.open[key]
        self.done[key] = job
        self.stats.finished += 1
        if self.on_done:
            self.on_done(job)
        return True

    def _awaiting_follow_up(self, tracked: Tracked, job: AnyJob) -> bool:
        """A finished submission with a scheduled check stays open until the check ends (and
        is not read again before the check is due); then the check is watched too."""
        if not isinstance(job, SubmitJob) or not job.scheduled_check_days:
            return False
        if job.scheduled_check_status in ("pending", "processing"):
            tracked.not_before = None
            due = job.scheduled_check_at
            if job.scheduled_check_status == "pending" and due is not None:
                if due.tzinfo is None:
                    due = due.replace(tzinfo=UTC)
                ahead = (due - self.wall()).total_seconds()
                if ahead > 0:
                    tracked.not_before = self.client.clock() + ahead
            return True
        # Finished, or never created (the submission was refused): nothing more to wait for.
        if job.scheduled_check_run_id is not None:
            self.add("index_check", job.scheduled_check_run_id, follow_up_of=job.job_id)
        return False

    # -- the timer ---------------------------------------------------------------------

    def tick(self, now: float | None = None) -> float:
        """Make at most one read; return the seconds until the next tick."""
        now = self.client.clock() if now is None else now
        if not self._queue:
            self._queue.extend(self._due(now))
            self._round_size = len(self._queue)
            self._round_changed = self._round_limited = False
            if not self._queue:
                return self._until_due(now)
        kind, ids = self._queue[0]
        ids = [i for i in ids if (kind, i) in self.open]
        if not ids:
            self._queue.popleft()
            if not self._queue:
                self._end_round()
            return 0.0
        try:
            changed = self._read(kind, ids)
        except errors.RateLimitedError as exc:
            # The chunk stays at the head of the round; everything waits.
            self.stats.rate_limited += 1
            self._round_limited = True
            self.share = max(self.share / 2, MIN_SHARE)
            return max(exc.retry_after or 0.0, self.gap(), self.period)
        except (errors.TransportError, errors.ServerError):
            self.stats.errors += 1
            self._failures += 1
            backoff = min(self.max_period, self.period * 2.0 ** min(self._failures, 16))
            return max(backoff, self.gap())
        self._failures = 0
        self._queue.popleft()
        self._round_changed |= changed
        if not self._queue:
            self._end_round()
        return max(self.period / max(1, self._round_size), self.gap())

    def _end_round(self) -> None:
        self.stats.rounds += 1
        if self._round_changed:
            self.period = self.min_period
        else:
            self.period = min(self.period * STRETCH, self.max_period)
        if not self._round_limited:
            self.share = min(self.initial_share, self.share * RECOVER)

    def _until_due(self, now: float) -> float:
        due = [t.not_before for t in self.open.values() if t.not_before is not None]
        return max(0.0, min(due) - now) if due else self.min_period

    def run(
        self,
        *,
        timeout: float | None = None,
        sleep: Callable[[float], None] | None = None,
        clock: Callable[[], float] | None = None,
    ) -> dict[tuple[str, int], AnyJob]:
        """Poll until every job (and followed check) is finished, or raise WaitTimeout."""
        sleep = sleep or self.client.sleep
        clock = clock or self.client.clock
        started = clock()
        while self.open:
            wait = self.tick(clock())
            if not self.open:
                break
            if timeout is not None and clock() - started + wait > timeout:
                raise errors.WaitTimeout(
                    f"{len(self.open)} job(s) still open after {clock() - started:.0f}s",
                    [t.last for t in self.open.values()],
                )
            self.stats.periods.append(wait)
            if wait > 0:
                sleep(wait)
        return self.done


def _fingerprint(job: AnyJob) -> tuple[object, ...]:
    extra = (job.scheduled_check_status,) if isinstance(job, SubmitJob) else ()
    return (job.status, job.progress_percent, *extra)


def wait_all(
    client: Client, jobs: list[tuple[str, int]], *, timeout: float | None = None, **kwargs: object
) -> dict[tuple[str, int], AnyJob]:
    """Convenience: wait for several jobs on one scheduler."""
    scheduler = Scheduler(client, **kwargs)  # type: ignore[arg-type]
    for kind, job_id in jobs:
        scheduler.add(kind, job_id)
    return scheduler.run(timeout=timeout)


__all__ = ["ANY_JOB", "Scheduler", "Stats", "Tracked", "read_as", "wait_all"]
