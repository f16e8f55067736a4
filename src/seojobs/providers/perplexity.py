"""Perplexity Sonar: one prompt, one answer with its cited search results.

Wire format (docs.perplexity.ai, reference/seo_jobs.md §8): ``POST
{SEOJOBS_PERPLEXITY_BASE_URL}/chat/completions`` with ``Authorization: Bearer <key>`` and the
OpenAI-compatible ``{"model", "messages": [{"role": "user", "content"}]}``. The answer is a
chat completion (``choices[0].message.content``, which marks citations ``[1]``, ``[2]``...)
with the top-level ``citations[]`` (URLs, in the order of those marks) and
``search_results[]`` (``title``, ``url``, ``date``); an answer without ``citations`` is
read from ``search_results``. Errors: ``{"error": {"message", "type", "code"}}``.
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

NAME = "perplexity"


def parse(body: dict[str, Any]) -> Answer:
    """A Sonar chat completion as an :class:`Answer`."""
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise malformed(NAME, "choices is not a non-empty list")
    message = choices[0].get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, str):
        raise malformed(NAME, "choices[0].message.content is not text")
    results = body.get("search_results", [])
    if not isinstance(results, list):
        raise malformed(NAME, "search_results is not a list")
    titles = {
        r["url"]: text_or_none(r.get("title"))
        for r in results
        if isinstance(r, dict) and isinstance(r.get("url"), str)
    }
    urls = body.get("citations")
    if urls is None:
        urls = list(titles)
    if not isinstance(urls, list) or not all(isinstance(u, str) and u for u in urls):
        raise malformed(NAME, "citations is not a list of URLs")
    citations = tuple(Citation(url, titles.get(url)) for url in urls)
    return Answer(content, citations, text_or_none(body.get("model")))


class PerplexitySearch(KeyedClient):
    name = NAME
    key_setting = "perplexity_api_key"
    base_setting = "perplexity_base_url"
    path = "/chat/completions"

    def __init__(self, settings: Settings, **options: Any) -> None:
        super().__init__(settings, **options)
        self.model = settings.perplexity_model

    async def ask(self, prompt: str) -> Answer:
        request = {"model": self.model, "messages": [{"role": "user", "content": prompt}]}
        return await retried(NAME, lambda: self._attempt(request), self._settings, self._sleep)

    async def verify(self) -> str:
        """The credential check of ``seojobs providers``: one short question (Perplexity has
        no free call that checks a key; this one may be billed)."""
        request = {
            "model": self.model,
            "messages": [{"role": "user", "content": "Reply with OK."}],
            "max_tokens": 1,
        }
        await retried(NAME, lambda: self._attempt(request), self._settings, self._sleep)
        return f"answered one short question with {self.model} (Perplexity may bill it)"

    async def _attempt(self, request: dict[str, Any]) -> Answer:
        headers = {"Authorization": f"Bearer {self._key}"}
        response = await self._client.post(self._endpoint, json=request, headers=headers)
        error = status_error(response, NAME)
        if error is not None:
            raise error
        return parse(json_object(response, NAME))
