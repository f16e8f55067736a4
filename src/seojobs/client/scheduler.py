"""Waiting on many jobs at once: one timer, batched reads, a share of the server's budget.

Seed 000 warns that one polling loop per job burns the shared 120 requests/minute (20 jobs
every 10 s already use all of it). This scheduler instead reads every open job of a kind in
one request (the v1 list with ``ids=``, 1,000 ids a request) on a single timer whose period is
set by the budget: at most ``share`` of the server's announced limit (``RateLimit-Policy``,
120/minute when absent). The period starts at ``min_period`` and stretches x1.5 while nothing
changes (long jobs don't cost a request every few seconds for hours), back to ``min_period``
when a job moves. A 429 pauses everything for at least its Retry-After and halves the share.

A submission created with ``checker`` is followed to its scheduled check: it stays open until
the check has finished, then the check itself is reported through ``on_done`` as well.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from seojobs.client import errors
from seojobs.client._base import MAX_IDS, chunks, kind_of
from seojobs.client.models import Job, SubmitJob
from seojobs.client.sync import Client

DEFAULT_LIMIT = 120
DEFAULT_WINDOW = 60.0


@dataclass
class Tracked:
    kind: str
    job_id: int
    last: Job | None = None
    follow_up_of: int | None = None  # for a scheduled check: its submission's id


@dataclass
class Stats:
    requests: int = 0
    rate_limited: int = 0
    finished: int = 0
    periods: list[float] = field(default_factory=list)


class Scheduler:
    def __init__(
        self,
        client: Client,
        *,
        share: float = 0.5,
        min_period: float = 5.0,
        max_period: float = 60.0,
        on_done: Callable[[Job], None] | None = None,
        on_update: Callable[[Job], None] | None = None,
    ) -> None:
        if not 0 < share <= 1:
            raise ValueError("share: must be in (0, 1]")
        self.client = client
        self.share = share
        self.min_period = min_period
        self.max_period = max_period
        self.on_done = on_done
        self.on_update = on_update
        self.open: dict[tuple[str, int], Tracked] = {}
        self.done: dict[tuple[str, int], Job] = {}
        self.stats = Stats()
        self.period = min_period

    # -- what to watch -----------------------------------------------------------------

    def add(self, kind: str, job_id: int, *, follow_up_of: int | None = None) -> None:
        kind = kind_of(kind)
        key = (kind, job_id)
        if key not in self.done:
            self.open.setdefault(key, Tracked(kind, job_id, follow_up_of=follow_up_of))

    @property
    def pending(self) -> int:
        return len(self.open)

    # -- budget ------------------------------------------------------------------------

    def requests_per_round(self) -> int:
        counts: dict[str, int] = {}
        for tracked in self.open.values():
            counts[tracked.kind] = counts.get(tracked.kind, 0) + 1
        return sum(math.ceil(n / MAX_IDS) for n in counts.values())

    def budget_period(self) -> float:
        """The shortest period that keeps a round within our share of the budget."""
        limit = self.client.rate_limit.limit or DEFAULT_LIMIT
        window = self.client.rate_limit.window or DEFAULT_WINDOW
        per_second = self.share * limit / window
        return self.requests_per_round() / per_second if per_second > 0 else self.max_period

    # -- one round ---------------------------------------------------------------------

    def poll_once(self) -> bool:
        """Read every open job once (batched). True if any job changed."""
        by_kind: dict[str, list[int]] = {}
        for tracked in self.open.values():
            by_kind.setdefault(tracked.kind, []).append(tracked.job_id)
        changed = False
        for kind, ids in by_kind.items():
            for chunk in chunks(sorted(ids), MAX_IDS):
                self.stats.requests += 1
                for job in self.client.jobs(kind, ids=chunk):
                    changed |= self._update(kind, job)
        return changed

    def _update(self, kind: str, job: Job) -> bool:
        key = (kind, job.job_id)
        tracked = self.open.get(key)
        if tracked is None:
            return False
        before = tracked.last
        tracked.last = job
        moved = before is None or _fingerprint(before) != _fingerprint(job)
        if moved and self.on_update:
            self.on_update(job)
        if not job.is_terminal or self._awaiting_follow_up(job):
            return moved
        del self.open[key]
        self.done[key] = job
        self.stats.finished += 1
        if self.on_done:
            self.on_done(job)
        return True

    def _awaiting_follow_up(self, job: Job) -> bool:
        """A finished submission with a scheduled check stays open until the check ends;
        then the check is added to the watch so its result is saved too."""
        if not isinstance(job, SubmitJob) or not job.scheduled_check_days:
            return False
        if job.scheduled_check_status in ("pending", "processing"):
            return True
        # Finished, or never created (the submission was refused): nothing more to wait for.
        if job.scheduled_check_run_id is not None:
            self.add("index_check", job.scheduled_check_run_id, follow_up_of=job.job_id)
        return False

    # -- the loop ----------------------------------------------------------------------

    def run(
        self,
        *,
        timeout: float | None = None,
        sleep: Callable[[float], None] | None = None,
        clock: Callable[[], float] | None = None,
    ) -> dict[tuple[str, int], Job]:
        """Poll until every job (and followed check) is finished, or raise WaitTimeout."""
        sleep = sleep or self.client.sleep
        clock = clock or self.client.clock
        started = clock()
        while self.open:
            try:
                changed = self.poll_once()
                self.period = (
                    self.min_period if changed else min(self.period * 1.5, self.max_period)
                )
                wait = max(self.period, self.budget_period())
            except errors.RateLimitedError as exc:
                self.stats.rate_limited += 1
                self.share = max(self.share / 2, 0.05)
                wait = max(exc.retry_after or 0.0, self.budget_period(), self.period * 2)
            except (errors.TransportError, errors.ServerError):
                wait = max(self.period * 2, self.budget_period())
            if not self.open:
                break
            if timeout is not None and clock() - started + wait > timeout:
                raise errors.WaitTimeout(
                    f"{len(self.open)} job(s) still open after {clock() - started:.0f}s",
                    [t.last for t in self.open.values()],
                )
            self.stats.periods.append(wait)
            sleep(wait)
        return self.done


def _fingerprint(job: Job) -> tuple[object, ...]:
    extra = (job.scheduled_check_status,) if isinstance(job, SubmitJob) else ()
    return (job.status, job.progress_percent, *extra)


def wait_all(
    client: Client, jobs: list[tuple[str, int]], *, timeout: float | None = None, **kwargs: object
) -> dict[tuple[str, int], Job]:
    """Convenience: wait for several jobs on one scheduler."""
    scheduler = Scheduler(client, **kwargs)  # type: ignore[arg-type]
    for kind, job_id in jobs:
        scheduler.add(kind, job_id)
    return scheduler.run(timeout=timeout)


__all__ = ["Scheduler", "Stats", "Tracked", "wait_all"]
