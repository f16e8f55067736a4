"""``seojobs submit`` / ``check`` and ``seojobs wait``.

A submission is written to the state file with its idempotency key *before* the POST; the job
id is recorded when the answer arrives. If the process dies in between, ``seojobs poll``
re-sends the same request with the same key and the server answers with the same job.

``submit URL…`` goes to the indexing API (v1); ``submit --type TYPE`` starts a job of any type
in a project (the projects API), recorded with surface ``projects`` so a replay goes there too.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from seojobs.client import errors
from seojobs.client._base import KIND_PATH
from seojobs.client.cli_common import (
    Conn,
    Guard,
    Output,
    UsageProblem,
    exit_status,
    job_line,
    never_sent,
)
from seojobs.client.cli_params import TypedJob, fit_to_schema, resolve_project
from seojobs.client.models import AnyJob, ProjectJob
from seojobs.client.state import Entry, StateFile
from seojobs.client.sync import Client

if TYPE_CHECKING:  # only --wait and `seojobs wait` watch (Rich's live progress)
    from seojobs.client.cli_watch import Watcher

RESUME = "`seojobs wait {ids}` or `seojobs poll` picks them up again"


@dataclass
class SubmitArgs:
    kind: str  # index_submit | index_check; with ``typed``, any job type
    urls: list[str]
    engine: str = "google"
    checker: int | None = None
    title: str | None = None
    wait: bool = False
    timeout: float | None = None
    interval: float | None = None
    typed: TypedJob | None = None  # submit --type: a job of any type in a project


def request_body(args: SubmitArgs) -> dict[str, Any]:
    """What the state file keeps to replay the POST byte for byte (same key, same body)."""
    body: dict[str, Any] = {"urls": args.urls, "engine": args.engine}
    if args.checker is not None:
        body["checker"] = args.checker
    if args.title is not None:
        body["title"] = args.title
    return body


def typed_body(client: Client, server: str, args: SubmitArgs, typed: TypedJob) -> dict[str, Any]:
    """The projects API request, its project resolved to an id (a replay must not find
    another project that took the name since)."""
    project = resolve_project(client, server, typed.project)
    body: dict[str, Any] = {
        "project_id": project.id,
        "type": args.kind,
        "params": fit_to_schema(client, args.kind, typed.params, typed.text),
    }
    if args.title is not None:
        body["title"] = args.title
    return body


def post(client: Client, entry: Entry) -> AnyJob:
    """Send a recorded submission with its recorded key, where it was meant to go."""
    request, key = entry.request, entry.idempotency_key
    title = request.get("title")
    if entry.surface == "projects":
        return client.jobs.start(
            request["project_id"], request["type"], request["params"], title=title,
            idempotency_key=key,
        )  # fmt: skip
    engine = str(request.get("engine", "google"))
    if entry.kind == "index_submit":
        return client.submit(
            request["urls"],
            engine=engine,
            checker=request.get("checker"),
            title=title,
            idempotency_key=key,
        )
    return client.check_urls(request["urls"], engine=engine, title=title, idempotency_key=key)


def run_submit(conn: Conn, out: Output, args: SubmitArgs, guard: Guard) -> int:
    with conn.client() as client, conn.state() as state:
        if args.typed is None:
            entry = state.intend(conn.url, args.kind, request_body(args))
        else:
            body = typed_body(client, conn.url, args, args.typed)
            entry = state.intend(conn.url, args.kind, body, surface="projects")
        guard.interrupted_hint = (
            "The submission stays in the state file: `seojobs poll` sends it again with the "
            "same idempotency key, so it becomes exactly one job (see `seojobs jobs`)."
        )
        try:
            job = post(client, entry)
        except errors.SeojobsError as exc:
            if never_sent(exc):
                state.abandon(entry.local_id)
            else:
                out.warn(
                    "the server may have received the submission; `seojobs poll` sends it "
                    "again with the same idempotency key, which cannot make a second job"
                )
            raise
        state.submitted(entry.local_id, job.job_id, job.status)
        guard.interrupted_hint = (
            f"Job {job.job_id} keeps running on the server (not cancelled); "
            + RESUME.format(ids=job.job_id)
            + "."
        )
        out.info(f"submitted: {job_line(job)}")
        if not args.wait:
            _print_jobs(out, [job], single=True)
            # A job can be refused at once (failed, e.g. over the daily quota).
            return exit_status([job])
        if not out.as_json:
            out.data(str(job.job_id))  # the id first, so a script has it even if interrupted
        from seojobs.client.cli_watch import Watcher

        watcher = Watcher(client, state, out, server=conn.url, interval=args.interval)
        watcher.add(args.kind, job.job_id)
        return _watch(watcher, out, [job], args.timeout, single=True)


def run_wait(
    conn: Conn,
    out: Output,
    guard: Guard,
    ids: list[int],
    *,
    kind: str | None,
    timeout: float | None,
    interval: float | None,
    job_type: str | None = None,
    webhook_port: int | None = None,
) -> int:
    from seojobs.client.cli_hook import webhook_receiver
    from seojobs.client.cli_watch import Watcher

    with contextlib.ExitStack() as stack:
        client = stack.enter_context(conn.client())
        state = stack.enter_context(conn.state())
        targets = resolve_jobs(client, state, conn.url, ids, kind, job_type)
        for job_kind, job_id in targets:
            state.track(conn.url, job_kind, job_id, surface=surface_of(job_kind))
        shown = " ".join(str(i) for i in ids)
        guard.interrupted_hint = (
            f"The jobs keep running on the server (not cancelled); {RESUME.format(ids=shown)}."
        )
        watcher = Watcher(client, state, out, server=conn.url, interval=interval)
        if webhook_port is not None:
            # Registered before the first read: a job that ends in between is delivered too.
            watcher.receiver = stack.enter_context(webhook_receiver(client, out, webhook_port))
        for job_kind, job_id in targets:
            follow = [e.follow_up_of for e in state.lookup(conn.url, job_id) if e.kind == job_kind]
            watcher.add(job_kind, job_id, follow_up_of=follow[0] if follow else None)
        return _watch(watcher, out, [], timeout, single=False)


def _watch(
    watcher: Watcher, out: Output, known: list[AnyJob], timeout: float | None, *, single: bool
) -> int:
    try:
        watcher.run(timeout=timeout)
    except (errors.WaitTimeout, KeyboardInterrupt):
        if out.as_json:  # the JSON document still describes the jobs, as last seen
            _print_jobs(out, watcher.last() or known, single=single)
        raise
    finished = watcher.last()
    for job in finished:
        out.info(job_line(job))
    if out.as_json or not single:  # submit --wait printed its job id already
        _print_jobs(out, finished, single=single)
    return exit_status(finished)


def _print_jobs(out: Output, jobs: list[AnyJob], *, single: bool) -> None:
    """stdout: one JSON document (a body, or a list of bodies), else ids / id-kind-status."""
    if out.as_json:
        bodies = [job.model_dump(mode="json") for job in jobs]
        out.json(bodies[0] if single and bodies else bodies)
    elif single:
        out.data(str(jobs[0].job_id))
    else:
        for job in jobs:
            out.data(f"{job.job_id} {job.kind} {job.status}")


def resolve_jobs(
    client: Client,
    state: StateFile,
    server: str,
    ids: list[int],
    kind: str | None,
    job_type: str | None = None,
) -> list[tuple[str, int]]:
    """Each job id with its type: from the state file, else asking the server. ``--kind``
    reads v1's batches of that index kind; ``--type`` reads ``/v1/jobs/{id}`` (the job must
    be of that type); with neither, v1's batches of both index kinds, then ``/v1/jobs/{id}``,
    which serves a job of any type. An id the server does not know is a usage error."""
    found: dict[int, str] = {}
    for job_id in ids:
        entries = state.lookup(server, job_id)
        if entries:
            found[job_id] = entries[0].kind
    unknown = [i for i in dict.fromkeys(ids) if i not in found]
    if job_type is None:
        for candidate in [kind] if kind else list(KIND_PATH):
            if not unknown:
                break
            for job in client.index_jobs(candidate, ids=unknown):
                found[job.job_id] = candidate
            unknown = [i for i in unknown if i not in found]
    if kind is None:
        for read in _read_each(client, unknown, job_type):
            found[read.id] = read.type
        unknown = [i for i in unknown if i not in found]
    if unknown:
        listed = ", ".join(str(i) for i in unknown)
        raise UsageProblem(f"no such job on {server}: {listed} (or not yours)")
    return [(found[i], i) for i in dict.fromkeys(ids)]


def _read_each(client: Client, ids: list[int], job_type: str | None) -> list[ProjectJob]:
    read = []
    for job_id in ids:
        try:
            job = client.jobs.get(job_id)
        except errors.NotFoundError:
            continue
        if job_type is not None and job.type != job_type:
            raise UsageProblem(f"job {job_id} is a {job.type} job, not {job_type}")
        read.append(job)
    return read


def surface_of(kind: str) -> str:
    """Where a job of this type is submitted: v1 for the index kinds, else the projects API."""
    return "v1" if kind in KIND_PATH else "projects"
