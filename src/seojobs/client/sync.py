"""The blocking client: ``Client(base_url, api_key)``."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import httpx

from seojobs.client import errors
from seojobs.client._base import (
    MAX_IDS,
    Base,
    Outcome,
    Request,
    chunks,
    kind_of,
    wait_steps,
)
from seojobs.client.models import CheckJob, Job, ReportRow, SubmitJob, Usage, V2Task
from seojobs.client.policy import PollPolicy

RETRYABLE = (502, 503, 504)


class Client(Base):
    """Talks to a seojobs server (or any IndexChex-compatible one) over HTTP.

    ``sleep`` and ``clock`` are injectable so waits can be tested without waiting.
    """

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float = 30.0,
        retries: int = 3,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(base_url, api_key, timeout=timeout, retries=retries)
        self.sleep = sleep
        self.clock = clock
        self._http = httpx.Client(
            base_url=self.base_url, timeout=timeout, transport=transport, headers=self._headers()
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- plumbing ----------------------------------------------------------------------

    def send(self, request: Request, *, retry: bool = True) -> httpx.Response:
        """Send once, or with bounded retries of transport errors, 429 and 502-504."""
        attempt = 0
        while True:
            try:
                response = self._http.request(
                    request.method,
                    request.path,
                    params=request.params,
                    json=request.json,
                    headers=request.headers,
                )
            except httpx.TransportError as exc:
                if not retry or attempt >= self.retries:
                    raise errors.TransportError(f"{request.method} {request.path}: {exc}") from exc
                self.sleep(_backoff(attempt))
                attempt += 1
                continue
            try:
                return self.check(response)
            except (errors.RateLimitedError, errors.ServerError) as exc:
                if (
                    not retry
                    or attempt >= self.retries
                    or (isinstance(exc, errors.ServerError) and exc.status not in RETRYABLE)
                ):
                    raise
                self.sleep(max(_backoff(attempt), exc.retry_after or 0.0))
                attempt += 1

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

    def get(self, kind: str, job_id: int, *, long_poll: float = 0.0) -> Job:
        kind = kind_of(kind)
        response = self.send(self.status_request(kind, job_id, long_poll), retry=False)
        return self.job(kind, response.json())

    def jobs(
        self,
        kind: str,
        *,
        ids: Sequence[int] | None = None,
        status: Sequence[str] | None = None,
        limit: int = 100,
    ) -> list[Job]:
        """Jobs of one kind, newest first. With ``ids``, all of those jobs, 1,000 per request:
        the cheap way to poll many jobs."""
        kind = kind_of(kind)
        if ids is not None:
            out: list[Job] = []
            for chunk in chunks(list(ids), MAX_IDS):
                out.extend(self._list(kind, chunk, status, MAX_IDS, everything=True))
            return out
        return self._list(kind, None, status, limit, everything=False)

    def _list(
        self,
        kind: str,
        ids: Sequence[int] | None,
        status: Sequence[str] | None,
        limit: int,
        *,
        everything: bool,
    ) -> list[Job]:
        out: list[Job] = []
        cursor: str | None = None
        while True:
            request = self.list_request(kind, ids=ids, status=status, cursor=cursor, limit=limit)
            body = self.send(request).json()
            out.extend(self.job(kind, item) for item in body["jobs"])
            cursor = body.get("next_cursor")
            if not cursor or (not everything and len(out) >= limit):
                return out

    def cancel(self, kind: str, job_id: int) -> Job:
        kind = kind_of(kind)
        path = f"/api/v1/{kind.replace('_', '-')}/jobs/{job_id}/cancel"
        return self.job(kind, self.send(Request("POST", path)).json())

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
        with self._http.stream(
            "GET", request.path, headers=request.headers, params=request.params
        ) as response:
            if response.status_code >= 400:
                response.read()
                self.check(response)
            yield from response.iter_text()

    def usage(self) -> Usage:
        return Usage.model_validate(self.send(Request("GET", "/api/v1/usage")).json())

    # -- waiting -----------------------------------------------------------------------

    def wait(
        self,
        kind: str,
        job_id: int,
        *,
        policy: PollPolicy | None = None,
        poll_first: bool = True,
    ) -> Job:
        """Poll until the job is completed or failed (seed 000's back-off by default).

        Raises WaitTimeout (carrying the last state) when the policy's deadline would pass.
        """
        kind = kind_of(kind)
        policy = policy or PollPolicy.for_kind(kind)
        started = self.clock()
        steps = wait_steps(policy, poll_first=poll_first, elapsed=lambda: self.clock() - started)
        outcome: Outcome | None = None
        try:
            while True:
                action, value = steps.send(outcome)
                outcome = None
                if action == "sleep":
                    assert value is not None
                    self.sleep(value)
                else:
                    outcome = self._poll(kind, job_id, policy.long_poll)
        except StopIteration as done:
            result: Job = done.value
            return result

    def _poll(self, kind: str, job_id: int, long_poll: float) -> Outcome:
        try:
            return Outcome(job=self.get(kind, job_id, long_poll=long_poll))
        except errors.RateLimitedError as exc:
            return Outcome(rate_limited=exc)
        except (errors.TransportError, errors.ServerError) as exc:
            return Outcome(transport=exc)

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


def _backoff(attempt: int) -> float:
    # Full jitter (reference/api_conventions.md §5.4): fewest calls under contention.
    return random.uniform(0, min(10.0, 0.5 * 2**attempt))
