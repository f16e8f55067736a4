"""DataForSEO Live Google Maps SERP (advanced) for local rank checks.

Wire format (docs.dataforseo.com "Live Google Maps SERP"): ``POST {base}/v3/serp/google/maps/
live/advanced`` with HTTP Basic ``login:password`` and one task ``{"keyword", "language_code",
"location_name" | "location_coordinate": "latitude,longitude,zoomz", "depth"}``. The answer is
the usual envelope (``status_code`` 20000 at request and task level); ``tasks[0].result[0].
items[]`` are ``maps_search`` elements with ``rank_group``, ``title``, ``place_id``, ``cid``,
``domain``, ``url``, ``rating`` (``{"value", "votes_count"}``), ``category``,
``additional_categories`` and ``address`` (``maps_paid_item`` ads are not ranked).

Status mapping as for the rank adapter (``seojobs.providers.dataforseo``): HTTP 401 / 40100 and
HTTP 402 / 402xx end the job; 40202 (rate limit), 40101, 5xxxx and HTTP 5xx are retried, then
``upstream_error``; 40102 "No Search Results" is an empty list; another code
``provider_rejected`` for this search with DataForSEO's message.
"""

from __future__ import annotations

from typing import Any

from seojobs.providers.base import malformed
from seojobs.providers.dataforseo import NO_RESULTS, DataForSeoTasks, envelope_code, json_object
from seojobs.providers.keywords import whole
from seojobs.providers.local_ranks import (
    MAX_PLACES,
    LocalQuery,
    LocalSerp,
    Place,
    categories,
    count,
    identifier,
    number,
    text,
)

NAME = "dataforseo"
PATH = "/v3/serp/google/maps/live/advanced"
DEPTH = 20  # a Maps page: the places a searcher sees without scrolling on


def task_of(query: LocalQuery) -> dict[str, Any]:
    keyword = query.keyword.replace("%", "%25").replace("+", "%2B")  # DataForSEO decodes it
    task: dict[str, Any] = {"keyword": keyword, "language_code": query.language, "depth": DEPTH}
    if query.latitude is not None and query.longitude is not None:
        task["location_coordinate"] = f"{query.latitude},{query.longitude},{query.zoom}z"
    else:
        task["location_name"] = query.location
    return task


def _place(item: dict[str, Any], seen: int) -> Place:
    title = text(item.get("title"))
    if title is None:
        raise malformed(NAME, "a maps_search item has no title")
    group = whole(item.get("rank_group"))
    found = item.get("rating")
    rating: dict[str, Any] = found if isinstance(found, dict) else {}
    website = text(item.get("url")) or (
        f"https://{item['domain']}/" if text(item.get("domain")) else None
    )
    return Place(
        group if group is not None and group > 0 else seen,
        title,
        place_id=identifier(item.get("place_id")),
        cid=identifier(item.get("cid")),
        website=website,
        rating=number(rating.get("value")),
        reviews=count(rating.get("votes_count")),
        categories=categories(item.get("category"), item.get("additional_categories")),
        address=text(item.get("address")),
    )


def parse(body: Any) -> LocalSerp:
    envelope = json_object(body, "the body")
    envelope_code(envelope, "request", refusal_fatal=False)
    tasks = envelope.get("tasks")
    if not isinstance(tasks, list) or not tasks:
        raise malformed(NAME, "tasks is not a non-empty list")
    task = json_object(tasks[0], "tasks[0]")
    detail = {f"task_{k}": task[k] for k in ("id", "cost") if isinstance(task.get(k), str | float)}
    if envelope_code(task, "task", refusal_fatal=False) == NO_RESULTS:
        return LocalSerp((), detail)
    results = task.get("result")
    if not isinstance(results, list) or not results:
        raise malformed(NAME, "tasks[0].result is not a non-empty list")
    result = json_object(results[0], "tasks[0].result[0]")
    items = result.get("items") or []  # null when the map held nothing
    if not isinstance(items, list):
        raise malformed(NAME, "items is not a list")
    places: list[Place] = []
    for raw in items[: MAX_PLACES * 2]:
        item = json_object(raw, "an item")
        if item.get("type") == "maps_search" and len(places) < MAX_PLACES:
            places.append(_place(item, len(places) + 1))
    return LocalSerp(tuple(places), detail)


class DataForSeoLocal(DataForSeoTasks):
    name = NAME

    async def local(self, query: LocalQuery) -> LocalSerp:
        return await self.live(PATH, task_of(query), parse)
