"""Google's AI Overviews as the SERP providers return them: the prompt searched on Google, the
AI Overview at the top of the page read as an answer (its text and its references in order).

**SerpApi** (serpapi.com/ai-overview, the Google Search API): ``GET {SEOJOBS_SERPAPI_BASE_URL}
/search.json?engine=google&q=<prompt>&api_key=``. The answer's ``ai_overview`` holds
``text_blocks[]`` (``paragraph`` and ``heading`` with a ``snippet``, ``list`` with ``list[]``
items of ``title``/``snippet`` and nested ``list``, ``expandable`` and the like with their own
``text_blocks``; each may carry ``reference_indexes``) and ``references[]`` (``title``,
``link``, ``snippet``, ``source``, ``index``). When Google loads the overview later, it is only
``{"page_token", "serpapi_link"}``: a second request, ``engine=google_ai_overview&page_token=``
(the token lives about a minute), returns it. No ``ai_overview``: Google showed none for the
prompt, an answer with no text. Errors as for index checks (``seojobs.providers.serpapi``):
``{"error"}`` with 401, 403, 429 (throughput, or "Your account has run out of searches."), 5xx.

**DataForSEO** (docs.dataforseo.com/v3/serp/google/organic/live/advanced): one task
``{"keyword", "location_code", "language_code", "device", "depth", "load_async_ai_overview":
true}``; the page's ``items[]`` may hold one of ``type: "ai_overview"`` with ``markdown``, its
``items[]`` (``ai_overview_element``: ``title``, ``text``, ``references[]``) and
``references[]`` (``ai_overview_reference``: ``source``, ``domain``, ``url``, ``title``,
``text``). Status codes as for every DataForSEO call (``seojobs.providers.dataforseo``).

Both search the United States in English on desktop (AI Overviews are shown in few markets;
Google's own location parameters would need a location per prompt).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from seojobs.providers.ai_search import Answer, Citation, json_object, text_or_none
from seojobs.providers.base import (
    QUOTA_EXHAUSTED,
    UPSTREAM_ERROR,
    KeyedClient,
    ProviderError,
    error_for_status,
    malformed,
)
from seojobs.providers.dataforseo import (
    DataForSeoTasks,
    answer_json,
    envelope_code,
    http_error,
)
from seojobs.providers.dataforseo import json_object as dfs_object
from seojobs.providers.keywords import retried

SERPAPI = "serpapi_ai_overview"
DATAFORSEO = "dataforseo_ai_overview"
DFS_PATH = "/v3/serp/google/organic/live/advanced"
MARKET = {"location_code": 2840, "language_code": "en", "device": "desktop"}
_NO_RESULTS = re.compile(r"hasn't returned any results", re.IGNORECASE)
_OUT_OF_SEARCHES = re.compile(r"run out of searches", re.IGNORECASE)


# -- SerpApi ------------------------------------------------------------------------------


def _blocks(blocks: Any) -> Iterator[dict[str, Any]]:
    """Every text block, nested ones (lists, expandables) after their parent, in order."""
    for block in blocks if isinstance(blocks, list) else []:
        if not isinstance(block, dict):
            raise malformed(SERPAPI, "a text block is not a JSON object")
        yield block
        yield from _blocks(block.get("list"))
        yield from _blocks(block.get("text_blocks"))


def serpapi_answer(overview: dict[str, Any]) -> Answer:
    """SerpApi's ``ai_overview`` as an :class:`Answer`: the blocks' titles and snippets, and
    the references in the order the blocks cite them (then the uncited ones)."""
    references = overview.get("references", [])
    if not isinstance(references, list):
        raise malformed(SERPAPI, "ai_overview.references is not a list")
    by_index: dict[int, dict[str, Any]] = {}
    for n, reference in enumerate(references):
        if not isinstance(reference, dict) or not isinstance(reference.get("link"), str):
            raise malformed(SERPAPI, "a reference has no link")
        index = reference.get("index")
        by_index[index if isinstance(index, int) else n] = reference
    lines: list[str] = []
    order: dict[int, None] = {}
    for block in _blocks(overview.get("text_blocks")):
        words = [block.get(k) for k in ("title", "snippet")]
        line = " ".join(w for w in words if isinstance(w, str) and w)
        if line:
            lines.append(line)
        for index in block.get("reference_indexes") or []:
            if index in by_index:
                order.setdefault(index, None)
    ordered = [*order, *(i for i in by_index if i not in order)]
    citations = tuple(
        Citation(by_index[i]["link"], text_or_none(by_index[i].get("title"))) for i in ordered
    )
    return Answer("\n".join(lines), citations, "google-ai-overview")


class SerpApiOverview(KeyedClient):
    name = SERPAPI
    key_setting = "serpapi_key"
    base_setting = "serpapi_base_url"
    path = "/search.json"
    model = "google-ai-overview"

    async def ask(self, prompt: str) -> Answer:
        page = await self._search({"engine": "google", "q": prompt})
        overview = page.get("ai_overview")
        if overview is None:
            return Answer("", (), self.model)  # Google showed no AI Overview
        if not isinstance(overview, dict):
            raise malformed(SERPAPI, "ai_overview is not a JSON object")
        if "text_blocks" not in overview and isinstance(overview.get("page_token"), str):
            later = await self._search(
                {"engine": "google_ai_overview", "page_token": overview["page_token"]}
            )
            overview = later.get("ai_overview")
            if not isinstance(overview, dict):
                return Answer("", (), self.model)  # it expired or Google dropped it
        return serpapi_answer(overview)

    async def verify(self) -> str:
        """``seojobs providers``: SerpApi's Account API (free) answers for the key."""
        body = await self._search({}, path="/account.json")
        left = body.get("total_searches_left")
        return f"the key is valid ({left} searches left)"

    async def _search(self, params: dict[str, str], path: str = "") -> dict[str, Any]:
        url = self._endpoint.removesuffix(self.path) + path if path else self._endpoint
        query = {**params, "api_key": self._key}

        async def attempt() -> dict[str, Any]:
            response = await self._client.get(url, params=query)
            try:
                body = response.json()
            except ValueError:
                body = None
            message = body.get("error") if isinstance(body, dict) else None
            if isinstance(message, str) and _OUT_OF_SEARCHES.search(message):
                raise ProviderError(
                    QUOTA_EXHAUSTED, f"serpapi: {message}", status=response.status, fatal=True
                )
            error = error_for_status(response, SERPAPI)
            if error is not None:
                error.fatal = error.fatal or error.status in (400, 404)  # every prompt alike
                raise error
            page = json_object(response, SERPAPI)
            if isinstance(message, str) and not _NO_RESULTS.search(message):
                raise ProviderError(UPSTREAM_ERROR, f"serpapi: {message}")
            return page

        # The key travels in the query: retried clears it from every error's message.
        return await retried(SERPAPI, attempt, self._settings, self._sleep)


# -- DataForSEO ---------------------------------------------------------------------------


def dataforseo_answer(item: dict[str, Any]) -> Answer:
    """DataForSEO's ``ai_overview`` item as an :class:`Answer`."""
    elements = item.get("items") or []
    if not isinstance(elements, list):
        raise malformed(DATAFORSEO, "ai_overview.items is not a list")
    references = item.get("references") or []
    texts: list[str] = []
    for element in elements:
        if not isinstance(element, dict):
            raise malformed(DATAFORSEO, "an ai_overview element is not a JSON object")
        words = [element.get(k) for k in ("title", "text")]
        texts += [w for w in words if isinstance(w, str) and w]
        if not item.get("references"):
            references += element.get("references") or []
    if not isinstance(references, list):
        raise malformed(DATAFORSEO, "ai_overview.references is not a list")
    markdown = item.get("markdown")
    text = markdown if isinstance(markdown, str) and markdown else "\n".join(texts)
    citations = []
    for reference in references:
        url = reference.get("url") if isinstance(reference, dict) else None
        if not isinstance(url, str) or not url:
            raise malformed(DATAFORSEO, "an ai_overview_reference has no url")
        citations.append(Citation(url, text_or_none(reference.get("title"))))
    return Answer(text, tuple(citations), "google-ai-overview")


class DataForSeoOverview(DataForSeoTasks):
    name = DATAFORSEO
    model = "google-ai-overview"

    async def ask(self, prompt: str) -> Answer:
        task = {"keyword": prompt, **MARKET, "depth": 10, "load_async_ai_overview": True}
        result = await self.task(DFS_PATH, task)
        if not result:  # "No Search Results": no page, no overview
            return Answer("", (), self.model)
        page = result[0] if isinstance(result, list) else None
        items = page.get("items") if isinstance(page, dict) else None
        if not isinstance(items, list | type(None)):
            raise malformed(DATAFORSEO, "result[0].items is not a list")
        for item in items or []:
            if isinstance(item, dict) and item.get("type") == "ai_overview":
                return dataforseo_answer(item)
        return Answer("", (), self.model)

    async def verify(self) -> str:
        """``seojobs providers``: DataForSEO's user data (free) answers for the login."""

        async def attempt() -> Any:
            response = await self._client.get(
                self._base + "/v3/appendix/user_data", auth=self._auth
            )
            error = http_error(response)
            if error is not None:
                raise error
            body = dfs_object(answer_json(response), "the body")
            envelope_code(body, "request", refusal_fatal=True)
            return body

        await retried(DATAFORSEO, attempt, self._settings, self._sleep)
        return "the login and password are valid"
