"""The projects API (seed 001) for both clients: requests, answers and wait plans. No I/O.

``/v1/projects`` and ``/v1/jobs/{id}`` answer ``{"data": ...}`` (lists add ``next_cursor``).
``/v1/jobs/{id}`` serves every job of the key's user, index jobs included, whatever its type
and project; it has no batch read, so several jobs are polled one request at a time.
"""

from __future__ import annotations

import random
import re
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import httpx

from seojobs.client._base import IDEMPOTENCY_HEADER, Request, retry_after, wait_steps
from seojobs.client._waits import Machine
from seojobs.client.models import Project, ProjectJob
from seojobs.client.policy import PollPolicy

PAGE = 100  # projects and jobs per list request (users have few projects)
ITEMS_PAGE = 1000  # the server's largest page: a job can have 10,000 items
JobRef = int | ProjectJob
ProjectRef = int | Project


def id_of(value: object, what: str) -> int:
    """A positive id, or the ``id`` of a model; anything else is refused before it is sent
    (a string or float would otherwise land in a URL path as typed)."""
    if isinstance(value, Project | ProjectJob):
        return value.id
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise TypeError(f"{what}: a positive int id (or the model), not {value!r}")
    return value


def data(response: httpx.Response) -> Any:
    return response.json()["data"]


def page(response: httpx.Response) -> tuple[list[Any], str | None]:
    body = response.json()
    return list(body["data"]), body.get("next_cursor") or None


# A read under /v1/projects/{id}/: "rankings", "web-vitals/history", "data/rank_check",
# "audits/42/issues". Checked before it is sent, so no path can leave the project.
READ_PATH = re.compile(r"[a-z0-9_-]+(?:/[a-z0-9_-]+)*")


def read_project(
    project: ProjectRef, what: str, params: Mapping[str, Any], cursor: str | None
) -> Request:
    if not isinstance(what, str) or not READ_PATH.fullmatch(what):
        raise ValueError(
            "what: a read under /v1/projects/{id}/ such as 'rankings', 'web-vitals/history' "
            f"or 'data/rank_check', not {what!r}"
        )
    query = {name: value for name, value in params.items() if value is not None}
    if cursor:
        query["cursor"] = cursor
    return Request("GET", f"/v1/projects/{id_of(project, 'project')}/{what}", params=query)


# -- projects ---------------------------------------------------------------------------------


def list_projects(cursor: str | None) -> Request:
    params: dict[str, Any] = {"limit": PAGE} | ({"cursor": cursor} if cursor else {})
    return Request("GET", "/v1/projects", params=params)


def create_project(name: str, idempotency_key: str | None) -> Request:
    # Keyed like every POST of this client: a retry after a lost answer gets the project that
    # was made, not a 409 for its own name.
    key = idempotency_key or str(uuid.uuid4())
    return Request("POST", "/v1/projects", json={"name": name}, headers={IDEMPOTENCY_HEADER: key})


def get_project(project: ProjectRef) -> Request:
    return Request("GET", f"/v1/projects/{id_of(project, 'project')}")


def delete_project(project: ProjectRef) -> Request:
    return Request("DELETE", f"/v1/projects/{id_of(project, 'project')}")


# -- jobs -------------------------------------------------------------------------------------


def start_job(
    project: ProjectRef,
    type: str,
    params: Mapping[str, Any] | None,
    *,
    title: str | None,
    idempotency_key: str | None,
) -> Request:
    body: dict[str, Any] = {"type": type, "params": dict(params or {})}
    if title is not None:
        body["title"] = title
    key = idempotency_key or str(uuid.uuid4())
    return Request(
        "POST",
        f"/v1/projects/{id_of(project, 'project')}/jobs",
        json=body,
        headers={IDEMPOTENCY_HEADER: key},
    )


def started(response: httpx.Response, request: Request) -> ProjectJob:
    """The 202's job, with the params sent and the Retry-After the server asked for."""
    job = ProjectJob.model_validate(data(response))
    job.params = request.json["params"]
    job.retry_after = retry_after(response)
    return job


def get_job(job: JobRef, long_poll: float = 0.0) -> Request:
    wait = int(long_poll)
    headers = {"Prefer": f"wait={wait}"} if wait >= 1 else {}
    return Request(
        "GET",
        f"/v1/jobs/{id_of(job, 'job')}",
        headers=headers,
        extra_time=float(wait) if wait >= 1 else 0.0,
    )


def list_jobs(
    project: ProjectRef,
    *,
    status: Sequence[str] | None,
    type: str | None,
    cursor: str | None,
    limit: int,
) -> Request:
    params: list[tuple[str, Any]] = [("limit", min(limit, PAGE))]
    params.extend(("status", value) for value in status or ())
    if type:
        params.append(("type", type))
    if cursor:
        params.append(("cursor", cursor))
    return Request("GET", f"/v1/projects/{id_of(project, 'project')}/jobs", params=params)


def job_types() -> Request:
    return Request("GET", "/v1/job-types")


def cancel_job(job: JobRef) -> Request:
    return Request("POST", f"/v1/jobs/{id_of(job, 'job')}/cancel")


def job_items(
    job: JobRef, outcome: str | Sequence[str] | None, cursor: str | None, page_size: int
) -> Request:
    params: list[tuple[str, Any]] = [("limit", page_size)]
    wanted = [outcome] if isinstance(outcome, str) else list(outcome or ())
    params.extend(("outcome", value) for value in wanted)
    if cursor:
        params.append(("cursor", cursor))
    return Request("GET", f"/v1/jobs/{id_of(job, 'job')}/items", params=params)


# -- waiting ----------------------------------------------------------------------------------


def targets(jobs: JobRef | Iterable[JobRef]) -> tuple[list[JobRef], bool]:
    """The jobs to wait on, and whether one was given (then one job is returned, not a list)."""
    if isinstance(jobs, int | ProjectJob):
        return [jobs], True
    listed = list(jobs)
    for job in listed:
        id_of(job, "job")
    return listed, False


def waiting(
    job: ProjectJob,
    policy: PollPolicy,
    timeout: float | None,
    *,
    elapsed: Callable[[], float],
    rng: random.Random,
    alone: bool,
) -> Machine[ProjectJob] | ProjectJob:
    """The wait machine of a job whose state was just seen (or the job itself when it has
    finished).

    ``timeout`` replaces the policy's deadline. A job waited on ``alone`` is first read with
    long polls (``Prefer: wait``); several jobs share one timer, one request at a time, so a
    held read would hold the others back: they go by the schedule alone. Without long polls
    the first poll comes a first interval later, and no sooner than the Retry-After of the 202
    that started the job.
    """
    chosen = policy
    if timeout is not None:
        chosen = replace(chosen, deadline=timeout)
    if not alone:
        chosen = replace(chosen, first_long_polls=0)
    if job.is_terminal:
        return job
    machine: Machine[ProjectJob] = wait_steps(
        chosen,
        poll_first=False,
        elapsed=elapsed,
        rng=rng,
        first_floor=job.retry_after or 0.0,
    )
    return machine
