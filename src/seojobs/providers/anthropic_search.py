"""Anthropic's Messages API with the web search tool: one prompt, one answer with citations.

Wire format (docs.anthropic.com: Messages API; the web search tool): ``POST
{SEOJOBS_ANTHROPIC_BASE_URL}/v1/messages`` with ``x-api-key``, ``anthropic-version:
2023-06-01`` and ``{"model", "max_tokens", "messages": [{"role": "user", "content"}],
"tools": [{"type": "web_search_20250305", "name": "web_search", "max_uses"}]}``. The answer's
``content[]`` holds ``server_tool_use`` blocks (the searches), ``web_search_tool_result``
blocks (``content``: the ``web_search_result`` items with ``url``, ``title``, ``page_age``, or
a ``web_search_tool_result_error`` with an ``error_code`` such as ``too_many_requests`` or
``max_uses_exceeded``: the model answers without those results) and ``text`` blocks, whose
``citations[]`` of type ``web_search_result_location`` (``url``, ``title``, ``cited_text``)
are the answer's citations, in the order the text cites them.

A long server-tool turn may stop with ``stop_reason: "pause_turn"`` (docs.anthropic.com:
handling stop reasons; server tools): the turn is continued by sending the request again with
the paused content as the assistant's message after the user's (``messages: [user,
{"role": "assistant", "content": <the paused blocks>}]``, the same tools), and the answer is
every text block of the turn, paused parts first. At most ``MAX_CONTINUATIONS`` continuations
are sent per prompt (each is billed); a turn still paused after them answers with its text so
far.

Errors are ``{"type": "error", "error": {"type", "message"}}``: 401 ``authentication_error``
and 403 ``permission_error`` (the key), 429 ``rate_limit_error`` (with ``retry-after``), 529
``overloaded_error`` and 500 ``api_error`` (retried), 404 ``not_found_error`` (a model the
account cannot use: every prompt would fail), 400 ``invalid_request_error`` (a refused
request; "Your credit balance is too low" is spent credit: ``provider_quota_exhausted``).
"""

from __future__ import annotations

from typing import Any

from seojobs.fetch.http import Response
from seojobs.providers.ai_search import (
    Answer,
    Citation,
    json_object,
    status_error,
    text_or_none,
)
from seojobs.providers.base import QUOTA_EXHAUSTED, KeyedClient, ProviderError, malformed
from seojobs.providers.keywords import retried
from seojobs.settings import Settings

NAME = "anthropic"
VERSION = "2023-06-01"
TOOL = "web_search_20250305"
MAX_TOKENS = 2048
MAX_SEARCHES = 5  # the tool's max_uses: each search is billed
MAX_CONTINUATIONS = 3  # requests sent again after a pause_turn, per prompt
PAUSED = "pause_turn"


def error_of(response: Response, key: str) -> ProviderError | None:
    error = status_error(response, NAME)
    if error is not None and response.status == 400 and "credit balance" in response.text:
        return ProviderError(
            QUOTA_EXHAUSTED,
            "anthropic has no credit left (400: your credit balance is too low)",
            status=400,
            fatal=True,
        )
    return error


def _citations(block: dict[str, Any]) -> list[Citation]:
    cited = block.get("citations") or []
    if not isinstance(cited, list):
        raise malformed(NAME, "a text block's citations is not a list")
    found = []
    for citation in cited:
        if not isinstance(citation, dict) or citation.get("type") != "web_search_result_location":
            continue
        url = citation.get("url")
        if not isinstance(url, str) or not url:
            raise malformed(NAME, "a web_search_result_location has no url")
        found.append(Citation(url, text_or_none(citation.get("title"))))
    return found


def content_of(body: dict[str, Any]) -> list[Any]:
    """A Messages API answer's ``content`` blocks (checked to be a list)."""
    if body.get("type") == "error":
        raise malformed(NAME, "an error body with a 2xx status")
    content = body.get("content")
    if not isinstance(content, list):
        raise malformed(NAME, "content is not a list")
    return content


def parse(body: dict[str, Any], paused: list[Any] | None = None) -> Answer:
    """A Messages API answer as an :class:`Answer`: its text blocks joined, their citations in
    order, after those of the turn's ``paused`` blocks (a turn continued after
    ``pause_turn``; one still paused answers with the text so far)."""
    content = [*(paused or []), *content_of(body)]
    texts: list[str] = []
    citations: list[Citation] = []
    for block in content:
        if not isinstance(block, dict):
            raise malformed(NAME, "a content block is not a JSON object")
        if block.get("type") != "text":
            continue  # server_tool_use, web_search_tool_result: what was searched and found
        text = block.get("text")
        if not isinstance(text, str):
            raise malformed(NAME, "a text block has no text")
        texts.append(text)
        citations += _citations(block)
    return Answer("".join(texts), tuple(citations), text_or_none(body.get("model")))


class AnthropicSearch(KeyedClient):
    name = NAME
    key_setting = "anthropic_api_key"
    base_setting = "anthropic_base_url"
    path = "/v1/messages"

    def __init__(self, settings: Settings, **options: Any) -> None:
        super().__init__(settings, **options)
        self.model = settings.anthropic_model

    async def ask(self, prompt: str) -> Answer:
        asked = {"role": "user", "content": prompt}
        request = {
            "model": self.model,
            "max_tokens": MAX_TOKENS,
            "messages": [asked],
            "tools": [{"type": TOOL, "name": "web_search", "max_uses": MAX_SEARCHES}],
        }
        paused: list[Any] = []  # the turn's content so far, sent back to continue it
        for continued in range(MAX_CONTINUATIONS + 1):
            body = await self._sent(request)
            if body.get("stop_reason") != PAUSED or continued == MAX_CONTINUATIONS:
                break
            paused += content_of(body)
            assistant = {"role": "assistant", "content": paused}
            request = {**request, "messages": [asked, assistant]}
        return parse(body, paused)

    async def _sent(self, request: dict[str, Any]) -> dict[str, Any]:
        return await retried(NAME, lambda: self._attempt(request), self._settings, self._sleep)

    async def verify(self) -> str:
        """The credential check of ``seojobs providers``: the model is read (``GET
        /v1/models/{model}``, free), which proves the key and the model's name."""
        url = self._endpoint.removesuffix("/messages") + f"/models/{self.model}"

        async def attempt() -> None:
            response = await self._client.get(url, headers=self._headers())
            error = error_of(response, self._key)
            if error is not None:
                raise error

        await retried(NAME, attempt, self._settings, self._sleep)
        return f"the key may use the model {self.model}"

    def _headers(self) -> dict[str, str]:
        return {"x-api-key": self._key, "anthropic-version": VERSION}

    async def _attempt(self, request: dict[str, Any]) -> dict[str, Any]:
        response = await self._client.post(self._endpoint, json=request, headers=self._headers())
        error = error_of(response, self._key)
        if error is not None:
            raise error
        return json_object(response, NAME)
