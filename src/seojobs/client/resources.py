"""``client.projects`` and ``client.jobs`` of the blocking client: the projects API (seed 001).

Thin: the requests, answers and wait plans are in ``_projects`` and ``_waits``, shared with
the async twins in ``aio_resources``.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, overload

from seojobs.client import _projects as api
from seojobs.client import errors
from seojobs.client._base import Outcome, polled
from seojobs.client._waits import Machine, wait_many
from seojobs.client.models import Job, JobItem, JobType, Project, ProjectJob
from seojobs.client.policy import PollPolicy

if TYPE_CHECKING:
    from seojobs.client.sync import Client


class Projects:
    """``client.projects``: list, create, get and delete your projects."""

    def __init__(self, client: Client) -> None:
        self._client = client

    def list(self) -> builtins.list[Project]:
        """Every project of yours, oldest first (the default project first); all pages."""
        out: builtins.list[Project] = []
        cursor: str | None = None
        while True:
            found, cursor = api.page(self._client.send(api.list_projects(cursor)))
            out.extend(Project.model_validate(item) for item in found)
            if not cursor:
                return out

    def create(self, name: str, *, idempotency_key: str | None = None) -> Project:
        """A new project; ConflictError when you already have one of that name."""
        answer = self._client.send(api.create_project(name, idempotency_key))
        return Project.model_validate(api.data(answer))

    def get(self, project: api.ProjectRef) -> Project:
        return Project.model_validate(api.data(self._client.send(api.get_project(project))))

    def default(self) -> Project:
        """The project every user starts with (it holds the indexing API's jobs)."""
        for project in self.list():
            if project.is_default:
                return project
        raise errors.SeojobsError("the server lists no default project")

    def delete(self, project: api.ProjectRef) -> None:
        """Delete a project with its jobs and schedules (ConflictError for the default one).

        A 404 after an attempt that went unanswered counts as deleted: that attempt did it.
        """
        request = api.delete_project(project)
        before = self._client.unanswered
        try:
            self._client.send(request)
        except errors.NotFoundError:
            if self._client.unanswered == before:
                raise

    def read(self, project: api.ProjectRef, what: str, **params: Any) -> Any:
        """What the project's jobs last collected, as ``GET /v1/projects/{id}/{what}`` serves
        it (``"rankings"``, ``"backlinks"``, ``"geo"``, ``"web-vitals"``, ``"keywords"``,
        ``"data/<type>"``, ...; ``params`` are its query): the ``data`` of one answer. Never
        starts a job: NotFoundError until one has completed."""
        return api.data(self._client.send(api.read_project(project, what, params, None)))

    def read_all(self, project: api.ProjectRef, what: str, **params: Any) -> builtins.list[Any]:
        """Every row of a paged read (``"rankings/history"``, ``"data/<type>/history"``, ...),
        following ``next_cursor`` to the end."""
        rows: builtins.list[Any] = []
        cursor: str | None = None
        while True:
            request = api.read_project(project, what, params, cursor)
            found, cursor = api.page(self._client.send(request))
            rows.extend(found)
            if not cursor:
                return rows


class Jobs:
    """``client.jobs``: start, read, wait on and cancel jobs of any type.

    Called as a function it is the first release's ``client.jobs(kind, ids=...)``, the v1
    list of index jobs (now also ``client.index_jobs``).
    """

    def __init__(self, client: Client) -> None:
        self._client = client

    def __call__(
        self,
        kind: str,
        *,
        ids: Sequence[int] | None = None,
        status: Sequence[str] | None = None,
        limit: int = 100,
    ) -> builtins.list[Job]:
        return self._client.index_jobs(kind, ids=ids, status=status, limit=limit)

    def start(
        self,
        project: api.ProjectRef,
        type: str,
        params: Mapping[str, Any] | None = None,
        *,
        title: str | None = None,
        idempotency_key: str | None = None,
    ) -> ProjectJob:
        """Start a job of ``type`` in a project; answers at once (status ``pending``).

        Sent with an Idempotency-Key (a fresh one unless given), so a retry after a lost
        answer gets the same job back, never a second one.
        """
        request = api.start_job(project, type, params, title=title, idempotency_key=idempotency_key)
        return self._job(api.started(self._client.send(request), request))

    def get(self, job: api.JobRef, *, long_poll: float = 0.0, retry_429: bool = True) -> ProjectJob:
        """One job of any type, in any of your projects (NotFoundError if not yours)."""
        response = self._client.send(api.get_job(job, long_poll), retry_429=retry_429)
        return self._job(ProjectJob.model_validate(api.data(response)))

    def list(
        self,
        project: api.ProjectRef,
        *,
        status: Sequence[str] | None = None,
        type: str | None = None,
        limit: int = 100,
    ) -> builtins.list[ProjectJob]:
        """A project's jobs, newest first, up to ``limit`` (following the cursors)."""
        out: builtins.list[ProjectJob] = []
        cursor: str | None = None
        while len(out) < limit:
            request = api.list_jobs(
                project, status=status, type=type, cursor=cursor, limit=limit - len(out)
            )
            found, cursor = api.page(self._client.send(request))
            out.extend(self._job(ProjectJob.model_validate(item)) for item in found)
            if not cursor:
                break
        return out[:limit]

    def types(self) -> builtins.list[JobType]:
        """The job types the server runs, with the JSON Schema of their params."""
        found, _ = api.page(self._client.send(api.job_types()))
        return [JobType.model_validate(item) for item in found]

    def cancel(self, job: api.JobRef) -> ProjectJob:
        """Stop a job: it ends failed with code ``cancelled``. A job already cancelled is
        returned; one that ended otherwise raises ``ConflictError`` (``job_finished``)."""
        response = self._client.send(api.cancel_job(job))
        return self._job(ProjectJob.model_validate(api.data(response)))

    def items(
        self,
        job: api.JobRef,
        outcome: str | Sequence[str] | None = None,
        *,
        page_size: int = api.ITEMS_PAGE,
    ) -> Iterator[JobItem]:
        """A job's items in order (only those of ``outcome``, or of any of several, when
        given), fetched ``page_size`` at a time (at most 1,000)."""
        cursor: str | None = None
        while True:
            found, cursor = api.page(
                self._client.send(api.job_items(job, outcome, cursor, page_size))
            )
            for item in found:
                yield JobItem.model_validate(item)
            if not cursor:
                return

    # -- waiting -------------------------------------------------------------------------

    @overload
    def wait(
        self,
        jobs: api.JobRef,
        *,
        timeout: float | None = None,
        policy: PollPolicy | None = None,
    ) -> ProjectJob: ...

    @overload
    def wait(
        self,
        jobs: Iterable[api.JobRef],
        *,
        timeout: float | None = None,
        policy: PollPolicy | None = None,
    ) -> builtins.list[ProjectJob]: ...

    def wait(
        self,
        jobs: api.JobRef | Iterable[api.JobRef],
        *,
        timeout: float | None = None,
        policy: PollPolicy | None = None,
    ) -> ProjectJob | builtins.list[ProjectJob]:
        """Poll until the job (or every job) is completed or failed, on the index jobs'
        policy: back-off per unfinished poll, a 429 doubles it and is never undercut, the
        first poll after ``start`` no sooner than its 202's Retry-After, long polls when the
        policy asks and the server honours them. The policy is the job type's poll hint
        (``Client.poll_policy``) unless given; ``timeout`` replaces its deadline.

        Several jobs share one timer, one request at a time. An id is read once first (to
        learn its type); a ``ProjectJob`` is not. Raises WaitTimeout at the deadline, with
        ``last``: the last state seen (a list of them for several jobs).
        """
        refs, single = api.targets(jobs)
        client = self._client
        began = client.clock()

        def elapsed() -> float:
            return client.clock() - began

        machines: builtins.list[Machine[ProjectJob] | ProjectJob] = []
        for ref in refs:
            job = ref if isinstance(ref, ProjectJob) else self.get(ref)
            chosen = policy or client.poll_policy(job.type)
            machines.append(
                api.waiting(
                    job, chosen, timeout, elapsed=elapsed, rng=client.rng, alone=len(refs) == 1
                )
            )
        steps = wait_many(machines, elapsed=elapsed)
        outcome: Outcome[ProjectJob] | None = None
        try:
            while True:
                step = steps.send(outcome)
                outcome = None
                if step[0] == "sleep":
                    client.sleep(step[1])
                else:
                    _, index, hold = step
                    outcome = self._poll(refs[index], hold)
        except StopIteration as done:
            result: builtins.list[ProjectJob] = done.value
            return result[0] if single else result

    def _poll(self, job: api.JobRef, long_poll: float) -> Outcome[ProjectJob]:
        clock = self._client.clock
        began = clock()
        try:
            response = self._client.send(api.get_job(job, long_poll), retry_429=False)
        except errors.RateLimitedError as exc:
            return Outcome(rate_limited=exc)
        except (errors.TransportError, errors.ServerError) as exc:
            return Outcome(transport=exc)
        found = self._job(ProjectJob.model_validate(api.data(response)))
        return polled(found, response, clock() - began)

    def _job(self, job: ProjectJob) -> ProjectJob:
        self._client.note_status(job.status)
        return job
