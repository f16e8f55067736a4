"""OpenAI Responses API with the ``web_search`` tool: one prompt, one answer with citations.

Wire format (platform.openai.com/docs/api-reference/responses, reference/seo_jobs.md §8):
``POST {SEOJOBS_OPENAI_BASE_URL}/responses`` with ``Authorization: Bearer <key>`` and
``{"model", "input", "tools": [{"type": "web_search"}]}``. The answer's ``output[]`` holds
``web_search_call`` (and, for reasoning models, ``reasoning``) items and a ``message`` whose
``content[]`` parts of type ``output_text`` carry the ``text`` and its ``annotations[]``;
those of type ``url_citation`` (``url``, ``title``, ``start_index``, ``end_index``) are the
citations, in the order they annotate the text. Errors: ``{"error": {"message", "type",
"code"}}``; 429 ``insufficient_quota`` is spent credit, any other 429 a rate limit.
"""

from __future__ import annotations

from typing import Any

from seojobs.providers.ai_search import (
    Answer,
    Citation,
    json_object,
    status_error,
    text_or_none,
)
from seojobs.providers.base import KeyedClient, malformed
from seojobs.providers.keywords import retried
from seojobs.settings import Settings

NAME = "openai"


def parse(body: dict[str, Any]) -> Answer:
    """A Responses API answer as an :class:`Answer` (``malformed_response`` when it has no
    message, or a part not of the documented shape)."""
    if body.get("status") == "failed":
        error = body.get("error")
        why = error.get("message") if isinstance(error, dict) else None
        raise malformed(NAME, f"the response failed: {why!r}")
    output = body.get("output")
    if not isinstance(output, list):
        raise malformed(NAME, "output is not a list")
    texts: list[str] = []
    citations: list[Citation] = []
    messages = [o for o in output if isinstance(o, dict) and o.get("type") == "message"]
    if not messages:
        raise malformed(NAME, "output has no message")
    for message in messages:
        content = message.get("content")
        if not isinstance(content, list):
            raise malformed(NAME, "a message's content is not a list")
        for part in content:
            _read_part(part, texts, citations)
    return Answer("".join(texts), tuple(citations), text_or_none(body.get("model")))


def _read_part(part: object, texts: list[str], citations: list[Citation]) -> None:
    if not isinstance(part, dict):
        raise malformed(NAME, "a content part is not a JSON object")
    if part.get("type") == "refusal":
        texts.append(str(part.get("refusal") or ""))
        return
    if part.get("type") != "output_text":
        return
    text = part.get("text")
    annotations = part.get("annotations", [])
    if not isinstance(text, str) or not isinstance(annotations, list):
        raise malformed(NAME, "an output_text part has no text or annotations list")
    texts.append(text)
    found = [a for a in annotations if isinstance(a, dict) and a.get("type") == "url_citation"]
    for annotation in sorted(found, key=_start):
        url = annotation.get("url")
        if not isinstance(url, str) or not url:
            raise malformed(NAME, "a url_citation has no url")
        citations.append(Citation(url, text_or_none(annotation.get("title"))))


def _start(annotation: dict[str, Any]) -> int:
    start = annotation.get("start_index")
    return start if isinstance(start, int) and not isinstance(start, bool) else 0


class OpenAiSearch(KeyedClient):
    name = NAME
    key_setting = "openai_api_key"
    base_setting = "openai_base_url"
    path = "/responses"

    def __init__(self, settings: Settings, **options: Any) -> None:
        super().__init__(settings, **options)
        self.model = settings.openai_model

    async def ask(self, prompt: str) -> Answer:
        request = {"model": self.model, "input": prompt, "tools": [{"type": "web_search"}]}
        return await retried(NAME, lambda: self._attempt(request), self._settings, self._sleep)

    async def verify(self) -> str:
        """The credential check of ``seojobs providers``: the model is retrieved (``GET
        /models/{model}``, free), which proves the key and that it may use the model."""
        endpoint = self._endpoint.removesuffix("/responses") + f"/models/{self.model}"

        async def attempt() -> None:
            response = await self._client.get(endpoint, headers=self._headers())
            error = status_error(response, NAME)
            if error is not None:
                raise error

        await retried(NAME, attempt, self._settings, self._sleep)
        return f"the key may use the model {self.model}"

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._key}"}

    async def _attempt(self, request: dict[str, Any]) -> Answer:
        response = await self._client.post(self._endpoint, json=request, headers=self._headers())
        error = status_error(response, NAME)
        if error is not None:
            raise error
        return parse(json_object(response, NAME))
