"""DataForSEO keyword data: search volume and ideas for seeds, keywords for a page.

Wire format (docs.dataforseo.com/v3): ``POST {base}<path>`` with HTTP Basic ``login:password``
(the SERP checker's settings) and a JSON array of one task. The answer is the usual envelope:
``status_code`` at request and at task level (20000 ok), results in ``tasks[0].result``.

- seeds: ``/v3/keywords_data/google_ads/search_volume/live`` ``{"keywords", location,
  "language_code"}`` gives the seeds' own figures (``result[]``: ``keyword``,
  ``search_volume``, ``cpc``, ``competition`` LOW/MEDIUM/HIGH, ``competition_index``,
  ``low/high_top_of_page_bid``, ``monthly_searches[{year, month, search_volume}]``), and
  ``/v3/dataforseo_labs/google/keyword_ideas/live`` ``{"keywords", location,
  "language_code", "limit"}`` the ideas (``result[0].items[]``: ``keyword`` and
  ``keyword_info`` with the same figures, ``competition`` 0..1 and ``competition_level``);
- a URL: ``/v3/keywords_data/google_ads/keywords_for_site/live`` ``{"target",
  "target_type": "page", location, "language_code"}``, answered like search volume.

``location`` is a ``location_code`` (a Google Ads geo target id, 2840 = United States) or a
``location_name``. Status mapping, as for the SERP checker: HTTP 401 / 40100 ``provider_auth_
failed``; HTTP 402 / 402xx ``provider_quota_exhausted`` (money, limits); 40202 (rate) and
5xxxx retried, then ``upstream_error``; 40102 "No Search Results" is no keywords; any other
code ``provider_rejected`` with DataForSEO's message. Every failure ends the lookup: a job's
failure is never retried automatically.
"""

from __future__ import annotations

from typing import Any

from seojobs.providers.base import malformed
from seojobs.providers.dataforseo import DataForSeoTasks, json_object
from seojobs.providers.keywords import (
    Keyword,
    Month,
    Research,
    amount,
    level,
    merge,
    whole,
)

NAME = "dataforseo"
SEARCH_VOLUME = "/v3/keywords_data/google_ads/search_volume/live"
KEYWORD_IDEAS = "/v3/dataforseo_labs/google/keyword_ideas/live"
KEYWORDS_FOR_SITE = "/v3/keywords_data/google_ads/keywords_for_site/live"


class DataForSeoKeywords(DataForSeoTasks):
    async def research(self, request: Research) -> list[Keyword]:
        place = _place(request)
        if request.url is not None:
            task = {"target": request.url, "target_type": "page", **place}
            found = _google_ads_rows(await self.task(KEYWORDS_FOR_SITE, task))
            found.sort(key=lambda k: -(k.search_volume or 0))
            return merge(found, request)
        seeds = list(request.seeds)
        own = _google_ads_rows(await self.task(SEARCH_VOLUME, {"keywords": seeds, **place}))
        ideas_task = {"keywords": seeds, **place, "limit": request.limit}
        ideas = _labs_items(await self.task(KEYWORD_IDEAS, ideas_task))
        return merge(own + ideas, request)


def _place(request: Research) -> dict[str, Any]:
    where: dict[str, Any] = (
        {"location_code": request.location}
        if isinstance(request.location, int)
        else {"location_name": request.location}
    )
    return where | {"language_code": request.language}


def _months(value: object) -> tuple[Month, ...]:
    months = []
    for entry in value if isinstance(value, list) else []:
        if isinstance(entry, dict):
            year, month = whole(entry.get("year")), whole(entry.get("month"))
            if year is not None and month is not None and 1 <= month <= 12:
                months.append(Month(year, month, whole(entry.get("search_volume"))))
    return tuple(months)


def _keyword(text: object, info: dict[str, Any], competition: int | None, lvl: object) -> Keyword:
    if not isinstance(text, str) or not text:
        raise malformed(NAME, f"a keyword is {text!r}")
    return Keyword(
        keyword=text,
        search_volume=whole(info.get("search_volume")),
        cpc=amount(info.get("cpc")),
        competition=competition,
        competition_level=level(lvl),
        low_top_of_page_bid=amount(info.get("low_top_of_page_bid")),
        high_top_of_page_bid=amount(info.get("high_top_of_page_bid")),
        currency="USD",
        monthly_searches=_months(info.get("monthly_searches")),
    )


def _google_ads_rows(result: Any) -> list[Keyword]:
    """``result[]`` of search volume and keywords for site: one object per keyword."""
    if result is None:
        return []
    if not isinstance(result, list):
        raise malformed(NAME, "result is not a list")
    rows = [json_object(row, "a result row") for row in result]
    return [
        _keyword(
            row.get("keyword"), row, whole(row.get("competition_index")), row.get("competition")
        )
        for row in rows
    ]


def _labs_items(result: Any) -> list[Keyword]:
    """``result[0].items[]`` of DataForSEO Labs: ``keyword`` and its ``keyword_info``."""
    if result is None:
        return []
    if not isinstance(result, list) or not result:
        raise malformed(NAME, "result is not a non-empty list")
    items = json_object(result[0], "result[0]").get("items") or []  # null: no ideas
    if not isinstance(items, list):
        raise malformed(NAME, "items is not a list")
    found = []
    for item in items:
        entry = json_object(item, "an item")
        info = entry.get("keyword_info") or {}
        if not isinstance(info, dict):
            raise malformed(NAME, "keyword_info is not a JSON object")
        share = amount(info.get("competition"))  # 0..1 here
        index = round(share * 100) if share is not None else None
        found.append(_keyword(entry.get("keyword"), info, index, info.get("competition_level")))
    return found
