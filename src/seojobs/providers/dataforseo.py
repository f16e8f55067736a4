"""DataForSEO Live SERP: a ``site:`` query on Google, Bing or Yandex, then a URL match.

Wire format (reference/providers.md §5.3): ``POST {base}/v3/serp/<engine>/organic/live/regular``
with HTTP Basic ``login:password`` and a JSON array of one task ``{"keyword", "location_code",
"language_code", "depth"}``. The answer is an envelope with ``status_code`` at request level and
at task level; results are ``tasks[0].result[0].items[]`` with ``type == "organic"`` and ``url``.
The regular endpoint is used because only organic URLs matter and its items are fewer; the
Live mode because a check is one synchronous call (no task_post/tasks_ready polling).

Status mapping (both levels; HTTP is 200 except 401/402/404/500):

=========================  =====================================================================
20000                      ok: match the organic URLs
40102 "No Search Results"  not indexed (the engine listed nothing for the query)
HTTP 401, 40100            raise ``provider_auth_failed`` (fatal)
HTTP 402, 402xx            raise ``provider_quota_exhausted`` (fatal: balance, cost limit, ...)
40202 (rate limit/minute)  retry; after the retries raise ``upstream_error``
40101 (engine error)       retry (DataForSEO's advice); after the retries raise ``upstream_error``
HTTP 5xx, 5xxxx            retry; after the retries raise ``upstream_error``
HTTP 404                   raise ``provider_rejected`` (fatal: the base URL or path is wrong)
other codes                result ``failed`` / ``provider_rejected`` with the status message
=========================  =====================================================================

A malformed answer is a ``failed`` / ``malformed_response`` result, never an exception. Building
the checker without SEOJOBS_DATAFORSEO_LOGIN and _PASSWORD raises ProviderNotConfigured.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from seojobs.fetch.errors import UnreadableBody
from seojobs.fetch.http import HttpClient, Response
from seojobs.providers.base import (
    AUTH_FAILED,
    MALFORMED_RESPONSE,
    QUOTA_EXHAUSTED,
    REJECTED,
    UPSTREAM_ERROR,
    AdapterClient,
    CheckResult,
    ProviderError,
    ProviderNotConfigured,
    error_for_status,
    http_client,
    malformed,
    with_retries,
)
from seojobs.providers.urlmatch import MatchOptions, match, site_query
from seojobs.settings import Settings

T = TypeVar("T")

OK = 20000
NO_RESULTS = 40102
_RETRYABLE = frozenset({40101, 40202})


class _Malformed(Exception):
    """The answer is not of the documented shape; becomes a ``malformed_response`` result."""


class DataForSeoChecker:
    name = "dataforseo"
    engines = frozenset({"google", "bing", "yandex"})

    def __init__(
        self,
        settings: Settings,
        *,
        client: HttpClient | None = None,
        options: MatchOptions | None = None,
        location_code: int = 2840,
        language_code: str = "en",
        depth: int = 10,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        """``client``: a shared client (the caller closes it); else one of its own (aclose).

        ``location_code`` 2840 is the United States; DataForSEO requires a location.
        """
        self._settings = settings
        self._auth = credentials(settings)
        self._own_client = client is None
        self._client = client if client is not None else http_client(settings)
        self._options = options
        self._task = {
            "location_code": location_code,
            "language_code": language_code,
            "depth": depth,
        }
        self._sleep = sleep

    async def check(self, url: str, engine: str) -> CheckResult:
        if engine not in self.engines:
            raise ProviderError(
                REJECTED, f"dataforseo checks {sorted(self.engines)}, not {engine!r}", fatal=True
            )
        try:
            query = site_query(url)
        except ValueError as exc:  # refuse before spending a paid task
            return CheckResult(url, "failed", self.name, REJECTED, str(exc))
        base = self._settings.dataforseo_base_url.rstrip("/")
        endpoint = f"{base}/v3/serp/{engine}/organic/live/regular"
        # DataForSEO URL-decodes the keyword, so a literal "%" or "+" must be sent escaped.
        task = {"keyword": query.replace("%", "%25").replace("+", "%2B"), **self._task}
        detail: dict[str, Any] = {"query": query, "engine": engine}
        try:
            return await with_retries(
                lambda: self._attempt(endpoint, task, url, detail),
                retries=self._settings.provider_retries,
                backoff=self._settings.provider_backoff,
                settings=self._settings,
                provider=self.name,
                sleep=self._sleep,
            )
        except UnreadableBody as exc:  # undecodable, or over the size cap
            message = f"dataforseo answered in an unexpected shape: unreadable body ({exc.message})"
            return CheckResult(url, "failed", self.name, MALFORMED_RESPONSE, message, detail)

    async def aclose(self) -> None:
        """Close the HTTP client unless the caller passed its own."""
        if self._own_client:
            await self._client.aclose()

    async def _attempt(
        self, endpoint: str, task: dict[str, Any], url: str, detail: dict[str, Any]
    ) -> CheckResult:
        response = await self._client.post(endpoint, json=[task], auth=self._auth)
        detail = dict(detail)  # a fresh copy per attempt
        error = http_error(response)
        if error is not None:
            if error.code != REJECTED or error.fatal:
                raise error
            return CheckResult(url, "failed", self.name, REJECTED, error.message, detail)
        try:
            links = self._links(response, detail)
        except _Malformed as exc:
            message = f"dataforseo answered in an unexpected shape: {exc}"
            return CheckResult(url, "failed", self.name, MALFORMED_RESPONSE, message, detail)
        except _Rejected as exc:
            return CheckResult(url, "failed", self.name, REJECTED, str(exc), detail)
        if links is None:
            return CheckResult(url, "not_indexed", self.name, detail={**detail, "results": 0})
        found = match(url, links, self._options)
        return CheckResult(
            url,
            "indexed" if found.listed else "not_indexed",
            self.name,
            detail={**detail, **found.detail()},
        )

    def _links(self, response: Response, detail: dict[str, Any]) -> list[object] | None:
        """The organic URLs, or None for "No Search Results"; raises for other status codes."""
        body = _object(_json(response), "the body")
        _raise_for_code(body, "request")
        tasks = body.get("tasks")
        if not isinstance(tasks, list) or not tasks:
            raise _Malformed("tasks is not a non-empty list")
        task = _object(tasks[0], "tasks[0]")
        for key in ("id", "cost"):
            if key in task:
                detail["task_" + key] = task[key]
        if _raise_for_code(task, "task") == NO_RESULTS:
            return None
        results = task.get("result")
        if not isinstance(results, list) or not results:
            raise _Malformed("tasks[0].result is not a non-empty list")
        result = _object(results[0], "tasks[0].result[0]")
        if isinstance(result.get("check_url"), str):
            detail["check_url"] = result["check_url"]
        items = result.get("items") or []  # null when the page held no items
        if not isinstance(items, list):
            raise _Malformed("items is not a list")
        return [i.get("url") for i in items if isinstance(i, dict) and i.get("type") == "organic"]


class _Rejected(Exception):
    """DataForSEO refused this task (a bad field, an unsupported query): a per-URL failure."""


def _json(response: Response) -> Any:
    try:
        return response.json()
    except ValueError as exc:  # also UnicodeDecodeError
        raise _Malformed("the body is not JSON") from exc


def _object(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _Malformed(f"{what} is not a JSON object")
    return value


def _raise_for_code(envelope: dict[str, Any], level: str) -> int:
    """Check a ``status_code``; returns it when it is OK or NO_RESULTS (task level only)."""
    code = envelope.get("status_code")
    if isinstance(code, bool) or not isinstance(code, int):
        raise _Malformed(f"the {level} status_code is {code!r}")
    if code == OK or (code == NO_RESULTS and level == "task"):
        return code
    message = f"dataforseo {level} status {code}: {envelope.get('status_message')!r}"
    error = code_error(code, message)
    if error is not None:
        raise error
    raise _Rejected(message)


def code_error(code: int, message: str) -> ProviderError | None:
    """The error of a ``status_code`` that no task of this account can get past (auth,
    money) or that is worth retrying; None for a refusal of this task alone."""
    if code in _RETRYABLE or code >= 50000:
        return ProviderError(UPSTREAM_ERROR, message, retryable=True)
    if code == 40100:
        return ProviderError(AUTH_FAILED, message, fatal=True)
    if 40200 <= code < 40300:
        return ProviderError(QUOTA_EXHAUSTED, message, fatal=True)
    return None


# -- the live endpoints' envelope, for adapters that fail a whole call on a bad answer
# (keyword research, rank checks); index checks turn it into a per-URL result instead.


def answer_json(response: Response) -> Any:
    try:
        return response.json()
    except ValueError:  # also UnicodeDecodeError
        raise malformed("dataforseo", "the body is not JSON") from None


def json_object(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise malformed("dataforseo", f"{what} is not a JSON object")
    return value


def envelope_code(envelope: dict[str, Any], level: str, *, refusal_fatal: bool) -> int:
    """An envelope's ``status_code`` when OK (or, for a task, no results); else its error:
    ``code_error``'s, or a refusal (``REJECTED``, ending the job when ``refusal_fatal``)."""
    code = envelope.get("status_code")
    if isinstance(code, bool) or not isinstance(code, int):
        raise malformed("dataforseo", f"the {level} status_code is {code!r}")
    if code == OK or (code == NO_RESULTS and level == "task"):
        return code
    message = f"dataforseo {level} status {code}: {envelope.get('status_message')!r}"
    raise code_error(code, message) or ProviderError(REJECTED, message, fatal=refusal_fatal)


def credentials(settings: Settings) -> tuple[str, str]:
    """SEOJOBS_DATAFORSEO_LOGIN and _PASSWORD; ProviderNotConfigured naming those unset."""
    login, password = settings.dataforseo_login, settings.dataforseo_password
    if not login or not password:
        names = ("dataforseo_login", "dataforseo_password")
        raise ProviderNotConfigured(
            "dataforseo", [n for n, v in zip(names, (login, password), strict=True) if not v]
        )
    return login, password


class DataForSeoTasks(AdapterClient):
    """An adapter that posts one task per call to DataForSEO's live endpoints and fails the
    whole call on a bad answer (keyword research, backlink analysis): ``task(path, task)``
    gives the task's ``result`` (None for "No Search Results") under the bounded retries;
    ``refusal_fatal``: a refusal of the task ends the job."""

    name = "dataforseo"

    def __init__(
        self,
        settings: Settings,
        *,
        client: HttpClient | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._auth = credentials(settings)  # ProviderNotConfigured before a client is opened
        super().__init__(settings, client=client, sleep=sleep)
        self._base = settings.dataforseo_base_url.rstrip("/")

    async def task(self, path: str, task: dict[str, Any]) -> Any:
        """The ``result`` of one task (None for "No Search Results")."""
        return await self.live(path, task, self._result)

    def _result(self, answer: Any) -> Any:
        body = json_object(answer, "the body")
        envelope_code(body, "request", refusal_fatal=True)
        tasks = body.get("tasks")
        if not isinstance(tasks, list) or not tasks:
            raise malformed(self.name, "tasks is not a non-empty list")
        first = json_object(tasks[0], "tasks[0]")
        if envelope_code(first, "task", refusal_fatal=True) == NO_RESULTS:
            return None
        return first.get("result")

    async def live(self, path: str, task: dict[str, Any], parse: Callable[[Any], T]) -> T:
        """One task posted to ``path``, its decoded answer read by ``parse`` (which decides
        what a refusal means: the whole job's end, or one item's), under the bounded retries;
        every error cleared of the password."""
        endpoint = self._base + path

        async def attempt() -> T:
            response = await self._client.post(endpoint, json=[task], auth=self._auth)
            error = http_error(response)
            if error is not None:
                raise error
            return parse(answer_json(response))

        try:
            return await with_retries(
                attempt,
                retries=self._settings.provider_retries,
                backoff=self._settings.provider_backoff,
                settings=self._settings,
                sleep=self._sleep,
                provider=self.name,
            )
        except UnreadableBody as exc:
            raise malformed(self.name, f"unreadable body ({exc.message})") from None


def http_error(response: Response) -> ProviderError | None:
    status = response.status
    snippet = response.text[:300]
    if status == 402:
        return ProviderError(
            QUOTA_EXHAUSTED, f"dataforseo billing refused (402): {snippet}", status=402, fatal=True
        )
    if status == 404:
        return ProviderError(
            REJECTED,
            f"dataforseo has no such endpoint (404; check SEOJOBS_DATAFORSEO_BASE_URL): {snippet}",
            status=404,
            fatal=True,
        )
    return error_for_status(response, "dataforseo")
