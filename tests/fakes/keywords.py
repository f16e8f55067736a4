"""Fake keyword-data APIs speaking their documented wire formats: DataForSEO (Keywords Data
search volume and keywords for site, DataForSEO Labs keyword ideas) and the Google Ads API
(``customers/{id}:generateKeywordIdeas`` over REST, with an OAuth 2.0 token endpoint that
grants access tokens for a refresh token).

Both answer from one small keyword table (:data:`TABLE`): a seed's ideas are the table's
keywords sharing a word with it, a page's keywords those listed for it in ``pages``. Every
request is recorded; ``script(Reply(...))`` answers the next requests with errors first
(the scripting core of ``tests.fakes.serp``).
"""

from __future__ import annotations

import asyncio
import calendar
import secrets
import threading
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

from fastapi import Request, Response
from fastapi.responses import JSONResponse

from tests.fakes.serp import FakeDataForSeo, ScriptedFake, dfs_task, envelope

MONTH_NAMES = [name.upper() for name in calendar.month_name[1:]]


@dataclass(frozen=True)
class Figures:
    volume: int
    cpc: float  # USD (DataForSEO) or the account's currency (Google Ads)
    index: int  # competition 0..100
    level: str
    low_bid: float
    high_bid: float

    def months(self) -> list[tuple[int, int, int]]:
        """Twelve months (year, month, searches) ending October 2026, around the average."""
        return [(2026 if m <= 10 else 2025, m, self.volume + (m - 6) * 10) for m in range(1, 13)]


TABLE: dict[str, Figures] = {
    "garden hose": Figures(12100, 0.85, 100, "HIGH", 0.42, 1.37),
    "garden tools": Figures(9900, 1.12, 87, "HIGH", 0.51, 1.80),
    "expandable garden hose": Figures(2900, 0.66, 100, "HIGH", 0.30, 0.98),
    "hose reel": Figures(8100, 0.74, 99, "HIGH", 0.38, 1.05),
    "garden design ideas": Figures(1300, 0.21, 12, "LOW", 0.05, 0.40),
    "raised garden bed": Figures(27100, 0.95, 64, "MEDIUM", 0.40, 1.25),
    "pruning shears": Figures(4400, 0.55, 41, "MEDIUM", 0.25, 0.90),
}


def ideas_for(seeds: list[str]) -> list[str]:
    words = {w for seed in seeds for w in seed.lower().split()}
    return [k for k in TABLE if words & set(k.split())]


class FakeDataForSeoKeywords(FakeDataForSeo):
    """DataForSEO (its SERP fake) with the three keyword endpoints, one task per POST."""

    def __init__(self, login: str = "dfs-login", password: str = "dfs-password") -> None:
        super().__init__(login, password)
        # Set by a test that needs a call in flight: requests wait until it is released.
        self.gate: threading.Event | None = None
        self.pages: dict[str, list[str]] = {}
        for path, answer in (
            ("/v3/keywords_data/google_ads/search_volume/live", self._search_volume),
            ("/v3/keywords_data/google_ads/keywords_for_site/live", self._for_site),
            ("/v3/dataforseo_labs/google/keyword_ideas/live", self._ideas),
        ):
            self.app.add_api_route(path, self._endpoint(answer), methods=["POST"])

    def _endpoint(self, answer: Any) -> Any:
        async def endpoint(request: Request) -> Response:
            recorded, scripted = await self._begin(request)
            if self.gate is not None:
                await asyncio.to_thread(self.gate.wait, 60)
            if scripted is not None:
                return scripted
            if (refused := self.unauthorized(request)) is not None:
                return refused
            tasks = recorded.body
            if not isinstance(tasks, list) or len(tasks) != 1 or not isinstance(tasks[0], dict):
                return JSONResponse(envelope([dfs_task(40000, "Invalid task array.")]))
            task = tasks[0]
            if "location_code" not in task and "location_name" not in task:
                return JSONResponse(envelope([dfs_task(40501, "Invalid Field: 'location'.")]))
            if not isinstance(task.get("language_code"), str):
                return JSONResponse(envelope([dfs_task(40501, "Invalid Field: 'language'.")]))
            return JSONResponse(envelope([answer(task)]))

        return endpoint

    @staticmethod
    def row(keyword: str, task: dict[str, Any]) -> dict[str, Any]:
        """A Keywords Data (Google Ads) row: competition as a level, competition_index."""
        f = TABLE[keyword]
        return {
            "keyword": keyword,
            "spell": None,
            "location_code": task.get("location_code"),
            "language_code": task.get("language_code"),
            "search_partners": False,
            "competition": f.level,
            "competition_index": f.index,
            "search_volume": f.volume,
            "low_top_of_page_bid": f.low_bid,
            "high_top_of_page_bid": f.high_bid,
            "cpc": f.cpc,
            "monthly_searches": [
                {"year": y, "month": m, "search_volume": v} for y, m, v in f.months()
            ],
        }

    def _search_volume(self, task: dict[str, Any]) -> dict[str, Any]:
        keywords = task.get("keywords")
        if not isinstance(keywords, list) or not keywords:
            return dfs_task(40501, "Invalid Field: 'keywords'.")
        found = [self.row(k.lower(), task) for k in keywords if k.lower() in TABLE]
        return dfs_task(20000, "Ok.", found)

    def _for_site(self, task: dict[str, Any]) -> dict[str, Any]:
        if task.get("target_type") not in ("site", "page") or not task.get("target"):
            return dfs_task(40501, "Invalid Field: 'target'.")
        listed = self.pages.get(task["target"], [])
        if not listed:
            return dfs_task(40102, "No Search Results.")
        return dfs_task(20000, "Ok.", [self.row(k, task) for k in listed])

    def _ideas(self, task: dict[str, Any]) -> dict[str, Any]:
        keywords = task.get("keywords")
        if not isinstance(keywords, list) or not keywords:
            return dfs_task(40501, "Invalid Field: 'keywords'.")
        names = ideas_for(keywords)[: int(task.get("limit", 700))]
        items = []
        for name in names:
            f = TABLE[name]
            items.append(
                {
                    "se_type": "google",
                    "keyword": name,
                    "location_code": task.get("location_code"),
                    "language_code": task.get("language_code"),
                    "keyword_info": {
                        "se_type": "google",
                        "last_updated_time": "2026-11-01 00:00:00 +00:00",
                        "competition": f.index / 100,  # Labs: 0..1
                        "competition_level": f.level,
                        "cpc": f.cpc,
                        "search_volume": f.volume,
                        "low_top_of_page_bid": f.low_bid,
                        "high_top_of_page_bid": f.high_bid,
                        "categories": [10019],
                        "monthly_searches": [
                            {"year": y, "month": m, "search_volume": v} for y, m, v in f.months()
                        ],
                    },
                    "keyword_properties": {"keyword_difficulty": 40},
                }
            )
        result = {
            "se_type": "google",
            "seed_keywords": keywords,
            "location_code": task.get("location_code"),
            "language_code": task.get("language_code"),
            "total_count": len(items),
            "items_count": len(items),
            "offset": 0,
            "offset_token": "token",
            "items": items or None,
        }
        return dfs_task(20000, "Ok.", [result])


def google_error(status: int, name: str, message: str, **error_code: str) -> dict[str, Any]:
    """The Google Ads REST error body: google.rpc.Status with a GoogleAdsFailure detail."""
    details = []
    if error_code:
        details.append(
            {
                "@type": "type.googleapis.com/google.ads.googleads.v26.errors.GoogleAdsFailure",
                "errors": [{"errorCode": error_code, "message": message}],
                "requestId": secrets.token_hex(8),
            }
        )
    return {"error": {"code": status, "message": message, "status": name, "details": details}}


class FakeGoogleAds(ScriptedFake):
    """``POST /{version}/customers/{id}:generateKeywordIdeas`` and ``POST /token``."""

    def __init__(
        self,
        developer_token: str = "dev-token",
        client_id: str = "client-id",
        client_secret: str = "client-secret",
        refresh_token: str = "refresh-token",
        customer_id: str = "1234567890",
    ) -> None:
        super().__init__()
        self.developer_token = developer_token
        self.client = (client_id, client_secret)
        self.refresh_token = refresh_token
        self.customer_id = customer_id
        self.tokens: set[str] = set()
        self.grants: list[dict[str, str]] = []
        self.pages: dict[str, list[str]] = {}
        self.app.add_api_route("/token", self._token, methods=["POST"])
        self.app.add_api_route(
            "/{version}/customers/{customer}:generateKeywordIdeas", self._ideas, methods=["POST"]
        )

    async def _token(self, request: Request) -> Response:
        form = dict(parse_qsl((await request.body()).decode()))  # form-urlencoded
        self.grants.append(form)
        if (form.get("client_id"), form.get("client_secret")) != self.client:
            body = {
                "error": "invalid_client",
                "error_description": "The OAuth client was not found.",
            }
            return JSONResponse(body, status_code=401)
        if (
            form.get("grant_type") != "refresh_token"
            or form.get("refresh_token") != self.refresh_token
        ):
            body = {
                "error": "invalid_grant",
                "error_description": "Token has been expired or revoked.",
            }
            return JSONResponse(body, status_code=400)
        token = "ya29." + secrets.token_urlsafe(16)
        self.tokens.add(token)
        return JSONResponse({"access_token": token, "expires_in": 3599, "token_type": "Bearer"})

    async def _ideas(self, version: str, customer: str, request: Request) -> Response:
        recorded, scripted = await self._begin(request)
        if scripted is not None:
            return scripted
        bearer = request.headers.get("authorization", "").removeprefix("Bearer ")
        if bearer not in self.tokens:
            body = google_error(
                401,
                "UNAUTHENTICATED",
                "Request is missing required authentication credential.",
                authenticationError="AUTHENTICATION_ERROR",
            )
            return JSONResponse(body, status_code=401)
        if request.headers.get("developer-token") != self.developer_token:
            body = google_error(
                401,
                "UNAUTHENTICATED",
                "The developer token is not valid.",
                authenticationError="DEVELOPER_TOKEN_INVALID",
            )
            return JSONResponse(body, status_code=401)
        if customer != self.customer_id:
            body = google_error(
                403,
                "PERMISSION_DENIED",
                "The caller does not have permission",
                authorizationError="USER_PERMISSION_DENIED",
            )
            return JSONResponse(body, status_code=403)
        return self._answer(recorded.body)

    def _answer(self, body: Any) -> Response:
        if not isinstance(body, dict) or not str(body.get("language", "")).startswith(
            "languageConstants/"
        ):
            invalid = google_error(
                400,
                "INVALID_ARGUMENT",
                "The language is not valid.",
                fieldError="INVALID_VALUE",
            )
            return JSONResponse(invalid, status_code=400)
        if "keywordSeed" in body:
            names = ideas_for(body["keywordSeed"].get("keywords", []))
        else:
            names = self.pages.get(body.get("urlSeed", {}).get("url", ""), [])
        names = names[: int(body.get("pageSize", 10000))]
        if not names:
            return JSONResponse({})  # proto3 JSON leaves out an empty results list
        return JSONResponse(
            {"results": [self.result(n) for n in names], "totalSize": str(len(names))}
        )

    @staticmethod
    def result(name: str) -> dict[str, Any]:
        f = TABLE[name]
        micros = lambda amount: str(round(amount * 1_000_000))  # noqa: E731
        return {
            "text": name,
            "keywordIdeaMetrics": {
                "competition": f.level,
                "monthlySearchVolumes": [
                    {"month": MONTH_NAMES[m - 1], "year": str(y), "monthlySearches": str(v)}
                    for y, m, v in f.months()
                ],
                "avgMonthlySearches": str(f.volume),
                "competitionIndex": str(f.index),
                "lowTopOfPageBidMicros": micros(f.low_bid),
                "highTopOfPageBidMicros": micros(f.high_bid),
                "averageCpcMicros": micros(f.cpc),
            },
            "keywordAnnotations": {},
            "closeVariants": [],
        }
