"""The asyncio client: ``AsyncClient(base_url, api_key)``, the same calls awaited."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Sequence
from typing import Any

import httpx

from seojobs.client import errors
from seojobs.client._base import (
    MAX_IDS,
    Base,
    Outcome,
    Request,
    Step,
    async_http_client,
    chunks,
    kind_of,
    polled,
    wait_steps,
)
from seojobs.client._projects import job_types
from seojobs.client.aio_resources import AsyncJobs, AsyncProjects
from seojobs.client.models import CheckJob, Job, ReportRow, SubmitJob, Usage, V2Task
from seojobs.client.policy import PollPolicy, RetryPolicy


class AsyncClient(Base):
    """The asyncio twin of ``Client``: same requests, pacing, retries and wait machine."""

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float = 30.0,
        retries: int = 3,
        retry_policy: RetryPolicy | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
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
        self._http = async_http_client(
            self.base_url, transport, timeout=timeout, headers=self._headers()
        )
        self.projects = AsyncProjects(self)
        self.jobs = AsyncJobs(self)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- plumbing ----------------------------------------------------------------------

    async def send(
        self, request: Request, *, retry: bool = True, retry_429: bool = True
    ) -> httpx.Response:
        attempt = 0
        while True:
            outcome = await self._attempt(request)
            if isinstance(outcome, httpx.Response):
                return outcome
            self.count_unanswered(outcome)
            wait = self.retry_delay(request, attempt, outcome, retry_429=retry_429)
            if not retry or wait is None:
                raise outcome
            await self.sleep(wait)
            attempt += 1

    async def _attempt(self, request: Request) -> httpx.Response | errors.SeojobsError:
        wait = self.pace_delay()
        if wait > 0:
            await self.sleep(wait)
        timeout = self._timeout(request)
        self.budget.begin()
        self.requests_sent += 1
        try:
            response = await self._http.request(
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

    async def submit(
        self,
        urls: Sequence[str],
        *,
        engine: str = "google",
        checker: int | None = None,
        title: str | None = None,
        idempotency_key: str | None = None,
    ) -> SubmitJob:
        request = self.create_request(
            "index_submit",
            urls,
            engine=engine,
            checker=checker,
            title=title,
            idempotency_key=idempotency_key,
        )
        job = self.job("index_submit", (await self.send(request)).json())
        assert isinstance(job, SubmitJob)
        return job

    async def check_urls(
        self,
        urls: Sequence[str],
        *,
        engine: str = "google",
        title: str | None = None,
        idempotency_key: str | None = None,
    ) -> CheckJob:
        request = self.create_request(
            "index_check", urls, engine=engine, title=title, idempotency_key=idempotency_key
        )
        job = self.job("index_check", (await self.send(request)).json())
        assert isinstance(job, CheckJob)
        return job

    async def get(
        self, kind: str, job_id: int, *, long_poll: float = 0.0, retry_429: bool = True
    ) -> Job:
        kind = kind_of(kind)
        request = self.status_request(kind, job_id, long_poll)
        return self.job(kind, (await self.send(request, retry_429=retry_429)).json())

    async def index_jobs(
        self,
        kind: str,
        *,
        ids: Sequence[int] | None = None,
        status: Sequence[str] | None = None,
        limit: int = 100,
    ) -> list[Job]:
        kind = kind_of(kind)
        if ids is not None:
            out: list[Job] = []
            for chunk in chunks(list(ids), MAX_IDS):
                out.extend(await self.list_pages(kind, chunk, status, MAX_IDS, everything=True))
            return out
        return await self.list_pages(kind, None, status, limit, everything=False)

    async def list_pages(
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
            body = (await self.send(request, retry_429=retry_429)).json()
            out.extend(self.job(kind, item) for item in body["jobs"])
            cursor = body.get("next_cursor")
            if not cursor or (not everything and len(out) >= limit):
                return out

    async def cancel(self, kind: str, job_id: int) -> Job:
        kind = kind_of(kind)
        return self.job(kind, (await self.send(self.cancel_request(kind, job_id))).json())

    async def report(self, kind: str, job_id: int) -> AsyncIterator[ReportRow]:
        kind = kind_of(kind)
        cursor: str | None = None
        while True:
            body = (await self.send(self.report_request(kind, job_id, cursor))).json()
            for row in body["rows"]:
                yield ReportRow.model_validate(row)
            cursor = body.get("next_cursor")
            if not cursor:
                return

    async def report_csv(self, kind: str, job_id: int) -> AsyncIterator[str]:
        request = self.report_request(kind_of(kind), job_id, None, csv=True)
        wait = self.pace_delay()
        if wait > 0:
            await self.sleep(wait)
        self.requests_sent += 1
        self.budget.begin()
        try:
            async with self._http.stream(
                "GET", request.path, headers=request.headers, params=request.params
            ) as response:
                if response.status_code >= 400:
                    await response.aread()
                self.check(response)
                async for text in response.aiter_text():
                    yield text
        finally:
            self.budget.end(self.clock())

    async def usage(self) -> Usage:
        return Usage.model_validate((await self.send(Request("GET", "/api/v1/usage"))).json())

    # -- waiting -----------------------------------------------------------------------

    async def poll_policy(self, job_type: str) -> PollPolicy:
        """See ``Client.poll_policy``."""
        if not self.hints.known:
            try:
                self.hints.learn(await self.send(job_types(), retry=False, retry_429=False))
            except errors.SeojobsError as exc:
                self.hints.failed(exc)
        return self.hints.policy(job_type)

    async def wait(
        self,
        kind: str,
        job_id: int,
        *,
        policy: PollPolicy | None = None,
        poll_first: bool = True,
    ) -> Job:
        kind = kind_of(kind)
        policy = policy or await self.poll_policy(kind)
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
                    await self.sleep(value)
                else:
                    outcome = await self._poll(kind, job_id, value)
        except StopIteration as done:
            result: Job = done.value
            return result

    async def _poll(self, kind: str, job_id: int, long_poll: float) -> Outcome[Job]:
        began = self.clock()
        try:
            request = self.status_request(kind, job_id, long_poll)
            response = await self.send(request, retry_429=False)
        except errors.RateLimitedError as exc:
            return Outcome(rate_limited=exc)
        except (errors.TransportError, errors.ServerError) as exc:
            return Outcome(transport=exc)
        return polled(self.job(kind, response.json()), response, self.clock() - began)

    # -- v2 ----------------------------------------------------------------------------

    async def v2_status(self, engine: str, task_type: str, task_ids: Sequence[str]) -> list[V2Task]:
        out: list[V2Task] = []
        for chunk in chunks([str(i) for i in task_ids], MAX_IDS):
            request = Request(
                "POST", f"/v2/task/{engine}/{task_type}/status", json={"task_ids": chunk}
            )
            body: dict[str, Any] = (await self.send(request)).json()
            out.extend(V2Task.model_validate(item) for item in body.get("result") or [])
        return out
