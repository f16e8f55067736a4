"""DataForSEO Live SERP (advanced) for rank checks.

Wire format (reference/providers.md §5.3, seo_jobs.md §8): ``POST {base}/v3/serp/google/organic/
live/advanced`` with HTTP Basic ``login:password`` and one task ``{"keyword", "location_code" |
"location_name", "language_code", "device", "depth"}``. The answer is the usual envelope
(``status_code`` 20000 at request and task level); ``tasks[0].result[0].items[]`` lists every
element of the page in order, each with a ``type``: ``organic`` ones carry ``rank_group``
(among organic results), ``rank_absolute`` (among all elements), ``url``, ``domain``,
``title``; the other types (``ai_overview``, ``featured_snippet``, ``people_also_ask``,
``local_pack``, ...) are the page's SERP features. The advanced endpoint is used for those
and for ``rank_absolute``.

Status mapping, as for the index checker (``seojobs.providers.dataforseo``): HTTP 401 / 40100
and HTTP 402 / 402xx end the job (bad login, no money); 40101, 40202, 5xxxx and HTTP 5xx are
retried, then ``upstream_error`` for this keyword; 40102 "No Search Results" is an empty page;
any other code ``provider_rejected`` for this keyword with DataForSEO's message.
"""

from __future__ import annotations

from typing import Any

from seojobs.providers.base import malformed
from seojobs.providers.dataforseo import NO_RESULTS, DataForSeoTasks, envelope_code, json_object
from seojobs.providers.keywords import whole
from seojobs.providers.ranks import (
    Organic,
    RankQuery,
    Serp,
    features_of,
    result_features,
    text_or_none,
)

NAME = "dataforseo"
PATH = "/v3/serp/google/organic/live/advanced"
# DataForSEO item types -> our SERP feature names (the same names, mostly).
FEATURE_TYPES = {
    "ai_overview": "ai_overview",
    "featured_snippet": "featured_snippet",
    "people_also_ask": "people_also_ask",
    "local_pack": "local_pack",
    "map": "local_pack",
    "knowledge_graph": "knowledge_graph",
    "top_stories": "top_stories",
    "video": "videos",
    "images": "images",
    "shopping": "shopping",
    "popular_products": "shopping",
    "related_searches": "related_searches",
    "paid": "paid",
}


def task_of(query: RankQuery) -> dict[str, Any]:
    where: dict[str, Any] = (
        {"location_code": query.location}
        if isinstance(query.location, int)
        else {"location_name": query.location}
    )
    # DataForSEO URL-decodes the keyword: a literal "%" or "+" must be sent escaped.
    keyword = query.keyword.replace("%", "%25").replace("+", "%2B")
    return {
        "keyword": keyword,
        **where,
        "language_code": query.language,
        "device": query.device,
        "depth": query.depth,
    }


def parse(body: Any) -> Serp:
    """A DataForSEO answer as a SERP. Raises ProviderError: fatal or retryable for the codes
    of :func:`code_error`, ``provider_rejected`` for another refusal, ``malformed_response``."""
    envelope = json_object(body, "the body")
    envelope_code(envelope, "request", refusal_fatal=False)
    tasks = envelope.get("tasks")
    if not isinstance(tasks, list) or not tasks:
        raise malformed(NAME, "tasks is not a non-empty list")
    task = json_object(tasks[0], "tasks[0]")
    detail = {f"task_{k}": task[k] for k in ("id", "cost") if k in task}
    if envelope_code(task, "task", refusal_fatal=False) == NO_RESULTS:
        return Serp((), (), detail)
    results = task.get("result")
    if not isinstance(results, list) or not results:
        raise malformed(NAME, "tasks[0].result is not a non-empty list")
    result = json_object(results[0], "tasks[0].result[0]")
    if isinstance(result.get("check_url"), str):
        detail["check_url"] = result["check_url"]
    items = result.get("items") or []  # null when the page held no items
    if not isinstance(items, list):
        raise malformed(NAME, "items is not a list")
    organic: list[Organic] = []
    shown: list[str] = []
    for raw in items:
        item = json_object(raw, "an item")
        kind = item.get("type")
        if kind == "organic":
            organic.append(_organic(item, len(organic) + 1))
        elif isinstance(kind, str) and kind in FEATURE_TYPES:
            shown.append(FEATURE_TYPES[kind])
    return Serp(tuple(organic), features_of(shown), detail)


def _organic(item: dict[str, Any], seen: int) -> Organic:
    url = item.get("url")
    if not isinstance(url, str) or not url:
        raise malformed(NAME, "an organic item has no url")
    group = whole(item.get("rank_group"))
    return Organic(
        url,
        text_or_none(item.get("title")),
        group if group is not None and group > 0 else seen,
        whole(item.get("rank_absolute")),
        result_features(
            {
                "sitelinks": item.get("links"),
                "rating": item.get("rating"),
                "faq": item.get("faq"),
                "video": item.get("is_video") is True,
                "featured_snippet": item.get("is_featured_snippet") is True,
            }
        ),
    )


class DataForSeoRanks(DataForSeoTasks):
    name = NAME

    async def serp(self, query: RankQuery) -> Serp:
        return await self.live(PATH, task_of(query), parse)
