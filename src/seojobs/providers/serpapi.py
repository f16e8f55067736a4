"""SerpApi: a ``site:`` query on Google, Bing or Yandex, then a URL match in ``organic_results``.

Wire format (reference/providers.md §5.2): ``GET {base}/search.json?engine=<e>&q=<query>&api_key=``
(Yandex takes the query as ``text=``, not ``q=``). Errors are ``{"error": "message"}`` with 400
(bad parameter), 401 (invalid key), 403 (account not permitted), 429 (hourly throughput, or
"Your account has run out of searches."), 5xx. A search that found nothing is a 200 whose
``error`` says "<Engine> hasn't returned any results for this query." — that is "not indexed",
not a failure.

Outcomes: per-URL answers are results (``provider_rejected`` for a refused query,
``upstream_error`` for a search SerpApi itself reports as failed, ``malformed_response``);
whole-call failures raise :class:`ProviderError`: bad key or forbidden account (fatal), searches
used up (fatal ``provider_quota_exhausted``), 429/5xx/transport after the bounded retries
(``upstream_error``, retryable). Building the checker without SEOJOBS_SERPAPI_KEY raises
:class:`ProviderNotConfigured`.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from typing import Any

from seojobs.fetch.errors import UnreadableBody
from seojobs.fetch.http import HttpClient, Response
from seojobs.providers.base import (
    MALFORMED_RESPONSE,
    QUOTA_EXHAUSTED,
    REJECTED,
    UPSTREAM_ERROR,
    CheckResult,
    ProviderError,
    ProviderNotConfigured,
    error_for_status,
    http_client,
    with_retries,
)
from seojobs.providers.urlmatch import MatchOptions, match, site_query
from seojobs.settings import Settings

# engine -> the query parameter that SerpApi's engine of that name reads
QUERY_PARAM = {"google": "q", "bing": "q", "yandex": "text"}
_NOT_JSON = object()
_NO_RESULTS = re.compile(r"hasn't returned any results", re.IGNORECASE)
# Matched on the message because SerpApi uses 429 both for throttling and for an empty account.
_OUT_OF_SEARCHES = re.compile(r"run out of searches|searches .*exhausted", re.IGNORECASE)


class SerpApiChecker:
    name = "serpapi"
    engines = frozenset(QUERY_PARAM)

    def __init__(
        self,
        settings: Settings,
        *,
        client: HttpClient | None = None,
        options: MatchOptions | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        """``client``: a shared client (the caller closes it); else one of its own (aclose)."""
        if not settings.serpapi_key:
            raise ProviderNotConfigured(self.name, ["serpapi_key"])
        self._settings = settings
        self._key = settings.serpapi_key
        self._own_client = client is None
        self._client = client if client is not None else http_client(settings)
        self._options = options
        self._sleep = sleep

    async def check(self, url: str, engine: str) -> CheckResult:
        if engine not in self.engines:
            raise ProviderError(
                REJECTED, f"serpapi checks {sorted(self.engines)}, not {engine!r}", fatal=True
            )
        try:
            query = site_query(url)
        except ValueError as exc:  # refuse before spending a paid search
            return CheckResult(url, "failed", self.name, REJECTED, str(exc))
        params = {"engine": engine, QUERY_PARAM[engine]: query, "api_key": self._key}
        try:
            return await with_retries(
                lambda: self._attempt(params, url, query, engine),
                retries=self._settings.provider_retries,
                backoff=self._settings.provider_backoff,
                settings=self._settings,
                provider=self.name,
                sleep=self._sleep,
            )
        except UnreadableBody as exc:  # undecodable, or over the size cap
            return self._malformed(url, query, engine, f"unreadable body ({exc.message})")

    async def aclose(self) -> None:
        """Close the HTTP client unless the caller passed its own."""
        if self._own_client:
            await self._client.aclose()

    async def _attempt(
        self, params: dict[str, str], url: str, query: str, engine: str
    ) -> CheckResult:
        response = await self._client.get(
            self._settings.serpapi_base_url.rstrip("/") + "/search.json", params=params
        )
        body = _json(response)
        message = body.get("error") if isinstance(body, dict) else None
        if isinstance(message, str) and _OUT_OF_SEARCHES.search(message):
            raise ProviderError(
                QUOTA_EXHAUSTED,
                f"serpapi: {message}",
                status=response.status,
                fatal=True,
            )
        error = error_for_status(response, self.name)
        if error is not None:
            if error.code != REJECTED:
                raise error  # 401/403 (fatal) or 429/5xx (retryable)
            text = message if isinstance(message, str) else error.message
            return self._failed(url, query, engine, REJECTED, text)
        return self._parse(body, url, query, engine)

    def _parse(self, body: Any, url: str, query: str, engine: str) -> CheckResult:
        if body is _NOT_JSON:
            return self._malformed(url, query, engine, "the body is not JSON")
        if not isinstance(body, dict):
            return self._malformed(url, query, engine, "the body is not a JSON object")
        metadata = body.get("search_metadata")
        status = metadata.get("status") if isinstance(metadata, dict) else None
        error = body.get("error")
        detail = {"query": query, "engine": engine}
        if isinstance(metadata, dict) and isinstance(metadata.get("id"), str):
            detail["search_id"] = metadata["id"]
        if isinstance(error, str) and _NO_RESULTS.search(error):
            found = match(url, [], self._options)
            return CheckResult(url, "not_indexed", self.name, detail={**detail, **found.detail()})
        if error is not None and not isinstance(error, str):
            return self._malformed(url, query, engine, "error is not a string")
        if error is not None or status == "Error":
            text = error or "the search ended with status Error"
            return self._failed(url, query, engine, UPSTREAM_ERROR, f"serpapi: {text}")
        if "organic_results" not in body and status != "Success":
            return self._malformed(url, query, engine, "no organic_results and no Success status")
        results = body.get("organic_results", [])  # absent when the page held none
        if not isinstance(results, list):
            return self._malformed(url, query, engine, "organic_results is not a list")
        found = match(url, [r.get("link") for r in results if isinstance(r, dict)], self._options)
        return CheckResult(
            url,
            "indexed" if found.listed else "not_indexed",
            self.name,
            detail={**detail, **found.detail()},
        )

    def _failed(self, url: str, query: str, engine: str, code: str, message: str) -> CheckResult:
        return CheckResult(
            url, "failed", self.name, code, message, {"query": query, "engine": engine}
        )

    def _malformed(self, url: str, query: str, engine: str, what: str) -> CheckResult:
        return self._failed(
            url,
            query,
            engine,
            MALFORMED_RESPONSE,
            f"serpapi answered in an unexpected shape: {what}",
        )


def _json(response: Response) -> Any:
    try:
        return response.json()
    except ValueError:  # also UnicodeDecodeError
        return _NOT_JSON
