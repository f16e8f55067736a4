"""The blocking client: ``Client(base_url, api_key)``."""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Iterator, Sequence
from typing import Any

import httpx

from seojobs.client import errors
from seojobs.client._base import (
    MAX_IDS,
    Base,
    Outcome,
    Request,
    Step,
    chunks,
    http_client,
    kind_of,
    polled,
    wait_steps,
)
from seojobs.client._projects import job_types
from seojobs.client.models import CheckJob, Job, ReportRow, SubmitJob, Usage, V2Task
from seojobs.client.policy import PollPolicy, RetryPolicy
from seojobs.client.resources import Jobs, Projects


class Client(Base):
    """Talks to a seojobs server (or any IndexChex-compatible one) over HTTP.

    ``client.projects`` and ``client.jobs`` speak the projects API (jobs of any type); the
    methods below are the indexing API (v1) and SpeedyIndex's v2.

    ``sleep`` and ``clock`` are injectable so waits can be tested without waiting. Every call
    goes through one pacer (``pace=True``): never more requests in the server's window than
    its ``RateLimit-Policy`` allows, nothing while a 429's Retry-After runs. Failed calls are
    retried per ``retry_policy`` (``retries`` sets its attempts), separately from the polling
    policy of ``wait``.
    """

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float = 30.0,
        retries: int = 3,
        retry_policy: RetryPolicy | None = None,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        pace: bool = True,
    ) -> None:
        super().__init__(
            base_url,
            api_key,
            timeout=timeout,
            retries=retries,
            retry_policy=retry_policy,
            clock=clock,
            pace=pace,
        )
        self.sleep = sleep
        self._http = http_client(self.base_url, transport, timeout=timeout, headers=self._headers())
        self.projects = Projects(self)
        self.jobs = Jobs(self)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- plumbing ----------------------------------------------------------------------

    def send(
        self, request: Request, *, retry: bool = True, retry_429: bool = True
    ) -> httpx.Response:
        """Send ``request``; with ``retry``, retry it per ``retry_policy`` (429s too, unless
        ``retry_429`` is False: then the caller handles them)."""
        attempt = 0
        while True:
            outcome = self._attempt(request)
            if isinstance(outcome, httpx.Response):
                return outcome
            self.count_unanswered(outcome)
            wait = self.retry_delay(request, attempt, outcome, retry_429=retry_429)
            if not retry or wait is None:
                raise outcome
            self.sleep(wait)
            attempt += 1

    def _attempt(self, request: Request) -> httpx.Response | errors.SeojobsError:
        """One paced try: the checked response, or the error it ended with."""
        wait = self.pace_delay()
        if wait > 0:
            self.sleep(wait)
        timeout = self._timeout(request)
        self.budget.begin()
        self.requests_sent += 1
        try:
            response = self._http.request(
                request.method,
                request.path,
                params=request.params,
                json=request.json,
                headers=request.headers,
                timeout=timeout if timeout is not None else httpx.USE_CLIENT_DEFAULT,
            )
        except httpx.TransportError as exc:
            failure = errors.TransportError(f"{request.method} {request.path}: {exc}")
            failure.__cause__ = exc
            return failure
        finally:
            self.budget.end(self.clock())
        try:
            return self.check(response)
        except errors.APIError as exc:
            return exc

    # -- v1 jobs -----------------------------------------------------------------------

    def submit(
        self,
        urls: Sequence[str],
        *,
        engine: str = "google",
        checker: int | None = None,
        title: str | None = None,
        idempotency_key: str | None = None,
    ) -> SubmitJob:
        """Start an index-submit job; answers at once with its status (``pending``)."""
        request = self.create_request(
            "index_submit",
            urls,
            engine=engine,
            checker=checker,
            title=title,
            idempotency_key=idempotency_key,
        )
        job = self.job("index_submit", self.send(request).json())
        assert isinstance(job, SubmitJob)
        return job

    def check_urls(
        self,
        urls: Sequence[str],
        *,
        engine: str = "google",
        title: str | None = None,
        idempotency_key: str | None = None,
    ) -> CheckJob:
        """Start an index-check job; answers at once with its status (``pending``)."""
        request = self.create_request(
            "index_check", urls, engine=engine, title=title, idempotency_key=idempotency_key
        )
        job = self.job("index_check", self.send(request).json())
        assert isinstance(job, CheckJob)
        return job

    def get(self, kind: str, job_id: int, *, long_poll: float = 0.0, retry_429: bool = True) -> Job:
        """One job's status; ``long_poll`` asks the server to hold the answer until the job
        changes or that many seconds pass (``Prefer: wait``)."""
        kind = kind_of(kind)
        request = self.status_request(kind, job_id, long_poll)
        return self.job(kind, self.send(request, retry_429=retry_429).json())

    def index_jobs(
        self,
        kind: str,
        *,
        ids: Sequence[int] | None = None,
        status: Sequence[str] | None = None,
        limit: int = 100,
    ) -> list[Job]:
        """Index jobs of one kind (v1), newest first. With ``ids``, all of those jobs, 1,000
        per request: the cheap way to poll many jobs. (``client.jobs(kind, ...)`` too.)"""
        kind = kind_of(kind)
        if ids is not None:
            out: list[Job] = []
            for chunk in chunks(list(ids), MAX_IDS):
                out.extend(self.list_pages(kind, chunk, status, MAX_IDS, everything=True))
            return out
        return self.list_pages(kind, None, status, limit, everything=False)

    def list_pages(
        self,
        kind: str,
        ids: Sequence[int] | None,
        status: Sequence[str] | None,
        limit: int,
        *,
        everything: bool,
        retry_429: bool = True,
    ) -> list[Job]:
        out: list[Job] = []
        cursor: str | None = None
        while True:
            request = self.list_request(kind, ids=ids, status=status, cursor=cursor, limit=limit)
            body = self.send(request, retry_429=retry_429).json()
            out.extend(self.job(kind, item) for item in body["jobs"])
            cursor = body.get("next_cursor")
            if not cursor or (not everything and len(out) >= limit):
                return out

    def cancel(self, kind: str, job_id: int) -> Job:
        kind = kind_of(kind)
        return self.job(kind, self.send(self.cancel_request(kind, job_id)).json())

    def report(self, kind: str, job_id: int) -> Iterator[ReportRow]:
        """Every row of a job's report, fetched page by page."""
        kind = kind_of(kind)
        cursor: str | None = None
        while True:
            body = self.send(self.report_request(kind, job_id, cursor)).json()
            for row in body["rows"]:
                yield ReportRow.model_validate(row)
            cursor = body.get("next_cursor")
            if not cursor:
                return

    def report_csv(self, kind: str, job_id: int) -> Iterator[str]:
        """The report as CSV text chunks, streamed."""
        request = self.report_request(kind_of(kind), job_id, None, csv=True)
        wait = self.pace_delay()
        if wait > 0:
            self.sleep(wait)
        self.requests_sent += 1
        self.budget.begin()
        try:
            with self._http.stream(
                "GET", request.path, headers=request.headers, params=request.params
            ) as response:
                if response.status_code >= 400:
                    response.read()
                self.check(response)
                yield from response.iter_text()
        finally:
            self.budget.end(self.clock())

    def usage(self) -> Usage:
        return Usage.model_validate(self.send(Request("GET", "/api/v1/usage")).json())

    # -- waiting -----------------------------------------------------------------------

    def poll_policy(self, job_type: str) -> PollPolicy:
        """How a wait polls a job of ``job_type`` unless given a policy: the type's poll hint
        as the server serves it (``GET /v1/job-types``, read once), else ``PollPolicy()``
        (seed 000's schedule; see ``seojobs.client._hints``)."""
        if not self.hints.known:
            try:
                self.hints.learn(self.send(job_types(), retry=False, retry_429=False))
            except errors.SeojobsError as exc:
                self.hints.failed(exc)
        return self.hints.policy(job_type)

    def wait(
        self,
        kind: str,
        job_id: int,
        *,
        policy: PollPolicy | None = None,
        poll_first: bool = True,
    ) -> Job:
        """Poll until the job is completed or failed (by its type's poll hint by default).

        ``poll_first=False`` right after submitting: the first read comes ``policy.start``
        later. Raises WaitTimeout (carrying the last state) rather than sleep past the policy's
        deadline; raises APIError at once for answers that polling cannot fix (401, 404).
        """
        kind = kind_of(kind)
        policy = policy or self.poll_policy(kind)
        started = self.clock()
        steps: Generator[Step, Outcome[Job] | None, Job] = wait_steps(
            policy,
            poll_first=poll_first,
            elapsed=lambda: self.clock() - started,
            rng=self.rng,
        )
        outcome: Outcome[Job] | None = None
        try:
            while True:
                action, value = steps.send(outcome)
                outcome = None
                if action == "sleep":
                    assert value is not None
                    self.sleep(value)
                else:
                    outcome = self._poll(kind, job_id, value)
        except StopIteration as done:
            result: Job = done.value
            return result

    def _poll(self, kind: str, job_id: int, long_poll: float) -> Outcome[Job]:
        began = self.clock()
        try:
            request = self.status_request(kind, job_id, long_poll)
            response = self.send(request, retry_429=False)
        except errors.RateLimitedError as exc:
            return Outcome(rate_limited=exc)
        except (errors.TransportError, errors.ServerError) as exc:
            return Outcome(transport=exc)
        return polled(self.job(kind, response.json()), response, self.clock() - began)

    # -- v2 ----------------------------------------------------------------------------

    def v2_status(self, engine: str, task_type: str, task_ids: Sequence[str]) -> list[V2Task]:
        """SpeedyIndex-style batch status (up to 1,000 ids a call)."""
        out: list[V2Task] = []
        for chunk in chunks([str(i) for i in task_ids], MAX_IDS):
            request = Request(
                "POST", f"/v2/task/{engine}/{task_type}/status", json={"task_ids": chunk}
            )
            body: dict[str, Any] = self.send(request).json()
            out.extend(V2Task.model_validate(item) for item in body.get("result") or [])
        return out
