"""What the sync and async clients share: requests, answers, errors, pacing and the wait machine.

Nothing here does I/O. The shells (``sync.Client``, ``aio.AsyncClient``) send the requests
this module builds, sleep for the delays it computes and feed the answers back, the way httpx
keeps its logic out of its transports.
"""

from __future__ import annotations

import logging
import os
import random
import re
import time
import uuid
from collections import deque
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, Generic, Literal, Protocol, TypeVar

import http_sf
import httpx
from http_sf.types import BareItemType
from pydantic import BaseModel

from seojobs import __version__
from seojobs.client import errors
from seojobs.client._hints import Hints
from seojobs.client.models import CheckJob, Job, SubmitJob
from seojobs.client.policy import KNOWN, PollPolicy, RetryPolicy

log = logging.getLogger("seojobs.client")
M = TypeVar("M", bound=BaseModel)
T = TypeVar("T")

DEFAULT_URL = "http://127.0.0.1:8000"
MAX_IDS = 1000  # ids per list or v2 status request
KIND_PATH = {"index_submit": "index-submit", "index_check": "index-check"}
PATH_KIND = {v: k for k, v in KIND_PATH.items()}
RETRYABLE = frozenset({502, 503, 504})
IDEMPOTENCY_HEADER = "Idempotency-Key"


def kind_of(kind: str) -> str:
    """Accept ``index_submit``, ``index-submit``, ``submit`` (and the check forms)."""
    value = kind.strip().lower().replace("-", "_")
    if value in ("submit", "check"):
        value = f"index_{value}"
    if value not in KIND_PATH:
        raise ValueError(f"unknown job kind {kind!r}: use index_submit or index_check")
    return value


class _VerifiedOnDemand(httpx.BaseTransport):
    """httpx's verifying transport, made at the first https request: loading the CA bundle
    costs 20-30 ms of CPU, which a client of an http:// server (one ``seojobs`` command) never
    needs."""

    def __init__(self) -> None:
        self._real: httpx.HTTPTransport | None = None

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if self._real is None:
            self._real = httpx.HTTPTransport()
        return self._real.handle_request(request)

    def close(self) -> None:
        if self._real is not None:
            self._real.close()


class _AsyncVerifiedOnDemand(httpx.AsyncBaseTransport):
    """:class:`_VerifiedOnDemand` for the async client."""

    def __init__(self) -> None:
        self._real: httpx.AsyncHTTPTransport | None = None

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if self._real is None:
            self._real = httpx.AsyncHTTPTransport()
        return await self._real.handle_async_request(request)

    async def aclose(self) -> None:
        if self._real is not None:
            await self._real.aclose()


def http_client(
    base_url: str, transport: httpx.BaseTransport | None, **kwargs: Any
) -> httpx.Client:
    """An httpx client; for an http:// server, TLS is set up only if an https URL is ever
    requested (with verification, as httpx's default)."""
    if transport is not None or not base_url.startswith("http://"):
        return httpx.Client(base_url=base_url, transport=transport, **kwargs)
    return httpx.Client(
        base_url=base_url,
        # Sends only to http:// URLs: no certificate is ever checked with it.
        transport=httpx.HTTPTransport(verify=False),
        mounts={"https://": _VerifiedOnDemand()},
        **kwargs,
    )


def async_http_client(
    base_url: str, transport: httpx.AsyncBaseTransport | None, **kwargs: Any
) -> httpx.AsyncClient:
    """:func:`http_client` for the async client."""
    if transport is not None or not base_url.startswith("http://"):
        return httpx.AsyncClient(base_url=base_url, transport=transport, **kwargs)
    return httpx.AsyncClient(
        base_url=base_url,
        transport=httpx.AsyncHTTPTransport(verify=False),  # sends only to http:// URLs
        mounts={"https://": _AsyncVerifiedOnDemand()},
        **kwargs,
    )


def chunks(values: list[T], size: int) -> Iterator[list[T]]:
    for start in range(0, len(values), size):
        yield values[start : start + size]


def job_model(kind: str) -> type[Job]:
    return SubmitJob if kind == "index_submit" else CheckJob


# -- RateLimit fields: RFC 9651 Structured Fields lists, parsed by http-sf ---------------------

SFValue = BareItemType  # int, Decimal, str, Token, bytes, bool, datetime, DisplayString
SFMember = tuple[str, dict[str, SFValue]]


def parse_sf_list(text: str | None) -> list[SFMember] | None:
    """The members of a Structured Fields list, named by their string or token; None when the
    field is absent or malformed (the draft tells clients to ignore such a field).

    Members that are not a string or token (inner lists, numbers, ...) cannot name a policy
    and are left out.
    """
    if text is None:
        return None
    try:
        # httpx decoded the field as latin-1 at worst: encoding it back gives the wire bytes.
        parsed = http_sf.parse(text.encode("latin-1"), tltype="list")
    except (UnicodeEncodeError, ValueError):  # StructuredFieldError is a ValueError
        return None
    members: list[SFMember] = []
    for member in parsed if isinstance(parsed, list) else ():
        name, params = member if isinstance(member, tuple) else (None, None)
        if isinstance(name, str | http_sf.Token) and isinstance(params, dict):
            members.append((str(name), params))
    return members


def _whole(value: SFValue | None, *, positive: bool = False) -> int | None:
    """A non-negative (or positive) sf-integer, else None."""
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    if value < 0 or (positive and value == 0):
        return None
    return value


@dataclass
class RateLimitState:
    """The budget the server last announced (IETF draft ``RateLimit-Policy``/``RateLimit``).

    Malformed fields are ignored, as the draft requires of clients; with several policies the
    most restrictive one (lowest quota per second) wins. ``observed_at`` is the client clock
    when ``remaining``/``reset_in`` were read.
    """

    limit: int | None = None
    window: float | None = None
    remaining: int | None = None
    reset_in: float | None = None
    observed_at: float | None = None
    policy_name: str | None = None

    def update(self, headers: httpx.Headers, now: float | None = None) -> None:
        self._update_policy(parse_sf_list(headers.get("ratelimit-policy")))
        self._update_current(parse_sf_list(headers.get("ratelimit")), now)

    def _update_policy(self, members: list[SFMember] | None) -> None:
        best: tuple[float, str, int, int] | None = None
        for name, params in members or ():
            quota, window = _whole(params.get("q")), _whole(params.get("w"), positive=True)
            if quota is None or window is None:
                continue
            candidate = (quota / window, name, quota, window)
            if best is None or candidate[0] < best[0]:
                best = candidate
        if best is not None:
            _, self.policy_name, self.limit, window = best
            self.window = float(window)

    def _update_current(self, members: list[SFMember] | None, now: float | None) -> None:
        chosen: tuple[int, int | None] | None = None
        for name, params in members or ():
            remaining = _whole(params.get("r"))
            if remaining is None:
                continue
            reset = _whole(params.get("t")) if "t" in params else None
            if "t" in params and reset is None:
                continue
            if name == self.policy_name:
                chosen = (remaining, reset)
                break
            if chosen is None or remaining < chosen[0]:
                chosen = (remaining, reset)
        if chosen is not None:
            self.remaining = chosen[0]
            self.reset_in = float(chosen[1]) if chosen[1] is not None else None
            self.observed_at = now

    @property
    def per_second(self) -> float | None:
        if self.limit and self.window:
            return self.limit / self.window
        return None

    def reset_left(self, now: float) -> float | None:
        """Seconds left of the announced ``t`` (None when unknown or already over)."""
        if self.reset_in is None or self.observed_at is None:
            return None
        left = self.observed_at + self.reset_in - now
        return left if left > 0 else None


class Budget:
    """Client-side pacing shared by every call one client makes.

    Never more requests within the server's window than its announced limit (counted from when
    each answer arrived, so the server has certainly counted it by then), nothing while a 429's
    Retry-After runs, and nothing while the server says ``r=0`` until its ``t`` has passed.
    """

    def __init__(self, keep: int = 10_000) -> None:
        self._done: deque[float] = deque(maxlen=keep)
        self._in_flight = 0
        self.blocked_until = float("-inf")

    def delay(self, now: float, state: RateLimitState) -> float:
        wait = self.blocked_until - now
        if state.remaining == 0:
            left = state.reset_left(now)
            if left is not None:
                wait = max(wait, left)
        if state.limit and state.window:
            while self._done and self._done[0] <= now - state.window:
                self._done.popleft()
            excess = len(self._done) + self._in_flight - state.limit + 1
            if 0 < excess <= len(self._done):
                wait = max(wait, self._done[excess - 1] + state.window - now)
            elif excess > 0:
                wait = max(wait, 0.05)  # every slot is in flight: look again shortly
        return max(0.0, wait)

    def begin(self) -> None:
        self._in_flight += 1

    def end(self, now: float) -> None:
        self._in_flight = max(0, self._in_flight - 1)
        self._done.append(now)

    def hold(self, now: float, seconds: float) -> None:
        self.blocked_until = max(self.blocked_until, now + seconds)


def parse_retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """Retry-After as seconds: delay-seconds or an HTTP-date; None when absent or malformed."""
    if value is None:
        return None
    value = value.strip()
    if re.fullmatch(r"\d+(?:\.\d+)?", value):
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def retry_after(response: httpx.Response) -> float | None:
    return parse_retry_after(response.headers.get("retry-after"))


_PROBLEM_MEMBERS = frozenset({"type", "title", "status", "detail", "instance", "errors", "code"})


def error_from(response: httpx.Response) -> errors.APIError:
    """The exception for an error answer, with the problem+json members when there are any."""
    try:
        body: Any = response.json()
    except ValueError:
        body = None
    problem: dict[str, Any] = body if isinstance(body, dict) else {}
    cls = errors.error_class(response.status_code)
    field_errors = problem.get("errors")
    detail = problem.get("detail")
    if not problem:
        detail = response.text[:300] or None
    return cls(
        response.status_code,
        str(problem.get("title") or response.reason_phrase or "Error"),
        str(detail) if detail is not None else None,
        type=str(problem.get("type") or "about:blank"),
        instance=str(problem["instance"]) if problem.get("instance") else None,
        code=str(problem["code"]) if problem.get("code") else None,
        errors=field_errors if isinstance(field_errors, list) else None,
        extensions={k: v for k, v in problem.items() if k not in _PROBLEM_MEMBERS},
        retry_after=retry_after(response),
        body=body,
    )


@dataclass
class Request:
    method: str
    path: str
    params: dict[str, Any] | list[tuple[str, Any]] | None = None
    json: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    extra_time: float = 0.0  # added to the read timeout (a long poll is held this long)


class Base:
    """Configuration and the pure parts of both clients."""

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float = 30.0,
        retries: int = 3,
        retry_policy: RetryPolicy | None = None,
        clock: Callable[[], float] = time.monotonic,
        pace: bool = True,
    ) -> None:
        self.base_url = (base_url or os.environ.get("SEOJOBS_URL") or DEFAULT_URL).rstrip("/")
        self.api_key = api_key if api_key is not None else os.environ.get("SEOJOBS_API_KEY")
        self.timeout = timeout
        self.retry_policy = retry_policy or RetryPolicy(attempts=retries)
        self.clock = clock
        self.pace = pace
        self.rate_limit = RateLimitState()
        self.budget = Budget()
        self.rng = random.Random()
        self.requests_sent = 0  # every HTTP attempt, retries included
        # Attempts that may have been handled without us hearing the answer (connection
        # lost, 5xx): a DELETE retried after one of them may find its target already gone.
        self.unanswered = 0
        self._unknown_logged: set[str] = set()
        self.hints = Hints()  # the job types' poll hints, read when a wait first needs one

    @property
    def retries(self) -> int:
        return self.retry_policy.attempts

    def _headers(self) -> dict[str, str]:
        headers = {"Accept": "application/json", "User-Agent": f"seojobs-client/{__version__}"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        return headers

    def _timeout(self, request: Request) -> float | None:
        return self.timeout + request.extra_time if request.extra_time else None

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
        # Always keyed, and the key made before the first send: a POST retried after a lost
        # answer carries the same key and gets the same job back, not a second one.
        key = idempotency_key or str(uuid.uuid4())
        return Request(
            "POST",
            f"/api/v1/{KIND_PATH[kind]}/jobs",
            json=body,
            headers={IDEMPOTENCY_HEADER: key},
        )

    @staticmethod
    def status_request(kind: str, job_id: int, long_poll: float = 0.0) -> Request:
        wait = int(long_poll)
        headers = {"Prefer": f"wait={wait}"} if wait >= 1 else {}
        return Request(
            "GET",
            f"/api/v1/{KIND_PATH[kind]}/jobs/{job_id}",
            headers=headers,
            extra_time=float(wait) if wait >= 1 else 0.0,
        )

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

    @staticmethod
    def cancel_request(kind: str, job_id: int) -> Request:
        return Request("POST", f"/api/v1/{KIND_PATH[kind]}/jobs/{job_id}/cancel")

    # -- pacing and retries ------------------------------------------------------------

    def pace_delay(self) -> float:
        """How long to hold the next request back (0 when pacing is off)."""
        return self.budget.delay(self.clock(), self.rate_limit) if self.pace else 0.0

    def count_unanswered(self, error: errors.SeojobsError) -> None:
        if isinstance(error, errors.TransportError | errors.ServerError):
            self.unanswered += 1

    def retry_delay(
        self, request: Request, attempt: int, error: errors.SeojobsError, *, retry_429: bool
    ) -> float | None:
        """Seconds to wait before trying ``request`` again, or None to give up with ``error``.

        Connection errors and 502-504 are retried (a POST too: it carries its Idempotency-Key),
        a 429 after at least its Retry-After, and a 409 of a keyed POST whose first try is
        still being handled after its Retry-After.
        """
        if attempt >= self.retry_policy.attempts:
            return None
        backoff = self.retry_policy.delay(attempt, self.rng)
        if isinstance(error, errors.TransportError):
            return backoff
        if not isinstance(error, errors.APIError):
            return None
        if isinstance(error, errors.RateLimitedError):
            if not retry_429:
                return None
            told = error.retry_after
            if told is None:
                told = self.rate_limit.reset_left(self.clock()) or float(2**attempt)
            return max(backoff, told)
        if isinstance(error, errors.ServerError) and error.status in RETRYABLE:
            return max(backoff, error.retry_after or 0.0)
        keyed_post = request.method == "POST" and IDEMPOTENCY_HEADER in request.headers
        if isinstance(error, errors.ConflictError) and keyed_post and error.retry_after is not None:
            return max(backoff, error.retry_after)
        return None

    # -- answers -----------------------------------------------------------------------

    def check(self, response: httpx.Response) -> httpx.Response:
        """Record the rate-limit fields; raise the matching APIError for an error status."""
        now = self.clock()
        self.rate_limit.update(response.headers, now)
        if response.status_code < 400:
            return response
        error = error_from(response)
        if isinstance(error, errors.RateLimitedError):
            told = error.retry_after
            if told is None:
                told = self.rate_limit.reset_left(now) or 1.0
            self.budget.hold(now, told)
        raise error

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

# ("poll", seconds): read the job, asking the server to hold the answer up to that long
# (``Prefer: wait``; 0: a plain read); ("sleep", seconds).
Step = tuple[Literal["poll"], float] | tuple[Literal["sleep"], float]
LONG_POLL_SPACING = 1.0  # the first long polls come one a second at most


class Waited(Protocol):
    """What the machine needs of a job: an index job (``Job``) or any job (``ProjectJob``)."""

    status: str

    @property
    def is_terminal(self) -> bool: ...


W = TypeVar("W", bound=Waited)


@dataclass
class Outcome(Generic[W]):
    """What one poll produced, sent back into the machine."""

    job: W | None = None
    rate_limited: errors.RateLimitedError | None = None
    transport: Exception | None = None
    held: float = 0.0  # seconds the server held a long poll (Prefer: wait) before answering
    honoured: bool = False  # the server said it held the read (Preference-Applied)


def polled(job: W, response: httpx.Response, seconds: float) -> Outcome[W]:
    """A poll's outcome: ``seconds`` counts as held only when the server says it honoured
    ``Prefer: wait`` (a server that ignores it answers at once: the round trip is no hold)."""
    honoured = "preference-applied" in response.headers
    return Outcome(job=job, held=seconds if honoured else 0.0, honoured=honoured)


def wait_steps(
    policy: PollPolicy,
    *,
    poll_first: bool,
    elapsed: Callable[[], float],
    rng: random.Random | None = None,
    first_floor: float = 0.0,
) -> Generator[Step, Outcome[W] | None, W]:
    """Yield ("poll", s) and ("sleep", s) steps until a poll returns a terminal job.

    First the long polls (``policy.first_long_poll``, ``first_long_polls``): at once, each
    asking the server to hold the read until the job changes, one a second at most, while
    the server honours them; a job that ends at once is so reported at once. Then seed 000's
    schedule: the next poll ``policy.start`` later, ``policy.factor`` times longer after each
    unfinished poll.

    Without long polls, after a submission (``poll_first=False``) the first poll comes
    ``policy.start`` seconds later, and never sooner than ``first_floor`` (the Retry-After of
    the 202 that started the job); waiting on a job of unknown state polls at once, then
    sleeps ``start``. A 429 multiplies the delay by ``rate_limit_factor`` and the sleep never
    undercuts its Retry-After (jitter included). A failed poll (connection, 5xx, after the
    client's own retries) counts as unfinished. Time the server held a long poll is taken off
    the next sleep.

    ``elapsed()`` gives seconds since the wait began (an injected clock). The machine never
    sleeps past ``policy.deadline``: when the next sleep would cross it, it sleeps to the
    deadline, polls one last time, then raises WaitTimeout carrying the last job seen.
    """
    delay = policy.start
    last: W | None = None
    final = False
    outcome = yield from _long_polls(policy, elapsed)
    grow = not poll_first
    if outcome is None:
        if not poll_first:
            final = yield from _pause(policy, delay, first_floor, elapsed, last, rng)
        outcome = yield ("poll", policy.long_poll)
    else:
        grow = False  # the long polls stood for the first read: the schedule starts at ``start``
    while True:
        assert outcome is not None
        if outcome.job is not None:
            last = outcome.job
            if last.is_terminal:
                return last
        floor = 0.0
        if outcome.rate_limited is not None:
            floor = outcome.rate_limited.retry_after or 0.0
            delay = policy.after_rate_limit(delay, outcome.rate_limited.retry_after)
        elif grow:
            delay = policy.after_unfinished(delay)
        grow = True
        if final:
            raise _timeout(policy, elapsed(), last)
        pause = max(0.0, delay - outcome.held)
        final = yield from _pause(policy, pause, floor, elapsed, last, rng)
        outcome = yield ("poll", policy.long_poll)


def _long_polls(
    policy: PollPolicy, elapsed: Callable[[], float]
) -> Generator[Step, Any, Outcome[Any] | None]:
    """The first reads, held by the server (``Prefer: wait``); the last one's outcome, or None
    when none was made. They end at a terminal job, when the server does not hold them (it
    ignores ``Prefer``), at a 429 or a failed read, after ``first_long_polls``, or when less
    than a second of the deadline is left."""
    outcome: Outcome[Any] | None = None
    began = 0.0
    for round_ in range(policy.first_long_polls):
        if round_:
            pause = LONG_POLL_SPACING - (elapsed() - began)
            if pause > 0:
                yield ("sleep", pause)
        began = elapsed()
        wait = float(int(min(policy.first_long_poll, policy.deadline - began)))
        if wait < 1:
            break
        outcome = yield ("poll", wait)
        assert outcome is not None
        if outcome.job is not None and outcome.job.is_terminal:
            break
        if not outcome.honoured or outcome.job is None:
            break
    return outcome


def _pause(
    policy: PollPolicy,
    delay: float,
    floor: float,
    elapsed: Callable[[], float],
    last: Waited | None,
    rng: random.Random | None,
) -> Generator[Step, Any, bool]:
    """Sleep ``delay`` (jittered, never below ``floor``); True if the sleep ends at the deadline."""
    spent = float(elapsed())
    left = policy.deadline - spent
    pause = policy.jittered(delay, rng, floor=floor)
    if pause < left:
        yield ("sleep", pause)
        return False
    if left <= 0 or floor > left:
        raise _timeout(policy, spent, last)
    yield ("sleep", left)
    return True


def _timeout(policy: PollPolicy, spent: float, last: Waited | None) -> errors.WaitTimeout:
    where = f"; last status {last.status!r}" if last else ""
    return errors.WaitTimeout(
        f"job still not finished after {spent:.0f}s (deadline {policy.deadline:.0f}s){where}",
        last,
    )
