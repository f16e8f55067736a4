"""Fake Maps and local-pack SERPs for local rank checks, in each provider's documented wire
format: SerpApi (``GET /search.json``, ``engine=google_maps`` and the local pack of
``engine=google``), DataForSEO (``POST /v3/serp/google/maps/live/advanced``) and Serper
(``POST /maps``), with their error bodies (refused keys, spent credits, bad parameters).

Each fake extends the scripted core of ``tests.fakes.serp`` (request recording,
``script(Reply(...))``) and answers from one table a test fills, in our names:
``fake.places("plumber", listing("Acme Plumbing", website="https://acme.example/"), ...)``
lists the businesses in order wherever the keyword is searched; ``fake.rule("plumber", fn)``
answers ``fn(latitude, longitude, location)`` instead (a grid's points differ). Each fake
spells the listing its provider's way.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote_plus

from fastapi import Request, Response
from fastapi.responses import JSONResponse

from tests.fakes.serp import FakeDataForSeo, Reply, ScriptedFake, dfs_task, envelope

# Each provider's documented answer to too many requests: SerpApi's 429 (hourly throughput),
# DataForSEO's task status 40202 in an HTTP 200 envelope, Serper's 429.
SERPAPI_THROTTLED = Reply(
    429,
    {"error": "Your account has exceeded the hourly searches limit."},
    headers={"Retry-After": "0"},
)
DATAFORSEO_THROTTLED = Reply(200, envelope([dfs_task(40202, "Rate-limit per minute exceeded.")]))
SERPER_THROTTLED = Reply(429, {"message": "Too many requests", "statusCode": 429})
INVALID_KEY = "Invalid API key. Your API key should be here: https://serpapi.com/manage-api-key"
Listing = dict[str, Any]
Rule = Callable[[float | None, float | None, str | None], list[Listing]]
LL = re.compile(r"^@?(-?\d+(?:\.\d+)?),(-?\d+(?:\.\d+)?),(\d+(?:\.\d+)?)z$")


def listing(title: str, **fields: Any) -> Listing:
    """One business in our names: place_id, cid, website, rating, reviews, categories,
    address."""
    return {"title": title, **fields}


class PlacesTable:
    def __init__(self) -> None:
        self.rules: dict[str, Rule] = {}
        self.seen: list[tuple[float | None, float | None, str | None]] = []

    def places(self, keyword: str, *listings: Listing) -> None:
        found = list(listings)
        self.rules[keyword.casefold()] = lambda _lat, _lon, _where: found

    def rule(self, keyword: str, rule: Rule) -> None:
        self.rules[keyword.casefold()] = rule

    def of(
        self, keyword: str, lat: float | None, lon: float | None, where: str | None
    ) -> list[Listing]:
        self.seen.append((lat, lon, where))
        rule = self.rules.get(keyword.casefold())
        return rule(lat, lon, where) if rule else []


def _point(ll: str | None) -> tuple[float, float] | None:
    found = LL.match(ll or "")
    return (float(found[1]), float(found[2])) if found else None


class FakeSerpApiLocal(ScriptedFake, PlacesTable):
    """``GET /search.json?engine=google_maps&type=search&q=&ll=|location=&z=`` and
    ``engine=google&q=&location=`` (its ``local_results.places``)."""

    def __init__(self, key: str = "serpapi-key") -> None:
        ScriptedFake.__init__(self)
        PlacesTable.__init__(self)
        self.key = key
        self.searches_left: int | None = None  # None: unlimited; 0: "run out of searches"
        self.app.add_api_route("/search.json", self._search, methods=["GET"])

    def throttle(self, times: int = 1) -> None:
        self.script(*[SERPAPI_THROTTLED] * times)

    async def _search(self, request: Request) -> Response:
        _recorded, scripted = await self._begin(request)
        if scripted is not None:
            return scripted
        params = request.query_params
        if params.get("api_key") != self.key:
            return JSONResponse({"error": INVALID_KEY}, status_code=401)
        if self.searches_left == 0:
            return JSONResponse({"error": "Your account has run out of searches."}, 429)
        engine, query = params.get("engine"), params.get("q")
        if engine not in ("google_maps", "google"):
            return JSONResponse({"error": "Unsupported `engine` parameter."}, status_code=400)
        if not query:
            return JSONResponse({"error": "Missing query `q` parameter."}, status_code=400)
        if self.searches_left is not None:
            self.searches_left -= 1
        if engine == "google":
            return self._local_pack(query, params.get("location"))
        if params.get("type") != "search":
            return JSONResponse({"error": "Missing `type` parameter."}, status_code=400)
        point = _point(params.get("ll"))
        if point is None and not (params.get("location") and params.get("z")):
            return JSONResponse(
                {"error": "Invalid `ll` parameter, or `location` without `z`."}, 400
            )
        lat, lon = point if point else (None, None)
        found = self.of(query, lat, lon, params.get("location"))
        body = self._metadata("google_maps", dict(params))
        if not found:
            body["error"] = "Google hasn't returned any results for this query."
            return JSONResponse(body)
        body["local_results"] = [
            {
                "position": n,
                "title": p["title"],
                "place_id": p.get("place_id"),
                "data_id": "0x89c259a8e1682bf5:0xea388e8841a2955e",
                "data_cid": p.get("cid"),
                "rating": p.get("rating"),
                "reviews": p.get("reviews"),
                "type": (p.get("categories") or [None])[0],
                "types": p.get("categories") or [],
                "address": p.get("address"),
                "website": p.get("website"),
                "gps_coordinates": {"latitude": lat, "longitude": lon},
            }
            for n, p in enumerate(found, start=1)
        ]
        return JSONResponse(body)

    def _local_pack(self, query: str, location: str | None) -> Response:
        found = self.of(query, None, None, location)
        body = self._metadata("google", {"q": query, "location": location})
        body["organic_results"] = []
        if found:  # the local pack shows three places
            body["local_results"] = {
                "places": [
                    {
                        "position": n,
                        "title": p["title"],
                        "place_id": p.get("cid") or p.get("place_id"),  # the CID here
                        "rating": p.get("rating"),
                        "reviews": p.get("reviews"),
                        "type": (p.get("categories") or [None])[0],
                        "address": p.get("address"),
                        "links": {"website": p["website"]} if p.get("website") else {},
                    }
                    for n, p in enumerate(found[:3], start=1)
                ],
                "more_locations_link": "https://www.google.com/search?tbm=lcl",
            }
        return JSONResponse(body)

    @staticmethod
    def _metadata(engine: str, params: dict[str, Any]) -> dict[str, Any]:
        search_id = uuid.uuid4().hex[:24]
        params.pop("api_key", None)
        return {
            "search_metadata": {"id": search_id, "status": "Success",
                                "json_endpoint": f"https://serpapi.com/searches/{search_id}.json"},
            "search_parameters": {"engine": engine, **params},
        }  # fmt: skip


class FakeDataForSeoLocal(FakeDataForSeo, PlacesTable):
    """``POST /v3/serp/google/maps/live/advanced`` with HTTP Basic auth."""

    def __init__(self, login: str = "dfs-login", password: str = "dfs-password") -> None:
        FakeDataForSeo.__init__(self, login, password)
        PlacesTable.__init__(self)
        self.app.add_api_route("/v3/serp/google/maps/live/advanced", self._maps, methods=["POST"])

    def throttle(self, times: int = 1) -> None:
        self.script(*[DATAFORSEO_THROTTLED] * times)

    async def _maps(self, request: Request) -> Response:
        recorded, scripted = await self._begin(request)
        if scripted is not None:
            return scripted
        if (refused := self.unauthorized(request)) is not None:
            return refused
        tasks = recorded.body
        if not isinstance(tasks, list) or len(tasks) != 1 or not isinstance(tasks[0], dict):
            return JSONResponse(envelope([dfs_task(40000, "You can set only one task at a time.")]))
        return JSONResponse(envelope([self.maps_answer(tasks[0])]))

    def maps_answer(self, task: dict[str, Any]) -> dict[str, Any]:
        keyword = task.get("keyword")
        if not isinstance(keyword, str) or not keyword:
            return dfs_task(40501, "Invalid Field: 'keyword'.")
        coordinate, name = task.get("location_coordinate"), task.get("location_name")
        point = _point(coordinate) if isinstance(coordinate, str) else None
        if point is None and not (isinstance(name, str) and name):
            return dfs_task(40501, "Invalid Field: 'location_coordinate'.")
        if not task.get("language_code"):
            return dfs_task(40501, "Invalid Field: 'language_code'.")
        query = unquote_plus(keyword)
        lat, lon = point if point else (None, None)
        found = self.of(query, lat, lon, name)
        if not found:
            return dfs_task(40102, "No Search Results.")
        items = [{"type": "maps_paid_item", "rank_group": 1, "rank_absolute": 1, "title": "Ad"}]
        items += [
            {
                "type": "maps_search",
                "rank_group": n,
                "rank_absolute": n + 1,
                "title": p["title"],
                "place_id": p.get("place_id"),
                "cid": p.get("cid"),
                "domain": (p.get("website") or "").split("://")[-1].split("/")[0] or None,
                "url": p.get("website"),
                "rating": {"rating_type": "Max5", "value": p.get("rating"),
                           "votes_count": p.get("reviews"), "rating_max": 5}
                if p.get("rating") is not None else None,
                "category": (p.get("categories") or [None])[0],
                "additional_categories": (p.get("categories") or [])[1:] or None,
                "address": p.get("address"),
            }
            for n, p in enumerate(found[: task.get("depth", 100)], start=1)
        ]  # fmt: skip
        result = {"keyword": query, "type": "maps", "se_domain": "google.com",
                  "location_code": 2840, "language_code": task.get("language_code"),
                  "check_url": "https://www.google.com/maps/search/" + keyword,
                  "items_count": len(items), "items": items}  # fmt: skip
        answered = dfs_task(20000, "Ok.", [result])
        answered["path"] = ["v3", "serp", "google", "maps", "live", "advanced"]
        return answered


class FakeSerperLocal(ScriptedFake, PlacesTable):
    """``POST /maps`` with ``X-API-KEY``."""

    def __init__(self, key: str = "serper-key") -> None:
        ScriptedFake.__init__(self)
        PlacesTable.__init__(self)
        self.key = key
        self.credits: int | None = None  # None: unlimited; 0: "Not enough credits"
        self.app.add_api_route("/maps", self._maps, methods=["POST"])

    def throttle(self, times: int = 1) -> None:
        self.script(*[SERPER_THROTTLED] * times)

    async def _maps(self, request: Request) -> Response:
        recorded, scripted = await self._begin(request)
        if scripted is not None:
            return scripted
        if request.headers.get("x-api-key") != self.key:
            return JSONResponse({"message": "Unauthorized.", "statusCode": 403}, status_code=403)
        if self.credits == 0:
            return JSONResponse({"message": "Not enough credits", "statusCode": 400}, 400)
        body = recorded.body if isinstance(recorded.body, dict) else {}
        query = body.get("q")
        if not isinstance(query, str) or not query:
            return JSONResponse({"message": "Query is required", "statusCode": 400}, 400)
        point = _point(body.get("ll"))
        if body.get("ll") is not None and point is None:
            return JSONResponse({"message": "Invalid ll", "statusCode": 400}, 400)
        if self.credits is not None:
            self.credits -= 1
        lat, lon = point if point else (None, None)
        found = self.of(query, lat, lon, body.get("location"))
        answer: dict[str, Any] = {
            "searchParameters": {"q": query, "hl": body.get("hl"), "ll": body.get("ll"),
                                 "type": "maps", "engine": "google"},
            "ll": body.get("ll"),
            "credits": 3,
        }  # fmt: skip
        if found:
            answer["places"] = [
                {
                    "position": n,
                    "title": p["title"],
                    "address": p.get("address"),
                    "latitude": lat,
                    "longitude": lon,
                    "rating": p.get("rating"),
                    "ratingCount": p.get("reviews"),
                    "type": (p.get("categories") or [None])[0],
                    "types": p.get("categories") or [],
                    "website": p.get("website"),
                    "cid": p.get("cid"),
                    "placeId": p.get("place_id"),
                }
                for n, p in enumerate(found, start=1)
            ]
        return JSONResponse(answer)
