"""Google Gemini with Grounding with Google Search: one prompt, one grounded answer.

Wire format (ai.google.dev/gemini-api/docs/google-search, the ``generateContent`` reference):
``POST {SEOJOBS_GEMINI_BASE_URL}/models/{model}:generateContent`` with the key in the
``x-goog-api-key`` header and ``{"contents": [{"role": "user", "parts": [{"text"}]}],
"tools": [{"google_search": {}}]}``. The answer's ``candidates[0]`` holds ``content.parts[]``
(the text) and ``groundingMetadata``: ``webSearchQueries[]``, ``groundingChunks[]`` (each
``web: {uri, title}``; the URI is a ``vertexaisearch.cloud.google.com/grounding-api-redirect``
link and the title the source's site) and ``groundingSupports[]`` (a text ``segment`` with
``startIndex``/``endIndex`` and the ``groundingChunkIndices`` that support it). Citations are
the chunks in the order the text first cites them, then any chunk no segment cites; each keeps
its site (the title) so the domain match sees the source, not the redirect host. An answer
without ``groundingMetadata`` was not grounded: no citations. A prompt Google blocks
(``promptFeedback.blockReason``, no candidates) is an empty answer, not a failure.

Errors are ``{"error": {"code", "message", "status", "details": [...]}}``: 429
``RESOURCE_EXHAUSTED`` is a rate limit (its ``RetryInfo.retryDelay`` is honoured) unless its
``QuotaFailure`` names a per-day quota (spent until tomorrow: ``provider_quota_exhausted``);
an invalid key is a 400 ``INVALID_ARGUMENT`` whose ``ErrorInfo.reason`` is ``API_KEY_INVALID``
(``provider_auth_failed``), 403 ``PERMISSION_DENIED`` too; 500 ``INTERNAL`` and 503
``UNAVAILABLE`` ("The model is overloaded") are retried.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from seojobs.fetch.http import Response
from seojobs.providers.ai_search import (
    Answer,
    Citation,
    json_object,
    status_error,
    text_or_none,
)
from seojobs.providers.base import (
    AUTH_FAILED,
    QUOTA_EXHAUSTED,
    KeyedClient,
    ProviderError,
    malformed,
)
from seojobs.providers.keywords import retried
from seojobs.settings import Settings

NAME = "gemini"
REDIRECT_HOST = "vertexaisearch.cloud.google.com"
_SECONDS = re.compile(r"^([0-9]+(?:\.[0-9]+)?)s$")
_SITE = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9.\-]{0,251}[A-Za-z0-9])?\.[A-Za-z]{2,63}$")


def _details(response: Response) -> list[dict[str, Any]]:
    try:
        body = response.json()
    except ValueError:
        return []
    error = body.get("error") if isinstance(body, dict) else None
    details = error.get("details") if isinstance(error, dict) else None
    return [d for d in details if isinstance(d, dict)] if isinstance(details, list) else []


def _typed(details: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [d for d in details if str(d.get("@type", "")).endswith(f"google.rpc.{name}")]


def error_of(response: Response, key: str) -> ProviderError | None:
    """Google's error body mapped onto the AI-search errors (``None`` for a 2xx)."""
    error = status_error(response, NAME)
    if error is None:
        return None
    details = _details(response)
    reasons = {d.get("reason") for d in _typed(details, "ErrorInfo")}
    if response.status == 400 and "API_KEY_INVALID" in reasons:
        return ProviderError(
            AUTH_FAILED, f"gemini refused the API key (400 API_KEY_INVALID): {error.message}",
            status=400, fatal=True,
        )  # fmt: skip
    if response.status == 429:
        quotas = [
            str(v.get("quotaId", ""))
            for q in _typed(details, "QuotaFailure")
            for v in q.get("violations") or []
            if isinstance(v, dict)
        ]
        if any("PerDay" in quota for quota in quotas):
            return ProviderError(
                QUOTA_EXHAUSTED, f"gemini's daily quota is spent (429 RESOURCE_EXHAUSTED: "
                f"{', '.join(quotas)})", status=429, fatal=True,
            )  # fmt: skip
        for info in _typed(details, "RetryInfo"):
            delay = _SECONDS.match(str(info.get("retryDelay", "")))
            if delay:
                error.retry_after = max(error.retry_after or 0.0, float(delay.group(1)))
    return error


def _site(title: str | None, uri: str) -> str | None:
    """The source's site: the title Gemini gives a redirect link (a host name), else none."""
    try:
        host = urlsplit(uri).hostname
    except ValueError:
        host = None
    if host == REDIRECT_HOST and title and _SITE.match(title):
        return title.lower()
    return None


def _cited_order(supports: list[Any], count: int) -> list[int]:
    """Chunk indices in the order the text cites them (by segment start), then the rest."""
    found: dict[int, None] = {}
    ordered = sorted(
        (s for s in supports if isinstance(s, dict)),
        key=lambda s: (s.get("segment") or {}).get("startIndex") or 0,
    )
    for support in ordered:
        for index in support.get("groundingChunkIndices") or []:
            if isinstance(index, int) and not isinstance(index, bool) and 0 <= index < count:
                found.setdefault(index, None)
    return [*found, *(i for i in range(count) if i not in found)]


def citations(metadata: Any) -> tuple[Citation, ...]:
    if metadata is None:
        return ()
    if not isinstance(metadata, dict):
        raise malformed(NAME, "groundingMetadata is not a JSON object")
    chunks = metadata.get("groundingChunks", [])
    supports = metadata.get("groundingSupports", [])
    if not isinstance(chunks, list) or not isinstance(supports, list):
        raise malformed(NAME, "groundingChunks or groundingSupports is not a list")
    found = []
    for index in _cited_order(supports, len(chunks)):
        web = chunks[index].get("web") if isinstance(chunks[index], dict) else None
        if web is None:  # a retrieved-context or maps chunk: not a web source
            continue
        uri = web.get("uri") if isinstance(web, dict) else None
        if not isinstance(uri, str) or not uri:
            raise malformed(NAME, "a grounding chunk has no web.uri")
        title = text_or_none(web.get("title"))
        found.append(Citation(uri, title, _site(title, uri)))
    return tuple(found)


def parse(body: dict[str, Any]) -> Answer:
    """A ``generateContent`` answer as an :class:`Answer`."""
    candidates = body.get("candidates")
    model = text_or_none(body.get("modelVersion"))
    if candidates is None and isinstance(body.get("promptFeedback"), dict):
        return Answer("", (), model)  # blocked: Google gave no answer
    if not isinstance(candidates, list) or not candidates or not isinstance(candidates[0], dict):
        raise malformed(NAME, "candidates is not a non-empty list")
    first = candidates[0]
    content = first.get("content", {})
    parts = content.get("parts", []) if isinstance(content, dict) else None
    if not isinstance(parts, list):
        raise malformed(NAME, "candidates[0].content.parts is not a list")
    # A thinking model's thought summaries (``thought: true``) are not the answer.
    texts = [
        p["text"]
        for p in parts
        if isinstance(p, dict) and isinstance(p.get("text"), str) and not p.get("thought")
    ]
    return Answer("".join(texts), citations(first.get("groundingMetadata")), model)


class GeminiSearch(KeyedClient):
    name = NAME
    key_setting = "gemini_api_key"
    base_setting = "gemini_base_url"
    path = ""

    def __init__(self, settings: Settings, **options: Any) -> None:
        super().__init__(settings, **options)
        self.model = settings.gemini_model
        self._url = f"{self._endpoint}/models/{self.model}:generateContent"

    async def ask(self, prompt: str) -> Answer:
        request = {
            "contents": [{"role": "user", "parts": [{"text": prompt}]}],
            "tools": [{"google_search": {}}],
        }
        return await retried(NAME, lambda: self._attempt(request), self._settings, self._sleep)

    async def verify(self) -> str:
        """The credential check of ``seojobs providers``: the model is read (``GET
        /models/{model}``, free), which proves the key and the model's name."""

        async def attempt() -> None:
            url = f"{self._endpoint}/models/{self.model}"
            response = await self._client.get(url, headers=self._headers())
            error = error_of(response, self._key)
            if error is not None:
                raise error

        await retried(NAME, attempt, self._settings, self._sleep)
        return f"the key may use the model {self.model}"

    def _headers(self) -> dict[str, str]:
        return {"x-goog-api-key": self._key}

    async def _attempt(self, request: dict[str, Any]) -> Answer:
        response = await self._client.post(self._url, json=request, headers=self._headers())
        error = error_of(response, self._key)
        if error is not None:
            raise error
        return parse(json_object(response, NAME))
