"""The asyncio client: ``AsyncClient(base_url, api_key)``, the same calls awaited."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
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


class AsyncClient(Base):
    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float = 30.0,
        retries: int = 3,
        transport: httpx.AsyncBaseTransport | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(base_url, api_key, timeout=timeout, retries=retries)
        self.sleep = sleep
        self.clock = clock
        self._http = httpx.AsyncClient(
            base_url=self.base_url, timeout=timeout, transport=transport, headers=self._headers()
        )

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def send(self, request: Request, *, retry: bool = True) -> httpx.Response:
        attempt = 0
        while True:
            try:
                response = await self._http.request(
                    request.method,
                    request.path,
                    params=request.params,
                    json=request.json,
                    headers=request.headers,
                )
            except httpx.TransportError as exc:
                if not retry or attempt >= self.retries:
                    raise errors.TransportError(f"{request.method} {request.path}: {exc}") from exc
                await self.sleep(_backoff(attempt))
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
                await self.sleep(max(_backoff(attempt), exc.retry_after or 0.0))
                attempt += 1

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

    async def get(self, kind: str, job_id: int, *, long_poll: float = 0.0) -> Job:
        kind = kind_of(kind)
        response = await self.send(self.status_request(kind, job_id, long_poll), retry=False)
        return self.job(kind, response.json())

    async def jobs(
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
                out.extend(await self._list(kind, chunk, status, MAX_IDS, everything=True))
            return out
        return await self._list(kind, None, status, limit, everything=False)

    async def _list(
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
            body = (await self.send(request)).json()
            out.extend(self.job(kind, item) for item in body["jobs"])
            cursor = body.get("next_cursor")
            if not cursor or (not everything and len(out) >= limit):
                return out

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

    async def usage(self) -> Usage:
        return Usage.model_validate((await self.send(Request("GET", "/api/v1/usage"))).json())

    async def wait(
        self,
        kind: str,
        job_id: int,
        *,
        policy: PollPolicy | None = None,
        poll_first: bool = True,
    ) -> Job:
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
                    await self.sleep(value)
                else:
                    outcome = await self._poll(kind, job_id, policy.long_poll)
        except StopIteration as done:
            result: Job = done.value
            return result

    async def _poll(self, kind: str, job_id: int, long_poll: float) -> Outcome:
        try:
            return Outcome(job=await self.get(kind, job_id, long_poll=long_poll))
        except errors.RateLimitedError as exc:
            return Outcome(rate_limited=exc)
        except (errors.TransportError, errors.ServerError) as exc:
            return Outcome(transport=exc)

    async def v2_status(self, engine: str, task_type: str, task_ids: Sequence[str]) -> list[V2Task]:
        out: list[V2Task] = []
        for chunk in chunks([str(i) for i in task_ids], MAX_IDS):
            request = Request(
                "POST", f"/v2/task/{engine}/{task_type}/status", json={"task_ids": chunk}
            )
            body: dict[str, Any] = (await self.send(request)).json()
            out.extend(V2Task.model_validate(item) for item in body.get("result") or [])
        return out


def _backoff(attempt: int) -> float:
    return random.uniform(0, min(10.0, 0.5 * 2**attempt))
