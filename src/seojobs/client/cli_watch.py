"""Watch jobs on one timer (the Scheduler) and save each final result into the state file.

A job is marked done in the state file only together with its saved result (status body and
report rows, one statement), so a run killed at any point leaves either an open job that the
next run picks up or a done job with its result, never a done job without one.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from seojobs.client import errors
from seojobs.client.cli_common import Output, job_line
from seojobs.client.models import AnyJob, ProjectJob, SubmitJob
from seojobs.client.scheduler import LONG_POLL_SECONDS, Scheduler, read_as
from seojobs.client.state import StateFile
from seojobs.client.sync import Client

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

    from seojobs.client.cli_hook import Receiver

# While nothing changes the gap between polls grows x1.5, up to this multiple of --interval.
STRETCH = 12
# The scheduler's periods until the job types' poll hints are known (without --interval).
FIRST_PERIOD = 5.0
# Failures worth retrying later, when a result could not be saved this time.
TRANSIENT = (errors.TransportError, errors.ServerError, errors.RateLimitedError)

Key = tuple[str, int]


class ProgressView:
    """One bar per job on a terminal; otherwise one plain stderr line per change."""

    def __init__(self, out: Output) -> None:
        self.out = out
        self._bars: Progress | None = None
        self._tasks: dict[Key, TaskID] = {}

    @contextmanager
    def shown(self) -> Iterator[None]:
        if not self.out.live:
            yield
            return
        # Rich's progress bars, loaded only to be drawn (a terminal).
        from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        self._bars = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.percentage:>3.0f}%"),
            TimeElapsedColumn(),
            console=self.out.err,
        )
        with self._bars:
            yield
        self._bars = None

    def update(self, job: AnyJob) -> None:
        if self._bars is None:
            self.out.info(job_line(job))
            return
        key = (job.kind, job.job_id)
        description = f"{job.kind} {job.job_id} {job.status}"
        if key not in self._tasks:
            self._tasks[key] = self._bars.add_task(description, total=100)
        self._bars.update(self._tasks[key], description=description, completed=job.progress_percent)


class Watcher:
    def __init__(
        self,
        client: Client,
        state: StateFile,
        out: Output,
        *,
        server: str,
        interval: float | None,
    ) -> None:
        """``interval`` (--interval) paces every job alike; None: by the job types' hints."""
        self.client = client
        self.interval = interval
        self.state = state
        self.out = out
        self.server = server
        self.view = ProgressView(out)
        self.scheduler = Scheduler(
            client,
            min_period=interval or FIRST_PERIOD,
            max_period=(interval or FIRST_PERIOD) * STRETCH,
            on_done=self._done,
            on_update=self._update,
        )
        self.saved: list[AnyJob] = []
        self.unsaved: list[AnyJob] = []
        self.types: dict[Key, str] = {}
        # --webhook-port: a job is read as soon as a delivery names it, between the rounds
        self.receiver: Receiver | None = None
        self._until: float | None = None  # the client clock's deadline of such a wait

    # -- what to watch -------------------------------------------------------------------

    def add(self, kind: str, job_id: int, *, follow_up_of: int | None = None) -> None:
        """Watch a job of type ``kind``: an index job in v1's batches, any other one by one."""
        self.types[(read_as(kind), job_id)] = kind
        self.scheduler.add(read_as(kind), job_id, follow_up_of=follow_up_of)

    def type_of(self, key: Key) -> str:
        """The job type of a scheduler key (whose kind is ANY_JOB for most types)."""
        return self.types.get(key, key[0])

    @property
    def open(self) -> list[Key]:
        return list(self.scheduler.open)

    def last(self) -> list[AnyJob]:
        """The last state seen of every job, finished or not, in the order they were given
        (not the order they ended: two jobs delivered by webhooks end in either order)."""
        found: dict[Key, AnyJob] = {
            key: t.last for key, t in self.scheduler.open.items() if t.last is not None
        }
        found.update(self.scheduler.done)
        given = [found[key] for key in self.types if key in found]
        return [*given, *(job for key, job in found.items() if key not in self.types)]

    # -- polling -------------------------------------------------------------------------

    def first_round(self) -> list[Key]:
        """One batched read of every job; errors propagate (a run that cannot reach the
        server says so at once). Returns the jobs the server does not know; they are dropped
        from this run and stay open in the state file."""
        self.scheduler.poll_once()
        missing = [key for key in self.scheduler.open if key in self.scheduler.missing]
        for key in missing:
            del self.scheduler.open[key]
        return missing

    def run(self, *, once: bool = False, timeout: float | None = None) -> list[Key]:
        """Poll until every job is finished (followed scheduled checks included), or raise
        WaitTimeout; with ``once``, one batched round. Brief outages after the first round are
        ridden out by the scheduler. Returns the jobs the server did not know."""
        started = time.monotonic()
        with self.view.shown():
            missing = self.first_round()
            if not once and self.scheduler.open and self.receiver is None:
                # Long polls first (issue 27.6): a job that ends at once is reported at once.
                wait = LONG_POLL_SECONDS
                if timeout is not None:
                    wait = min(wait, timeout - (time.monotonic() - started))
                self.scheduler.long_poll(wait)
            if not once and self.scheduler.open:
                self.pace_by_hints()
                spent = time.monotonic() - started
                left = None if timeout is None else max(0.0, timeout - spent)
                if self.receiver is None:
                    self.scheduler.run(timeout=left)
                else:
                    # A round that would come after the deadline is no reason to give up: a
                    # delivery may come first. The sleep ends the wait at the deadline.
                    self._until = None if left is None else self.client.clock() + left
                    self.scheduler.run(sleep=self._sleep_or_deliveries)
        self.retry_unsaved()
        return missing

    def _sleep_or_deliveries(self, seconds: float) -> None:
        """The rounds' sleep, cut short by each webhook delivery: the jobs it names are read
        at once, then the sleep goes on (the rounds keep their pace) unless all are done."""
        assert self.receiver is not None
        clock = self.client.clock
        until = clock() + seconds
        if self._until is not None:
            until = min(until, self._until)
        while self.scheduler.open:
            left = until - clock()
            if left <= 0:
                break
            delivered = self.receiver.wait(left)
            if delivered:
                self.scheduler.read_now(delivered)
        if self.scheduler.open and self._until is not None and clock() >= self._until:
            open_jobs = self.scheduler.open.values()
            raise errors.WaitTimeout(
                f"{len(open_jobs)} job(s) still open at the deadline",
                [t.last for t in open_jobs],
            )

    def pace_by_hints(self) -> None:
        """Without --interval, the rounds follow the poll hints of the job types waited on
        (``Client.poll_policy``): the shortest first interval, growing while nothing changes
        up to the longest ceiling. One type's jobs are so polled at its hint."""
        if self.interval is not None:
            return
        types = sorted({self.type_of(key) for key in self.scheduler.open})
        policies = [self.client.poll_policy(job_type) for job_type in types]
        if policies:
            first = min(policy.start for policy in policies)
            scheduler = self.scheduler
            scheduler.min_period = scheduler.period = first
            scheduler.max_period = max(first, *(policy.ceiling for policy in policies))

    def retry_unsaved(self) -> None:
        for job in list(self.unsaved):
            self.save(job)  # a second failure propagates: exit 4, the job stays open
            self.unsaved.remove(job)

    # -- callbacks -----------------------------------------------------------------------

    def _update(self, job: AnyJob) -> None:
        self.state.update_status(self.server, job.kind, job.job_id, job.status)
        self.view.update(job)

    def _done(self, job: AnyJob) -> None:
        if isinstance(job, SubmitJob) and job.scheduled_check_run_id is not None:
            # Recorded before the submission is marked done, so a run killed in between
            # still follows the check next time.
            self.state.track(
                self.server, "index_check", job.scheduled_check_run_id, follow_up_of=job.job_id
            )
        try:
            self.save(job)
        except TRANSIENT as exc:
            self.unsaved.append(job)
            self.out.warn(f"could not save {job.kind} job {job.job_id} yet: {exc}")

    def save(self, job: AnyJob) -> bool:
        """Fetch the report, then save it with the final status and mark the job done.

        False when another run saved it first (the state file keeps the first result)."""
        result = {"job": job.model_dump(mode="json"), "report": self._report(job)}
        if not self.state.finish(self.server, job.kind, job.job_id, job.status, result):
            return False
        self.saved.append(job)
        self.out.info(f"saved {job.kind} job {job.job_id} ({job.status})")
        return True

    def _report(self, job: AnyJob) -> list[dict[str, Any]] | None:
        if isinstance(job, ProjectJob):
            return None  # the per-URL report is the index jobs'; the job body says the rest
        try:
            return [row.model_dump(mode="json") for row in self.client.report(job.kind, job.job_id)]
        except errors.NotFoundError:
            return None
