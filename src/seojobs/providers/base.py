"""What every provider adapter shares: result types, one exception tree, bounded retries.

An adapter turns one provider's wire format into :class:`SubmitResult` / :class:`CheckResult`.
It never raises for a per-URL problem (that is a result with an ``error_code``); it raises
:class:`ProviderError` only when the whole call failed (auth, quota, transport), with
``retryable`` set for 429/5xx/transport errors so :func:`with_retries` can back off.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import random
import urllib.request
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, Protocol, TypeVar
from urllib.parse import urlsplit

import aiohttp
import httpx
from multidict import CIMultiDictProxy

from seojobs.fetch import aio
from seojobs.fetch.aio import AiohttpTransport
from seojobs.fetch.result import header_charset
from seojobs.settings import Settings

T = TypeVar("T")

CheckStatus = Literal["indexed", "not_indexed", "failed"]

# Error codes shared by all adapters (stored on items and shown in reports).
UPSTREAM_ERROR = "upstream_error"  # 429/5xx/transport, after the bounded retries
MALFORMED_RESPONSE = "malformed_response"  # the answer was not of the documented shape
AUTH_FAILED = "provider_auth_failed"  # bad or missing credentials: nothing can proceed
QUOTA_EXHAUSTED = "provider_quota_exhausted"  # the provider's own quota is used up
REJECTED = "provider_rejected"  # the provider refused this URL (e.g. 422 host mismatch)
NOT_CONFIGURED = "provider_not_configured"


class ProviderError(Exception):
    """A whole provider call failed."""

    def __init__(
        self,
        code: str,
        message: str,
        *,
        retryable: bool = False,
        retry_after: float | None = None,
        status: int | None = None,
        fatal: bool = False,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.retryable = retryable
        self.retry_after = retry_after
        self.status = status
        # fatal: no other URL of this job can succeed with this provider (bad credentials).
        self.fatal = fatal


class ProviderNotConfigured(ProviderError):
    def __init__(self, provider: str, settings_needed: list[str]) -> None:
        names = ", ".join(f"SEOJOBS_{n.upper()}" for n in settings_needed)
        super().__init__(NOT_CONFIGURED, f"{provider} is not configured: set {names}", fatal=True)
        self.provider = provider
        self.settings_needed = settings_needed


@dataclass(frozen=True)
class SubmitResult:
    url: str
    ok: bool
    provider: str
    error_code: str | None = None
    error_message: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class CheckResult:
    url: str
    status: CheckStatus
    provider: str
    error_code: str | None = None
    error_message: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)


class Submitter(Protocol):
    name: str
    max_batch: int  # most URLs one submit() call takes

    async def submit(self, urls: list[str]) -> list[SubmitResult]: ...


class Checker(Protocol):
    name: str

    async def check(self, url: str, engine: str) -> CheckResult: ...


class Answer(Protocol):
    """What adapters read of an HTTP answer (an ``httpx.Response`` or a ``ProviderResponse``)."""

    @property
    def status_code(self) -> int: ...

    @property
    def headers(self) -> Mapping[str, str]: ...

    @property
    def text(self) -> str: ...

    def json(self) -> Any: ...


class ProviderResponse:
    """An answer of :class:`ProviderClient`: status, headers and the decoded body.

    ``text`` and ``json()`` mean what they mean on ``httpx.Response`` (charset from
    ``Content-Type``, else UTF-8, undecodable bytes replaced; JSON from the bytes).
    """

    __slots__ = ("content", "headers", "status_code")

    def __init__(self, status_code: int, headers: CIMultiDictProxy[str], content: bytes) -> None:
        self.status_code = status_code
        self.headers = headers
        self.content = content

    @property
    def text(self) -> str:
        charset = header_charset(self.headers.get("content-type"))
        try:
            return self.content.decode(charset or "utf-8", errors="replace")
        except LookupError:  # an unknown charset: httpx falls back to UTF-8 too
            return self.content.decode("utf-8", errors="replace")

    def json(self) -> Any:
        return json.loads(self.content)


def _decoded(status: int, headers: CIMultiDictProxy[str], raw: bytes, pairs: Any) -> bytes:
    """The body without its Content-Encoding, decoded by httpx (DecodingError if it cannot)."""
    if headers.get("content-encoding", "identity").strip().lower() in ("", "identity"):
        return raw
    return httpx.Response(status, headers=pairs, content=raw).content


class ProviderClient:
    """The lean HTTP client of the per-URL provider calls: aiohttp directly, httpx's answers.

    A request goes straight to an aiohttp session (httpx's client layer — request building,
    auth and cookie flows, hooks — cost more CPU than the request itself on the hot path of
    index checks); the answer is an ``httpx.Response`` built from the raw bytes, so
    ``Content-Encoding`` is decoded (and an undecodable body raises ``httpx.DecodingError``)
    exactly as before, and adapters read it as they always did. aiohttp's errors are raised
    as httpx's (``seojobs.fetch.aio.translate``), so ``with_retries`` and the adapters' own
    ``except httpx.TransportError`` keep working. Proxies from the environment
    (``HTTP_PROXY``/``HTTPS_PROXY``, ``NO_PROXY``) apply, as they did through httpx; they are
    looked up once per origin and client (aiohttp's ``trust_env`` would ask on every request,
    in a thread).
    """

    def __init__(self, settings: Settings) -> None:
        self._timeout = aio.client_timeout(
            settings.fetch_connect_timeout, settings.provider_timeout
        )
        self._headers = {
            "User-Agent": settings.user_agent,
            "Accept": "*/*",
            "Accept-Encoding": "gzip, deflate",  # what httpx offered, and decodes
        }
        self._session: aiohttp.ClientSession | None = None
        self._proxies: dict[tuple[str, str], str | None] = {}

    def _open(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aio.client_session(
                aiohttp.TCPConnector(limit=100),
                auto_decompress=False,  # httpx.Response decodes, as before
                headers=self._headers,
                timeout=self._timeout,
            )
        return self._session

    def _proxy_for(self, url: str) -> str | None:
        parts = urlsplit(url)
        origin = (parts.scheme, parts.netloc)
        if origin not in self._proxies:
            bypass = urllib.request.proxy_bypass(parts.hostname or "")
            proxy = None if bypass else urllib.request.getproxies().get(parts.scheme)
            self._proxies[origin] = proxy
        return self._proxies[origin]

    async def post_json(
        self, url: str, body: Any, *, headers: dict[str, str] | None = None
    ) -> ProviderResponse:
        """POST ``body`` as JSON (encoded as httpx encodes ``json=``)."""
        content = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        sent = {"Content-Type": "application/json", **(headers or {})}
        return await self.request("POST", url, content=content.encode(), headers=sent)

    async def request(
        self,
        method: str,
        url: str,
        *,
        content: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> ProviderResponse:
        try:
            async with self._open().request(
                method,
                url,
                data=content,
                headers=headers,
                allow_redirects=False,
                proxy=self._proxy_for(url),
            ) as answer:
                raw = await answer.read()
                status, answered, pairs = answer.status, answer.headers, answer.raw_headers
        except Exception as exc:
            error = aio.translate(exc, httpx.Request(method, url))
            if error is exc:
                raise
            raise error from error.__cause__
        return ProviderResponse(status, answered, _decoded(status, answered, raw, pairs))

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


def http_client(settings: Settings, **kwargs: Any) -> httpx.AsyncClient:
    """The HTTP client adapters use for provider APIs (never for user pages).

    httpx over aiohttp's connections (``seojobs.fetch.aio``): a third of httpx's own CPU per
    request. httpx ignores proxies from the environment when it is given a transport, so
    these requests go direct; :class:`ProviderClient` (Serper) honours them.
    """
    timeout = httpx.Timeout(settings.provider_timeout, connect=settings.fetch_connect_timeout)
    kwargs.setdefault("transport", AiohttpTransport())
    return httpx.AsyncClient(
        timeout=timeout,
        headers={"User-Agent": settings.user_agent},
        follow_redirects=False,
        **kwargs,
    )


def retry_after_seconds(response: Answer) -> float | None:
    """Parse Retry-After (seconds or an HTTP date)."""
    value = response.headers.get("Retry-After")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def error_for_status(response: Answer, provider: str) -> ProviderError | None:
    """The generic mapping of a non-2xx answer; adapters refine it where documented."""
    status = response.status_code
    if status < 400:
        return None
    snippet = response.text[:300]
    if status in (401, 403):
        return ProviderError(
            AUTH_FAILED,
            f"{provider} refused the credentials ({status}): {snippet}",
            status=status,
            fatal=True,
        )
    if status == 429:
        return ProviderError(
            UPSTREAM_ERROR,
            f"{provider} rate limited the request (429)",
            retryable=True,
            retry_after=retry_after_seconds(response),
            status=status,
        )
    if status >= 500:
        return ProviderError(
            UPSTREAM_ERROR,
            f"{provider} failed with {status}: {snippet}",
            retryable=True,
            retry_after=retry_after_seconds(response),
            status=status,
        )
    return ProviderError(
        REJECTED, f"{provider} rejected the request ({status}): {snippet}", status=status
    )


async def with_retries(
    call: Callable[[], Awaitable[T]],
    *,
    retries: int,
    backoff: float,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    max_delay: float = 60.0,
) -> T:
    """Run ``call``; after a retryable ProviderError or a transport error, wait and retry.

    Waits ``backoff * 2**n`` (with jitter, at least the provider's Retry-After, at most
    ``max_delay``), ``retries`` times; then the last error propagates.
    """
    attempt = 0
    while True:
        try:
            return await call()
        except httpx.TransportError as exc:
            error = ProviderError(UPSTREAM_ERROR, f"transport error: {exc!r}", retryable=True)
            if attempt >= retries:
                raise error from exc
        except ProviderError as exc:
            if not exc.retryable or attempt >= retries:
                raise
            error = exc
        delay = backoff * (2**attempt) * (0.5 + random.random() / 2)
        if error.retry_after is not None:
            delay = max(delay, error.retry_after)
        await sleep(min(delay, max_delay))
        attempt += 1


def malformed(provider: str, what: str) -> ProviderError:
    return ProviderError(MALFORMED_RESPONSE, f"{provider} answered in an unexpected shape: {what}")
