"""Serper.dev: a Google ``site:`` query, then a URL match in ``organic[].link``.

Wire format (reference/providers.md §5.1, third-party sources only): ``POST {base}/search`` with
``X-API-KEY`` and JSON ``{"q", "num"}``; errors are ``{"message", "statusCode"}``. An invalid key
answers 403 ``Unauthorized.``; spent credits answer 400 ``Not enough credits``.

Outcomes: per-URL answers (indexed, not indexed, a refused query, a malformed answer) are
results; whole-call failures raise :class:`ProviderError` — bad key (fatal), no credits (fatal),
and 429/5xx/transport errors once the bounded retries are spent (``upstream_error``, retryable,
so the caller may try the next provider or come back later). Building the checker without
SEOJOBS_SERPER_KEY raises :class:`ProviderNotConfigured`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from seojobs.fetch.errors import UnreadableBody
from seojobs.fetch.http import HttpClient, Response
from seojobs.providers.base import (
    MALFORMED_RESPONSE,
    QUOTA_EXHAUSTED,
    REJECTED,
    CheckResult,
    KeyedClient,
    ProviderError,
    error_for_status,
    with_retries,
)
from seojobs.providers.urlmatch import MatchOptions, match, site_query
from seojobs.settings import Settings


class SerperChecker(KeyedClient):
    name = "serper"
    key_setting = "serper_key"
    base_setting = "serper_base_url"
    path = "/search"
    engines = frozenset({"google"})

    def __init__(
        self,
        settings: Settings,
        *,
        client: HttpClient | None = None,
        options: MatchOptions | None = None,
        num: int = 10,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        """``client``: a shared client (the caller closes it); else one of its own (aclose)."""
        super().__init__(settings, client=client, sleep=sleep)
        self._options = options
        self._num = num

    async def check(self, url: str, engine: str) -> CheckResult:
        if engine not in self.engines:
            raise ProviderError(REJECTED, f"serper checks google only, not {engine!r}", fatal=True)
        try:
            query = site_query(url)
        except ValueError as exc:  # refuse before spending a paid query
            return CheckResult(url, "failed", self.name, REJECTED, str(exc))
        try:
            return await with_retries(
                lambda: self._attempt(url, query),
                retries=self._settings.provider_retries,
                backoff=self._settings.provider_backoff,
                settings=self._settings,
                provider=self.name,
                sleep=self._sleep,
            )
        except UnreadableBody as exc:  # undecodable, or over the size cap
            return self._malformed(url, query, f"unreadable body ({exc.message})")

    async def _attempt(self, url: str, query: str) -> CheckResult:
        response = await self._client.post(
            self._endpoint, json={"q": query, "num": self._num}, headers={"X-API-KEY": self._key}
        )
        if response.status == 400 and "credit" in response.text.lower():
            raise ProviderError(
                QUOTA_EXHAUSTED,
                f"serper has no credits left: {response.text[:200]}",
                status=400,
                fatal=True,
            )
        error = error_for_status(response, self.name)
        if error is not None:
            if error.code != REJECTED:
                raise error  # auth (fatal) or 429/5xx (retryable)
            return CheckResult(url, "failed", self.name, REJECTED, error.message)
        return self._parse(response, url, query)

    def _parse(self, response: Response, url: str, query: str) -> CheckResult:
        try:
            body: Any = response.json()
        except ValueError:
            return self._malformed(url, query, "the body is not JSON")
        if not isinstance(body, dict):
            return self._malformed(url, query, "the body is not a JSON object")
        if "organic" not in body and "searchParameters" not in body:
            return self._malformed(url, query, "neither organic nor searchParameters")
        organic = body.get("organic", [])  # Serper leaves it out when nothing was found
        if not isinstance(organic, list):
            return self._malformed(url, query, "organic is not a list")
        links = [item.get("link") for item in organic if isinstance(item, dict)]
        found = match(url, links, self._options)
        detail: dict[str, Any] = {"query": query, "engine": "google", **found.detail()}
        if isinstance(body.get("credits"), int):
            detail["credits"] = body["credits"]
        return CheckResult(
            url, "indexed" if found.listed else "not_indexed", self.name, detail=detail
        )

    def _malformed(self, url: str, query: str, what: str) -> CheckResult:
        return CheckResult(
            url,
            "failed",
            self.name,
            MALFORMED_RESPONSE,
            f"serper answered in an unexpected shape: {what}",
            {"query": query},
        )
