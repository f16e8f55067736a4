"""IndexNow: one JSON POST per host (at most 10,000 URLs each) to the configured endpoint.

The protocol ties a submission to one host and proves ownership with a key file on that host,
so URLs are grouped by host and each host's answer is its own: a 403 (no key file on host A)
fails only A's URLs with ``indexnow_key_invalid``; B's URLs still go through. 429 and 5xx are
retried per host with the shared backoff, then that host's URLs fail with ``upstream_error``.
Nothing here raises for an answer; only a key that breaks the protocol's format is fatal.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any
from urllib.parse import urlsplit

from seojobs.fetch.errors import UnreadableBody
from seojobs.fetch.http import HttpClient, Response
from seojobs.providers.base import (
    AUTH_FAILED,
    MALFORMED_RESPONSE,
    REJECTED,
    ProviderError,
    ProviderNotConfigured,
    SubmitResult,
    error_for_status,
    http_client,
    with_retries,
)
from seojobs.settings import Settings

PROVIDER = "indexnow"
KEY_INVALID = "indexnow_key_invalid"  # 403: the host's key file is missing or lacks the key
MAX_URLS_PER_POST = 10_000
HOST_CONCURRENCY = 4  # POSTs in flight at once when a batch spans many hosts
_KEY_FORMAT = re.compile(r"[A-Za-z0-9-]{8,128}")


class IndexNowSubmitter:
    name = PROVIDER
    max_batch = MAX_URLS_PER_POST

    def __init__(self, settings: Settings, client: HttpClient | None = None) -> None:
        if not settings.indexnow_key:
            raise ProviderNotConfigured(PROVIDER, ["indexnow_key"])
        self._settings = settings
        self._key = settings.indexnow_key
        self._own_client = client is None
        self._client = client if client is not None else http_client(settings)

    async def aclose(self) -> None:
        if self._own_client:
            await self._client.aclose()

    async def verify(self) -> str:
        """What can be checked of the key without submitting: IndexNow has no account to ask;
        each engine checks the key against the key file of each host it is sent."""
        self._check_key()
        return "key format valid; engines verify it per host, at https://HOST/KEY.txt"

    def _check_key(self) -> None:
        if not _KEY_FORMAT.fullmatch(self._key):
            # Every engine would answer 422 for every host; say what is wrong once.
            raise ProviderError(
                AUTH_FAILED,
                "SEOJOBS_INDEXNOW_KEY must be 8 to 128 characters of a-z, A-Z, 0-9 and '-'",
                fatal=True,
            )

    async def submit(self, urls: list[str]) -> list[SubmitResult]:
        self._check_key()
        results: dict[str, SubmitResult] = {}
        hosts: dict[str, list[str]] = {}
        for url in dict.fromkeys(urls):  # a URL listed twice is sent once
            host = _host(url)
            if host is None:
                results[url] = _failed(url, REJECTED, "not an absolute http(s) URL")
            else:
                hosts.setdefault(host, []).append(url)
        limit = asyncio.Semaphore(HOST_CONCURRENCY)

        async def post(host: str, chunk: list[str]) -> dict[str, SubmitResult]:
            async with limit:
                return await self._post_host(host, chunk)

        posts = [
            post(host, group[start : start + MAX_URLS_PER_POST])
            for host, group in hosts.items()
            for start in range(0, len(group), MAX_URLS_PER_POST)
        ]
        for answer in await asyncio.gather(*posts):
            results.update(answer)
        return [results[url] for url in urls]

    async def _post_host(self, host: str, urls: list[str]) -> dict[str, SubmitResult]:
        body: dict[str, Any] = {"host": host, "key": self._key}
        location = self._key_location(host, urls[0])
        if location:
            body["keyLocation"] = location
        body["urlList"] = urls
        content = json.dumps(body).encode("utf-8")

        async def call() -> Response:
            response = await self._post(content)
            status = response.status
            if status == 429 or status >= 500:
                error = error_for_status(response, "IndexNow")
                assert error is not None
                raise error
            return response

        try:
            response = await with_retries(
                call,
                retries=self._settings.provider_retries,
                backoff=self._settings.provider_backoff,
                settings=self._settings,
                provider=self.name,
            )
        except ProviderError as exc:
            return {url: _failed(url, exc.code, exc.message) for url in urls}
        return {url: _verdict(url, host, response) for url in urls}

    async def _post(self, content: bytes) -> Response:
        headers = {"Content-Type": "application/json; charset=utf-8"}
        try:
            return await self._client.post(
                self._settings.indexnow_endpoint, content=content, headers=headers
            )
        except UnreadableBody as exc:  # undecodable, or over the size cap; not retried
            raise ProviderError(
                MALFORMED_RESPONSE, f"unreadable IndexNow answer: {exc.message}"
            ) from None

    def _key_location(self, host: str, sample_url: str) -> str | None:
        """keyLocation for ``host``: a setting that is a path applies on every host; a full URL
        only on its own host (elsewhere the default ``/<key>.txt`` applies)."""
        location = self._settings.indexnow_key_location
        if not location:
            return None
        if location.startswith("/"):
            parts = urlsplit(sample_url)
            return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}{location}"
        return location if _host(location) == host else None


def _host(url: str) -> str | None:
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    return parts.hostname


def _failed(url: str, code: str, message: str) -> SubmitResult:
    return SubmitResult(url, False, PROVIDER, code, message)


def _verdict(url: str, host: str, response: Response) -> SubmitResult:
    status = response.status
    snippet = response.text[:300]
    if 200 <= status < 300:
        # 202: received, but the engine has not yet fetched the key file (indexnow.org).
        detail = {"status": status, "host": host, "key_validation_pending": status == 202}
        return SubmitResult(url, True, PROVIDER, detail=detail)
    if status == 403:
        return _failed(
            url,
            KEY_INVALID,
            f"IndexNow: the key is not valid for {host} (403): host the key file at "
            f"https://{host}/<key>.txt or set SEOJOBS_INDEXNOW_KEY_LOCATION. {snippet}",
        )
    if status == 422:
        return _failed(
            url,
            REJECTED,
            f"IndexNow: URLs do not belong to {host} or the key does not match its "
            f"location (422). {snippet}",
        )
    if status == 400:
        return _failed(url, REJECTED, f"IndexNow refused the request as invalid (400). {snippet}")
    if 400 <= status < 500:  # 404/405/413...: the endpoint refused this request
        return _failed(url, REJECTED, f"IndexNow refused the request ({status}). {snippet}")
    return _failed(url, MALFORMED_RESPONSE, f"IndexNow answered undocumented HTTP {status}")
