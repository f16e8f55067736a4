"""What the sync and async clients share: requests, answers, errors and the wait machine.

Nothing here does I/O. The shells (``sync.Client``, ``aio.AsyncClient``) send the requests
this module builds and feed the answers back, the way httpx keeps its logic out of its
transports.
"""

from __future__ import annotations

import logging
import os
import re
import uuid
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

import httpx
from pydantic import BaseModel

from seojobs import __version__
from seojobs.client import errors
from seojobs.client.models import CheckJob, Job, SubmitJob
from seojobs.client.policy import KNOWN, PollPolicy

log = logging.getLogger("seojobs.client")
M = TypeVar("M", bound=BaseModel)

DEFAULT_URL = "http://127.0.0.1:8000"
MAX_IDS = 1000  # ids per list or v2 status request
KIND_PATH = {"index_submit": "index-submit", "index_check": "index-check"}
PATH_KIND = {v: k for k, v in KIND_PATH.items()}
_RATELIMIT = re.compile(r'"?(?P<name>[^";]+)"?\s*;(?P<params>.*)')


def kind_of(kind: str) -> str:
    """Accept ``index_submit``, ``index-submit``, ``submit`` (and the check forms)."""
    value = kind.strip().lower().replace("-", "_")
    if value in ("submit", "check"):
        value = f"index_{value}"
    if value not in KIND_PATH:
        raise ValueError(f"unknown job kind {kind!r}: use index_submit or index_check")
    return value


T = TypeVar("T")


def chunks(values: list[T], size: int) -> Iterator[list[T]]:
    for start in range(0, len(values), size):
        yield values[start : start + size]


def job_model(kind: str) -> type[Job]:
    return SubmitJob if kind == "index_submit" else CheckJob


@dataclass
class RateLimitState:
    """The budget the server last announced (IETF RateLimit fields), if any."""

    limit: int | None = None
    window: float | None = None
    remaining: int | None = None
    reset_in: float | None = None

    def update(self, headers: httpx.Headers) -> None:
        policy = _parse_sf_params(headers.get("ratelimit-policy"))
        if policy:
            self.limit = _int(policy.get("q"), self.limit)
            self.window = _float(policy.get("w"), self.window)
        current = _parse_sf_params(headers.get("ratelimit"))
        if current:
            self.remaining = _int(current.get("r"), self.remaining)
            self.reset_in = _float(current.get("t"), self.reset_in)

    @property
    def per_second(self) -> float | None:
        if self.limit and self.window:
            return self.limit / self.window
        return None


def _parse_sf_params(value: str | None) -> dict[str, str]:
    # Malformed fields are ignored, as the draft requires of clients.
    if not value:
        return {}
    match = _RATELIMIT.match(value.split(",")[0].strip())
    if not match:
        return {}
    out = {}
    for part in match.group("params").split(";"):
        name, _, val = part.strip().partition("=")
        if name and val:
            out[name.strip()] = val.strip()
    return out


def _int(value: str | None, default: int | None) -> int | None:
    try:
        return int(value) if value is not None else default
    except ValueError:
        return default


def _float(value: str | None, default: float | None) -> float | None:
    try:
        return float(value) if value is not None else default
    except ValueError:
        return default


def retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


@dataclass
class Request:
    method: str
    path: str
    params: dict[str, Any] | list[tuple[str, Any]] | None = None
    json: Any = None
    headers: dict[str, str] = field(default_factory=dict)


class Base:
    """Configuration and the pure parts of both clients."""

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float = 30.0,
        retries: int = 3,
    ) -> None:
        self.base_url = (base_url or os.environ.get("SEOJOBS_URL") or DEFAULT_URL).rstrip("/")
        self.api_key = api_key if api_key is not None else os.environ.get("SEOJOBS_API_KEY")
        self.timeout = timeout
        self.retries = retries
        self.rate_limit = RateLimitState()
        self._unknown_logged: set[str] = set()

    def _headers(self) -> dict[str, str]:
        headers = {"Accept": "application/json", "User-Agent": f"seojobs-client/{__version__}"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        return headers

    # -- requests ----------------------------------------------------------------------

    @staticmethod
    def create_request(
        kind: str,
        urls: Sequence[str],
        *,
        engine: str = "google",
        checker: int | None = None,
        title: str | None = None,
        idempotency_key: str | None = None,
    ) -> Request:
        body: dict[str, Any] = {"urls": list(urls), "engine": engine}
        if checker is not None:
            body["checker"] = checker
        if title is not None:
            body["title"] = title
        # Always keyed: a POST retried after a lost answer must not make a second job.
        key = idempotency_key or str(uuid.uuid4())
        return Request(
            "POST",
            f"/api/v1/{KIND_PATH[kind]}/jobs",
            json=body,
            headers={"Idempotency-Key": key},
        )

    @staticmethod
    def status_request(kind: str, job_id: int, long_poll: float = 0.0) -> Request:
        headers = {"Prefer": f"wait={int(long_poll)}"} if long_poll >= 1 else {}
        return Request("GET", f"/api/v1/{KIND_PATH[kind]}/jobs/{job_id}", headers=headers)

    @staticmethod
    def list_request(
        kind: str,
        *,
        ids: Sequence[int] | None = None,
        status: Sequence[str] | None = None,
        cursor: str | None = None,
        limit: int = 100,
    ) -> Request:
        params: list[tuple[str, Any]] = [("limit", limit)]
        if ids:
            params.append(("ids", ",".join(str(i) for i in ids)))
        for value in status or ():
            params.append(("status", value))
        if cursor:
            params.append(("cursor", cursor))
        return Request("GET", f"/api/v1/{KIND_PATH[kind]}/jobs", params=params)

    @staticmethod
    def report_request(kind: str, job_id: int, cursor: str | None, csv: bool = False) -> Request:
        params = {"cursor": cursor} if cursor else None
        headers = {"Accept": "text/csv"} if csv else {}
        return Request(
            "GET",
            f"/api/v1/{KIND_PATH[kind]}/jobs/{job_id}/report",
            params=params,
            headers=headers,
        )

    # -- answers -----------------------------------------------------------------------

    def check(self, response: httpx.Response) -> httpx.Response:
        """Record the rate-limit fields; raise the matching APIError for an error status."""
        self.rate_limit.update(response.headers)
        if response.status_code < 400:
            return response
        body: Any = None
        try:
            body = response.json()
        except ValueError:
            body = None
        problem = body if isinstance(body, dict) else {}
        cls = errors.error_class(response.status_code)
        raise cls(
            response.status_code,
            str(problem.get("title") or response.reason_phrase or "Error"),
            problem.get("detail") or (None if problem else response.text[:300] or None),
            type=str(problem.get("type", "about:blank")),
            errors=problem.get("errors") if isinstance(problem.get("errors"), list) else None,
            retry_after=retry_after(response),
            body=body,
        )

    def job(self, kind: str, data: Any) -> Job:
        job = job_model(kind).model_validate(data)
        job.kind = kind
        self.note_status(job.status)
        return job

    def note_status(self, status: str) -> None:
        """Unknown statuses count as not finished; say so once per value."""
        if status not in KNOWN and status not in self._unknown_logged:
            self._unknown_logged.add(status)
            log.warning("unknown job status %r: treating it as not finished", status)


# -- the wait machine --------------------------------------------------------------------------

Step = tuple[Literal["poll"], None] | tuple[Literal["sleep"], float]


@dataclass
class Outcome:
    """What one poll produced, sent back into the machine."""

    job: Job | None = None
    rate_limited: errors.RateLimitedError | None = None
    transport: Exception | None = None


def wait_steps(
    policy: PollPolicy, *, poll_first: bool, elapsed: Any
) -> Generator[Step, Outcome | None, Job]:
    """Yield ("poll", None) and ("sleep", s) steps until a poll returns a terminal job.

    After a submission (``poll_first=False``) the first poll comes ``policy.start`` seconds
    later and each unfinished poll multiplies the delay by ``policy.factor``; waiting on a job
    of unknown state polls at once, then sleeps ``start``. A 429 doubles the delay and never
    undercuts its Retry-After. ``elapsed()`` gives seconds since the wait began (an injected
    clock); WaitTimeout, carrying the last job seen, is raised rather than sleeping past the
    deadline.
    """
    delay = policy.start
    last: Job | None = None
    grow = not poll_first
    if not poll_first:
        yield from _sleep(policy, delay, elapsed, last)
    while True:
        outcome = yield ("poll", None)
        assert outcome is not None
        if outcome.job is not None:
            last = outcome.job
            if last.is_terminal:
                return last
        if outcome.rate_limited is not None:
            delay = policy.after_rate_limit(delay, outcome.rate_limited.retry_after)
        elif grow:
            delay = policy.after_unfinished(delay)
        grow = True
        yield from _sleep(policy, delay, elapsed, last)


def _sleep(
    policy: PollPolicy, delay: float, elapsed: Any, last: Job | None
) -> Generator[Step, Outcome | None, None]:
    spent = float(elapsed())
    if spent + delay > policy.deadline:
        where = f"; last status {last.status!r}" if last else ""
        raise errors.WaitTimeout(
            f"job still not finished after {spent:.0f}s (deadline {policy.deadline:.0f}s){where}",
            last,
        )
    yield ("sleep", policy.jittered(delay))
