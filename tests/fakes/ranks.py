"""Fake keyword SERPs for rank checks: Serper (``POST /search``) and DataForSEO Live SERP
advanced (``POST /v3/serp/google/organic/live/advanced``), in their documented wire formats.

Both extend the index-check fakes of ``tests.fakes.serp`` (their auth, error bodies, request
recording and ``script(Reply(...))``) and answer a keyword query from one table a test fills:
``fake.results("garden hose", url, url, ...)`` sets the organic results in order,
``fake.features("garden hose", "people_also_ask", ...)`` the SERP features shown above them
and ``fake.marks("garden hose", url, "sitelinks", ...)`` what one result shows (our names;
each fake spells them its provider's way).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote_plus

from fastapi import Request, Response
from fastapi.responses import JSONResponse

from tests.fakes.serp import FakeDataForSeo, FakeSerper, dfs_task

# Our feature names -> Serper's answer keys / DataForSEO's item types.
SERPER_KEYS = {
    "featured_snippet": "answerBox",
    "people_also_ask": "peopleAlsoAsk",
    "local_pack": "places",
    "knowledge_graph": "knowledgeGraph",
    "top_stories": "topStories",
    "related_searches": "relatedSearches",
}
DATAFORSEO_TYPES = {
    "ai_overview": "ai_overview",
    "featured_snippet": "featured_snippet",
    "people_also_ask": "people_also_ask",
    "local_pack": "local_pack",
    "knowledge_graph": "knowledge_graph",
}


# What one organic result shows: Serper's documented keys, DataForSEO's organic item fields.
SERPER_MARKS: dict[str, dict[str, Any]] = {
    "sitelinks": {"sitelinks": [{"title": "Pricing", "link": "https://x.example/pricing"}]},
    "rating": {"rating": 4.6, "ratingCount": 120},
}
DATAFORSEO_MARKS: dict[str, dict[str, Any]] = {
    "sitelinks": {"links": [{"type": "link_element", "title": "Pricing", "url": "https://x/"}]},
    "rating": {
        "rating": {"rating_type": "Max5", "value": 4.6, "votes_count": 120, "rating_max": 5}
    },
    "faq": {"faq": {"type": "faq_box", "items": [{"type": "faq_box_element", "title": "Q"}]}},
    "video": {"is_video": True},
    "featured_snippet": {"is_featured_snippet": True},
}


class SerpTable:
    """Keyword (any case) -> organic result URLs and SERP features."""

    def __init__(self) -> None:
        self.organic: dict[str, list[str]] = {}
        self.shown: dict[str, list[str]] = {}
        self.marked: dict[tuple[str, str], list[str]] = {}

    def results(self, keyword: str, *urls: str) -> None:
        self.organic[keyword.casefold()] = list(urls)

    def features(self, keyword: str, *names: str) -> None:
        self.shown[keyword.casefold()] = list(names)

    def marks(self, keyword: str, url: str, *names: str) -> None:
        self.marked[keyword.casefold(), url] = list(names)

    def marks_of(self, keyword: str, url: str, table: dict[str, dict[str, Any]]) -> dict[str, Any]:
        fields: dict[str, Any] = {}
        for name in self.marked.get((keyword.casefold(), url), []):
            fields |= table[name]
        return fields

    def of(self, keyword: str) -> tuple[list[str], list[str]]:
        key = keyword.casefold()
        return self.organic.get(key, []), self.shown.get(key, [])


def _domain(url: str) -> str:
    return url.split("://", 1)[-1].split("/", 1)[0]


class FakeSerperRanks(FakeSerper, SerpTable):
    def __init__(self, key: str = "serper-key") -> None:
        FakeSerper.__init__(self, key)
        SerpTable.__init__(self)

    async def _search(self, request: Request) -> Response:
        recorded, scripted = await self._begin(request)
        if scripted is not None:
            return scripted
        if request.headers.get("x-api-key") != self.key:
            return JSONResponse({"message": "Unauthorized.", "statusCode": 403}, status_code=403)
        if self.credits == 0:
            return JSONResponse(
                {"message": "Not enough credits", "statusCode": 400}, status_code=400
            )
        body = recorded.body if isinstance(recorded.body, dict) else {}
        query = body.get("q")
        if not isinstance(query, str) or not query:
            return JSONResponse({"message": "Query is required", "statusCode": 400}, 400)
        num = body.get("num", 10)
        links, features = self.of(query)
        answer: dict[str, Any] = {
            "searchParameters": {"q": query, "gl": body.get("gl"), "hl": body.get("hl"),
                                 "num": num, "type": "search", "engine": "google"},
            "credits": 1,
        }  # fmt: skip
        if links:  # Serper leaves organic out when there is nothing
            answer["organic"] = [
                {"title": f"Result {i}", "link": u, "snippet": "", "position": i}
                | self.marks_of(query, u, SERPER_MARKS)
                for i, u in enumerate(links[:num], start=1)
            ]
        for name in features:
            answer[SERPER_KEYS[name]] = [{"title": name}]
        return JSONResponse(answer)


class FakeDataForSeoRanks(FakeDataForSeo, SerpTable):
    def __init__(self, login: str = "dfs-login", password: str = "dfs-password") -> None:
        FakeDataForSeo.__init__(self, login, password)
        SerpTable.__init__(self)

    def answer(self, engine: str, task: dict[str, Any]) -> dict[str, Any]:
        keyword = task.get("keyword")
        if not isinstance(keyword, str) or not keyword:
            return dfs_task(40501, "Invalid Field: 'keyword'.")
        if "location_code" not in task and "location_name" not in task:
            return dfs_task(40501, "Invalid Field: 'location_code'.")
        if task.get("device", "desktop") not in ("desktop", "mobile"):
            return dfs_task(40501, "Invalid Field: 'device'.")
        query = unquote_plus(keyword)
        links, features = self.of(query)
        if not links and not features:
            return dfs_task(40102, "No Search Results.")
        items: list[dict[str, Any]] = [
            {"type": DATAFORSEO_TYPES[name], "rank_group": 1, "rank_absolute": i}
            for i, name in enumerate(features, start=1)
        ]
        depth = task.get("depth", 100)
        items += [
            {
                "type": "organic",
                "rank_group": i,
                "rank_absolute": len(features) + i,
                "domain": _domain(u),
                "title": f"Result {i}",
                "url": u,
                "description": "",
            }
            | self.marks_of(query, u, DATAFORSEO_MARKS)
            for i, u in enumerate(links[:depth], start=1)
        ]
        result = {
            "keyword": query,
            "type": "organic",
            "se_domain": "google.com",
            "location_code": task.get("location_code"),
            "language_code": task.get("language_code"),
            "check_url": f"https://www.google.com/search?q={keyword}",
            "items_count": len(items),
            "items": items,
        }
        return dfs_task(20000, "Ok.", [result])
