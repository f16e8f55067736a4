"""``client.projects`` and ``client.jobs`` of ``AsyncClient``: the same calls as
``resources``, awaited."""

from __future__ import annotations

import builtins
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, overload

from seojobs.client import _projects as api
from seojobs.client import errors
from seojobs.client._base import Outcome, polled
from seojobs.client._waits import Machine, wait_many
from seojobs.client.models import Job, JobItem, JobType, Project, ProjectJob
from seojobs.client.policy import PollPolicy

if TYPE_CHECKING:
    from seojobs.client.aio import AsyncClient


class AsyncProjects:
    """``client.projects`` of ``AsyncClient`` (see ``resources.Projects``)."""

    def __init__(self, client: AsyncClient) -> None:
        self._client = client

    async def list(self) -> builtins.list[Project]:
        out: builtins.list[Project] = []
        cursor: str | None = None
        while True:
            found, cursor = api.page(await self._client.send(api.list_projects(cursor)))
            out.extend(Project.model_validate(item) for item in found)
            if not cursor:
                return out

    async def create(self, name: str, *, idempotency_key: str | None = None) -> Project:
        answer = await self._client.send(api.create_project(name, idempotency_key))
        return Project.model_validate(api.data(answer))

    async def get(self, project: api.ProjectRef) -> Project:
        answer = await self._client.send(api.get_project(project))
        return Project.model_validate(api.data(answer))

    async def default(self) -> Project:
        for project in await self.list():
            if project.is_default:
                return project
        raise errors.SeojobsError("the server lists no default project")

    async def delete(self, project: api.ProjectRef) -> None:
        request = api.delete_project(project)
        before = self._client.unanswered
        try:
            await self._client.send(request)
        except errors.NotFoundError:
            if self._client.unanswered == before:
                raise

    async def read(self, project: api.ProjectRef, what: str, **params: Any) -> Any:
        """As ``Projects.read``: one answer's ``data``; NotFoundError before a collection."""
        request = api.read_project(project, what, params, None)
        return api.data(await self._client.send(request))

    async def read_all(
        self, project: api.ProjectRef, what: str, **params: Any
    ) -> builtins.list[Any]:
        """As ``Projects.read_all``: every row, following ``next_cursor`` to the end."""
        rows: builtins.list[Any] = []
        cursor: str | None = None
        while True:
            request = api.read_project(project, what, params, cursor)
            found, cursor = api.page(await self._client.send(request))
            rows.extend(found)
            if not cursor:
                return rows


class AsyncJobs:
    """``client.jobs`` of ``AsyncClient`` (see ``resources.Jobs``)."""

    def __init__(self, client: AsyncClient) -> None:
        self._client = client

    async def __call__(
        self,
        kind: str,
        *,
        ids: Sequence[int] | None = None,
        status: Sequence[str] | None = None,
        limit: int = 100,
    ) -> builtins.list[Job]:
        return await self._client.index_jobs(kind, ids=ids, status=status, limit=limit)

    async def start(
        self,
        project: api.ProjectRef,
        type: str,
        params: Mapping[str, Any] | None = None,
        *,
        title: str | None = None,
        idempotency_key: str | None = None,
    ) -> ProjectJob:
        request = api.start_job(project, type, params, title=title, idempotency_key=idempotency_key)
        return self._job(api.started(await self._client.send(request), request))

    async def get(
        self, job: api.JobRef, *, long_poll: float = 0.0, retry_429: bool = True
    ) -> ProjectJob:
        response = await self._client.send(api.get_job(job, long_poll), retry_429=retry_429)
        return self._job(ProjectJob.model_validate(api.data(response)))

    async def list(
        self,
        project: api.ProjectRef,
        *,
        status: Sequence[str] | None = None,
        type: str | None = None,
        limit: int = 100,
    ) -> builtins.list[ProjectJob]:
        out: builtins.list[ProjectJob] = []
        cursor: str | None = None
        while len(out) < limit:
            request = api.list_jobs(
                project, status=status, type=type, cursor=cursor, limit=limit - len(out)
            )
            found, cursor = api.page(await self._client.send(request))
            out.extend(self._job(ProjectJob.model_validate(item)) for item in found)
            if not cursor:
                break
        return out[:limit]

    async def types(self) -> builtins.list[JobType]:
        """The job types the server runs, with the JSON Schema of their params."""
        found, _ = api.page(await self._client.send(api.job_types()))
        return [JobType.model_validate(item) for item in found]

    async def cancel(self, job: api.JobRef) -> ProjectJob:
        response = await self._client.send(api.cancel_job(job))
        return self._job(ProjectJob.model_validate(api.data(response)))

    async def items(
        self,
        job: api.JobRef,
        outcome: str | Sequence[str] | None = None,
        *,
        page_size: int = api.ITEMS_PAGE,
    ) -> AsyncIterator[JobItem]:
        cursor: str | None = None
        while True:
            request = api.job_items(job, outcome, cursor, page_size)
            found, cursor = api.page(await self._client.send(request))
            for item in found:
                yield JobItem.model_validate(item)
            if not cursor:
                return

    # -- waiting -------------------------------------------------------------------------
    # ``timeout`` as in ``Client``: it is the poll policy's deadline, and the WaitTimeout it
    # ends with carries the last states seen, which asyncio.timeout() would not.

    @overload
    async def wait(
        self,
        jobs: api.JobRef,
        *,
        timeout: float | None = None,  # noqa: ASYNC109
        policy: PollPolicy | None = None,
    ) -> ProjectJob: ...

    @overload
    async def wait(
        self,
        jobs: Iterable[api.JobRef],
        *,
        timeout: float | None = None,  # noqa: ASYNC109
        policy: PollPolicy | None = None,
    ) -> builtins.list[ProjectJob]: ...

    async def wait(
        self,
        jobs: api.JobRef | Iterable[api.JobRef],
        *,
        timeout: float | None = None,  # noqa: ASYNC109
        policy: PollPolicy | None = None,
    ) -> ProjectJob | builtins.list[ProjectJob]:
        """See ``resources.Jobs.wait``."""
        refs, single = api.targets(jobs)
        client = self._client
        began = client.clock()

        def elapsed() -> float:
            return client.clock() - began

        machines: builtins.list[Machine[ProjectJob] | ProjectJob] = []
        for ref in refs:
            job = ref if isinstance(ref, ProjectJob) else await self.get(ref)
            chosen = policy or await client.poll_policy(job.type)
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
                    await client.sleep(step[1])
                else:
                    _, index, hold = step
                    outcome = await self._poll(refs[index], hold)
        except StopIteration as done:
            result: builtins.list[ProjectJob] = done.value
            return result[0] if single else result

    async def _poll(self, job: api.JobRef, long_poll: float) -> Outcome[ProjectJob]:
        clock = self._client.clock
        began = clock()
        try:
            response = await self._client.send(api.get_job(job, long_poll), retry_429=False)
        except errors.RateLimitedError as exc:
            return Outcome(rate_limited=exc)
        except (errors.TransportError, errors.ServerError) as exc:
            return Outcome(transport=exc)
        found = self._job(ProjectJob.model_validate(api.data(response)))
        return polled(found, response, clock() - began)

    def _job(self, job: ProjectJob) -> ProjectJob:
        self._client.note_status(job.status)
        return job
