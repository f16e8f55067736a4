"""Serper.dev keyword SERPs for rank checks.

Wire format (reference/providers.md §5.1, seo_jobs.md §8): ``POST {base}/search`` with
``X-API-KEY`` and JSON ``{"q", "gl", "hl", "num", "location"?}``; the answer holds
``organic[{title, link, position}]`` and a key per SERP feature (``answerBox``,
``peopleAlsoAsk``, ``places``, ``knowledgeGraph``, ``topStories``, ...). Errors as for the
index checker: 401/403 a refused key, 400 ``Not enough credits`` (both end the job), 429/5xx
retried then ``upstream_error``, another 4xx ``provider_rejected`` for this keyword.

Serper takes a country (``gl``) and optionally a location name, and answers desktop results
only: a location code is sent as its country (Google Ads country ids are 2000 + the ISO 3166
numeric code, :data:`COUNTRIES`), and what Serper cannot express (a mobile check, a code that
is no country we know) is refused by :func:`unsupported` before anything is spent.
"""

from __future__ import annotations

from typing import Any

from seojobs.fetch.http import Response
from seojobs.providers.base import (
    QUOTA_EXHAUSTED,
    KeyedClient,
    ProviderError,
    error_for_status,
    malformed,
)
from seojobs.providers.keywords import retried
from seojobs.providers.ranks import (
    Organic,
    RankQuery,
    Serp,
    features_of,
    result_features,
    text_or_none,
)

NAME = "serper"
# Google Ads country geo target ids (2000 + ISO 3166-1 numeric) -> Serper's gl.
COUNTRIES = {
    2036: "au", 2040: "at", 2056: "be", 2076: "br", 2124: "ca", 2152: "cl", 2156: "cn",
    2170: "co", 2203: "cz", 2208: "dk", 2246: "fi", 2250: "fr", 2276: "de", 2300: "gr",
    2344: "hk", 2348: "hu", 2356: "in", 2360: "id", 2372: "ie", 2376: "il", 2380: "it",
    2392: "jp", 2410: "kr", 2458: "my", 2484: "mx", 2528: "nl", 2554: "nz", 2578: "no",
    2608: "ph", 2616: "pl", 2620: "pt", 2642: "ro", 2682: "sa", 2702: "sg", 2710: "za",
    2724: "es", 2752: "se", 2756: "ch", 2158: "tw", 2764: "th", 2792: "tr", 2804: "ua",
    2784: "ae", 2826: "gb", 2840: "us", 2704: "vn", 2032: "ar", 2818: "eg", 2566: "ng",
}  # fmt: skip
# Serper's answer keys -> our SERP feature names.
FEATURE_KEYS = {
    "aiOverview": "ai_overview",
    "answerBox": "featured_snippet",
    "peopleAlsoAsk": "people_also_ask",
    "places": "local_pack",
    "knowledgeGraph": "knowledge_graph",
    "topStories": "top_stories",
    "videos": "videos",
    "images": "images",
    "shopping": "shopping",
    "relatedSearches": "related_searches",
    "ads": "paid",
}


def unsupported(query_device: str, location: int | str) -> str | None:
    """Why Serper cannot run this search; None when it can."""
    if query_device != "desktop":
        return "serper answers desktop results only: use provider dataforseo for mobile"
    if isinstance(location, int) and location not in COUNTRIES:
        return (
            f"serper takes a country, and location {location} is no country code it knows: "
            "give a location name, or use provider dataforseo"
        )
    return None


def request_body(query: RankQuery) -> dict[str, Any]:
    body: dict[str, Any] = {"q": query.keyword, "hl": query.language, "num": query.depth}
    if isinstance(query.location, int):
        body["gl"] = COUNTRIES.get(query.location)
    else:
        body["location"] = query.location
    return body


def parse(body: Any) -> Serp:
    """A Serper answer as a SERP; ProviderError(malformed_response) when it is not one."""
    if not isinstance(body, dict):
        raise malformed(NAME, "the body is not a JSON object")
    if "organic" not in body and "searchParameters" not in body:
        raise malformed(NAME, "neither organic nor searchParameters")
    organic = body.get("organic", [])  # left out when nothing was found
    if not isinstance(organic, list):
        raise malformed(NAME, "organic is not a list")
    found: list[Organic] = []
    for entry in organic:
        if not isinstance(entry, dict) or not isinstance(entry.get("link"), str):
            raise malformed(NAME, "an organic result has no link")
        position = entry.get("position")
        rank = len(found) + 1
        if isinstance(position, int) and not isinstance(position, bool) and position > 0:
            rank = position
        shown = {"sitelinks": entry.get("sitelinks"), "rating": entry.get("rating")}
        title = text_or_none(entry.get("title"))
        found.append(Organic(entry["link"], title, rank, None, result_features(shown)))
    features = [name for key, name in FEATURE_KEYS.items() if body.get(key)]
    detail = {"credits": body["credits"]} if isinstance(body.get("credits"), int) else {}
    return Serp(tuple(found), features_of(features), detail)


class SerperRanks(KeyedClient):
    name = NAME
    key_setting = "serper_key"
    base_setting = "serper_base_url"
    path = "/search"

    async def serp(self, query: RankQuery) -> Serp:
        body = request_body(query)
        return await retried(NAME, lambda: self._attempt(body), self._settings, self._sleep)

    async def _attempt(self, body: dict[str, Any]) -> Serp:
        response = await self._client.post(
            self._endpoint, json=body, headers={"X-API-KEY": self._key}
        )
        if response.status == 400 and "credit" in response.text.lower():
            message = f"serper has no credits left: {response.text[:200]}"
            raise ProviderError(QUOTA_EXHAUSTED, message, status=400, fatal=True)
        error = error_for_status(response, NAME)
        if error is not None:
            raise error  # auth (fatal), 429/5xx (retried), another 4xx (this keyword)
        return parse(_json(response))


def _json(response: Response) -> Any:
    try:
        return response.json()
    except ValueError:
        raise malformed(NAME, "the body is not JSON") from None
