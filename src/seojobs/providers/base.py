"""What every provider adapter shares: result types, one exception tree, bounded retries.

An adapter turns one provider's wire format into :class:`SubmitResult` / :class:`CheckResult`.
It never raises for a per-URL problem (that is a result with an ``error_code``); it raises
:class:`ProviderError` only when the whole call failed (auth, quota, transport), with
``retryable`` set for 429/5xx/transport errors so :func:`with_retries` can back off.

Every adapter talks HTTP through :func:`http_client`: the server's one client
(``seojobs.fetch.http``), with proxies from the environment honoured. Its failures arrive as
``FetchError``; :func:`with_retries` turns a transport failure into a retryable
``upstream_error`` (:func:`transport_error`), and an answer whose body cannot be used
(``UnreadableBody``: undecodable, or over :data:`MAX_ANSWER_BYTES`) is left to the adapter,
which reports it as a malformed answer.
"""

from __future__ import annotations

import asyncio
import email.utils
import random
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar

from seojobs import telemetry
from seojobs.fetch.errors import FetchError, UnreadableBody
from seojobs.settings import Settings

if TYPE_CHECKING:  # the HTTP client (aiohttp) loads at a provider's first call
    from seojobs.fetch.http import Connector, HttpClient, Response

T = TypeVar("T")

# Settings that hold a credential: every provider error is cleared of each configured one
# (:func:`scrubbed`), whichever adapter raised it and however the provider echoed it.
_SECRET_SUFFIXES = ("_key", "_password", "_secret", "_token")
# API keys as providers spell them (OpenAI and Anthropic sk-..., Perplexity pplx-..., Google
# AIza...), masked or not: a provider echoing a key of another account is cleared too. Bearer
# credentials too: Google's OAuth access tokens (ya29.) and any JWT (a service account's signed
# assertion is one: three base64url parts, the first a JSON header, so it starts "eyJ").
_KEYISH = re.compile(
    r"\b(?:(?:sk|pplx)-[A-Za-z0-9*_\-]{2,}|AIza[A-Za-z0-9_\-]{6,}|ya29\.[A-Za-z0-9_\-.]+"
    r"|eyJ[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]*)"
)

# unknown: no provider gave a verdict (a deployment running diagnostics-only checks).
CheckStatus = Literal["indexed", "not_indexed", "failed", "unknown"]

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


# The largest provider answer read (a page of SERP results is well under 1 MB; Google's batch
# answer for 100 URLs about 100 KB): a bigger one is malformed, not worth the memory.
MAX_ANSWER_BYTES = 16 * 1024 * 1024


def http_client(settings: Settings, *, connector: Connector | None = None) -> HttpClient:
    """The HTTP client of provider adapters (never for user pages: no SSRF guard here).

    The provider base URLs and Google's token URI come from the operator's settings and key
    file, not from users, so connections are plain. Proxies from the environment apply
    (``HTTP_PROXY``/``HTTPS_PROXY``, ``NO_PROXY``); no cookies are kept. ``connector``:
    tests' hook at the network edge.
    """
    from seojobs.fetch.http import ACCEPT_ENCODING, HttpClient

    return HttpClient(
        headers={
            "User-Agent": settings.user_agent,
            "Accept": "*/*",
            "Accept-Encoding": ACCEPT_ENCODING,
        },
        connect_timeout=settings.fetch_connect_timeout,
        read_timeout=settings.provider_timeout,
        # A provider that trickles its answer is cut off like a page that does.
        deadline=settings.fetch_connect_timeout + 2 * settings.provider_timeout,
        max_bytes=MAX_ANSWER_BYTES,
        connector=connector,
        env_proxies=True,
    )


class AdapterClient:
    """What every adapter shares: its settings, its HTTP client (a shared one, which the
    caller closes, or its own, closed by ``aclose``) and the sleep its retries wait with.
    A subclass checks its credentials before calling this, so a refused adapter never opens
    a client."""

    def __init__(
        self,
        settings: Settings,
        *,
        client: HttpClient | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._settings = settings
        self._own_client = client is None
        self._client = client if client is not None else http_client(settings)
        self._sleep = sleep

    async def aclose(self) -> None:
        """Close the HTTP client unless the caller passed its own."""
        if self._own_client:
            await self._client.aclose()


class KeyedClient(AdapterClient):
    """An adapter keyed by one setting: its key (``ProviderNotConfigured`` without one) and
    its endpoint (a base-URL setting and a path). A subclass names them: ``name``,
    ``key_setting``, ``base_setting``, ``path``."""

    name: str
    key_setting: str
    base_setting: str
    path: str

    def __init__(
        self,
        settings: Settings,
        *,
        client: HttpClient | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        key = getattr(settings, self.key_setting)
        if not key:
            raise ProviderNotConfigured(self.name, [self.key_setting])
        super().__init__(settings, client=client, sleep=sleep)
        self._key: str = key
        self._endpoint = str(getattr(settings, self.base_setting)).rstrip("/") + self.path


def retry_after_seconds(response: Response) -> float | None:
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


def error_for_status(response: Response, provider: str) -> ProviderError | None:
    """The generic mapping of a non-2xx answer; adapters refine it where documented."""
    status = response.status
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


def secrets_of(settings: Settings) -> list[str]:
    """The credentials ``settings`` holds (those of at least 6 characters: a shorter value
    would clear ordinary words from messages)."""
    found: list[str] = []
    for name in type(settings).model_fields:
        if name.endswith(_SECRET_SUFFIXES):
            value = getattr(settings, name)
            if value is not None and not isinstance(value, str):
                value = value.get_secret_value()  # SecretStr
            if isinstance(value, str) and len(value) >= 6:
                found.append(value)
    return found


def redacted(text: str, *secrets: str) -> str:
    """``text`` without any of ``secrets`` or anything spelled like an API key."""
    for secret in sorted(secrets, key=len, reverse=True):  # a key inside another: the longer
        if secret:
            text = text.replace(secret, "[key]")
    return _KEYISH.sub("[key]", text)


def scrubbed(error: ProviderError, settings: Settings | None) -> ProviderError:
    """``error`` with its message cleared of every credential in ``settings`` and of anything
    spelled like a key or a bearer token (also without ``settings``: an OAuth exchange sends
    no setting, but its answer may echo the assertion or a token)."""
    error.message = redacted(error.message, *(secrets_of(settings) if settings else ()))
    error.args = (error.message,)
    return error


async def with_retries(
    call: Callable[[], Awaitable[T]],
    *,
    retries: int,
    backoff: float,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    max_delay: float = 60.0,
    provider: str = "other",
    settings: Settings | None = None,
) -> T:
    """Run ``call``; after a retryable ProviderError or a transport error, wait and retry.

    Waits ``backoff * 2**n`` (with jitter, at least the provider's Retry-After, at most
    ``max_delay``), ``retries`` times; then the last error propagates (a transport error as
    the ProviderError of :func:`transport_error`), cleared of the credentials in ``settings``
    (:func:`scrubbed`: providers echo requests, keys included, in their errors).
    ``UnreadableBody`` is not retried: it propagates for the adapter to report. Each attempt
    is counted and timed under ``provider`` (``seojobs_provider_calls_total``).
    """
    attempt = 0
    while True:
        try:
            with telemetry.provider_call(provider):
                return await call()
        except UnreadableBody:
            raise
        except FetchError as exc:
            error = transport_error(exc)
            if attempt >= retries:
                raise scrubbed(error, settings) from exc
        except ProviderError as exc:
            if not exc.retryable or attempt >= retries:
                scrubbed(exc, settings)
                raise
            error = exc
        delay = backoff * (2**attempt) * (0.5 + random.random() / 2)
        if error.retry_after is not None:
            delay = max(delay, error.retry_after)
        await sleep(min(delay, max_delay))
        attempt += 1


def transport_error(exc: FetchError) -> ProviderError:
    """A failed exchange (no usable answer: DNS, connect, TLS, timeout, cut-off transfer...)
    is the provider's trouble, not the URL's: ``upstream_error``, worth retrying later."""
    return ProviderError(
        UPSTREAM_ERROR, f"transport error ({exc.kind}): {exc.message}", retryable=True
    )


def malformed(provider: str, what: str) -> ProviderError:
    return ProviderError(MALFORMED_RESPONSE, f"{provider} answered in an unexpected shape: {what}")
