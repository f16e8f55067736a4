"""Fake SERP APIs (SerpApi, DataForSEO, Serper) speaking their documented wire formats.

Each fake holds an index of URLs per engine and answers a ``site:<prefix>`` query with the
indexed URLs whose scheme-less spelling starts with the prefix (what a real ``site:`` search
does), so near-miss URLs (``/page`` vs ``/page/``, http vs https) behave as they would live.
Every request is recorded (path, query parameters, headers, JSON body). Tests script the
answers ahead of the normal behaviour: ``fake.script(Reply(429), Reply(429))`` makes the next
two requests fail with 429 and the third answer normally.

Serve one with ``tests.fakes.server.serve(fake.app)``; the scripting core is shared with
``tests.fakes.url_inspection``.
"""

from __future__ import annotations

import base64
import gzip
import json
import threading
import uuid
from collections import deque
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote_plus

from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse

QUERY_PARAM = {"google": "q", "bing": "q", "yandex": "text"}


@dataclass
class Reply:
    """One scripted answer."""

    status: int = 200
    json: Any = None  # the JSON body (ignored when text is given)
    text: str | None = None  # a raw body, e.g. cut-off JSON
    headers: dict[str, str] = field(default_factory=dict)
    truncate: bool = False  # announce a longer Content-Length than is sent: a broken transfer
    gzip: bool = False  # send the body gzip-compressed, with Content-Encoding: gzip

    def response(self) -> Response:
        body = (self.text if self.text is not None else json.dumps(self.json)).encode()
        headers = {"content-type": "application/json", **self.headers}
        if self.gzip:
            body, headers["content-encoding"] = gzip.compress(body), "gzip"
        cls = _CutOff if self.truncate else Response
        return cls(body, status_code=self.status, headers=headers)


class _CutOff(Response):
    """Announces the full length, sends half the body, then the server drops the connection."""

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await send(
            {"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers}
        )
        await send(
            {
                "type": "http.response.body",
                "body": self.body[: len(self.body) // 2],
                "more_body": True,
            }
        )


@dataclass
class Recorded:
    method: str
    path: str
    params: dict[str, str]
    headers: dict[str, str]
    body: Any  # parsed JSON, or the raw text when it is not JSON


class ScriptedFake:
    """Recording, scripted replies and a ``site:`` index; subclasses add the routes."""

    def __init__(self) -> None:
        self.base_url = ""  # set by the test once served
        self.requests: list[Recorded] = []
        self.indexed: dict[str, list[str]] = {}
        self._script: deque[Reply] = deque()
        self._lock = threading.Lock()  # the server runs in another thread
        self.app = FastAPI()

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self._script.extend(replies)

    def forget(self) -> None:
        """No request recorded, no reply scripted and nothing indexed: as new, for the next test
        of a module that shares this fake."""
        with self._lock:
            self.requests.clear()
            self._script.clear()
            self.indexed.clear()

    def index(self, engine: str, *urls: str) -> None:
        self.indexed.setdefault(engine, []).extend(urls)

    def site_results(self, engine: str, query: str) -> list[str]:
        if not query.startswith("site:"):
            return []
        prefix = query.removeprefix("site:").lower()
        return [u for u in self.indexed.get(engine, []) if _schemeless(u).startswith(prefix)]

    async def _begin(self, request: Request) -> tuple[Recorded, Response | None]:
        """Record the request; return it and the next scripted reply, if any."""
        raw = await request.body()
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode(errors="replace")
        recorded = Recorded(
            request.method,
            request.url.path,
            dict(request.query_params),
            {k.lower(): v for k, v in request.headers.items()},
            body,
        )
        with self._lock:
            self.requests.append(recorded)
            reply = self._script.popleft() if self._script else None
        return recorded, reply.response() if reply is not None else None


class RecordingSleep:
    """Stands in for ``asyncio.sleep`` in retries: records each delay, waits for nothing."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


def _schemeless(url: str) -> str:
    return url.split("://", 1)[-1].lower()


class FakeSerpApi(ScriptedFake):
    """``GET /search.json?engine=google|bing|yandex&q=|text=&api_key=``."""

    def __init__(self, key: str = "serpapi-key") -> None:
        super().__init__()
        self.key = key
        self.app.add_api_route("/search.json", self._search, methods=["GET"])

    async def _search(self, request: Request) -> Response:
        _recorded, scripted = await self._begin(request)
        if scripted is not None:
            return scripted
        params = request.query_params
        if params.get("api_key") != self.key:
            return JSONResponse(
                {
                    "error": "Invalid API key. Your API key should be here: https://serpapi.com/manage-api-key"
                },
                status_code=401,
            )
        engine = params.get("engine", "google")
        if engine not in QUERY_PARAM:
            return JSONResponse({"error": "Unsupported `engine` parameter."}, status_code=400)
        name = QUERY_PARAM[engine]
        query = params.get(name)
        if not query:
            return JSONResponse({"error": f"Missing query `{name}` parameter."}, status_code=400)
        return JSONResponse(self.answer(engine, query))

    def answer(self, engine: str, query: str) -> dict[str, Any]:
        search_id = uuid.uuid4().hex[:24]
        body: dict[str, Any] = {
            "search_metadata": {
                "id": search_id,
                "status": "Success",
                "json_endpoint": f"https://serpapi.com/searches/{search_id}.json",
                "total_time_taken": 0.42,
            },
            "search_parameters": {"engine": engine, QUERY_PARAM[engine]: query},
        }
        links = self.site_results(engine, query)
        if not links:
            body["search_information"] = {"organic_results_state": "Fully empty"}
            body["error"] = f"{engine.title()} hasn't returned any results for this query."
            return body
        body["search_information"] = {"organic_results_state": "Results for exact spelling"}
        body["organic_results"] = [
            {
                "position": i,
                "title": f"Result {i}",
                "link": link,
                "displayed_link": _schemeless(link),
                "snippet": "",
            }
            for i, link in enumerate(links, start=1)
        ]
        return body


def envelope(tasks: list[Any], status_code: int = 20000) -> dict[str, Any]:
    """A DataForSEO response envelope around ``tasks``."""
    return {
        "version": "0.1.20250101",
        "status_code": status_code,
        "status_message": "Ok." if status_code == 20000 else "Error.",
        "time": "0.5 sec.",
        "cost": 0.002,
        "tasks_count": len(tasks),
        "tasks_error": sum(
            1 for t in tasks if not isinstance(t, dict) or t.get("status_code") != 20000
        ),
        "tasks": tasks,
    }


def dfs_task(status_code: int, message: str, result: Any = None) -> dict[str, Any]:
    return {
        "id": str(uuid.uuid4()),
        "status_code": status_code,
        "status_message": message,
        "time": "0.4 sec.",
        "cost": 0.002,
        "result_count": len(result) if isinstance(result, list) else 0,
        "path": ["v3", "serp", "google", "organic", "live", "regular"],
        "data": {},
        "result": result,
    }


class FakeDataForSeo(ScriptedFake):
    """``POST /v3/serp/<engine>/organic/live/<regular|advanced>`` with HTTP Basic auth."""

    def __init__(self, login: str = "dfs-login", password: str = "dfs-password") -> None:
        super().__init__()
        self.login, self.password = login, password
        self.paid: dict[str, list[str]] = {}  # engine -> ad URLs shown above the organic ones
        self.app.add_api_route(
            "/v3/serp/{engine}/organic/live/{mode}", self._live, methods=["POST"]
        )

    async def _live(self, engine: str, mode: str, request: Request) -> Response:
        recorded, scripted = await self._begin(request)
        if scripted is not None:
            return scripted
        if (refused := self.unauthorized(request)) is not None:
            return refused
        if engine not in QUERY_PARAM or mode not in ("regular", "advanced"):
            return JSONResponse(envelope([], 40400), status_code=404)
        tasks = recorded.body
        if not isinstance(tasks, list) or len(tasks) != 1 or not isinstance(tasks[0], dict):
            return JSONResponse(envelope([dfs_task(40000, "You can set only one task at a time.")]))
        return JSONResponse(envelope([self.answer(engine, tasks[0])]))

    def unauthorized(self, request: Request) -> Response | None:
        """DataForSEO's answer to wrong HTTP Basic credentials; None when they are right."""
        expected = base64.b64encode(f"{self.login}:{self.password}".encode()).decode()
        if request.headers.get("authorization") == f"Basic {expected}":
            return None
        body = envelope([], 40100)
        body["status_message"] = "You are not authorized to access this resource."
        return JSONResponse(body, status_code=401)

    def answer(self, engine: str, task: dict[str, Any]) -> dict[str, Any]:
        keyword = task.get("keyword")
        if not isinstance(keyword, str) or not keyword:
            return dfs_task(40501, "Invalid Field: 'keyword'.")
        if "location_code" not in task and "location_name" not in task:
            return dfs_task(40501, "Invalid Field: 'location_code'.")
        query = unquote_plus(keyword)  # DataForSEO decodes the keyword field
        links = self.site_results(engine, query)
        if not links:
            return dfs_task(40102, "No Search Results.")
        items: list[dict[str, Any]] = [
            {"type": "paid", "rank_group": 1, "rank_absolute": 1, "url": u, "title": "Ad"}
            for u in self.paid.get(engine, [])
        ]
        items += [
            {
                "type": "organic",
                "rank_group": i,
                "rank_absolute": len(items) + i,
                "domain": _schemeless(u).split("/")[0],
                "title": f"Result {i}",
                "url": u,
                "description": "",
            }
            for i, u in enumerate(links, start=1)
        ]
        result = {
            "keyword": query,
            "type": "organic",
            "se_domain": "google.com",
            "location_code": task.get("location_code"),
            "language_code": task.get("language_code"),
            "check_url": f"https://www.{engine}.com/search?q={keyword}",
            "items_count": len(items),
            "items": items,
        }
        return dfs_task(20000, "Ok.", [result])


class FakeSerper(ScriptedFake):
    """``POST /search`` with ``X-API-KEY``; Google only."""

    def __init__(self, key: str = "serper-key") -> None:
        super().__init__()
        self.key = key
        self.credits: int | None = None  # None: unlimited; 0: "Not enough credits"
        self.app.add_api_route("/search", self._search, methods=["POST"])

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
        body = recorded.body
        query = body.get("q") if isinstance(body, dict) else None
        if not isinstance(query, str) or not query:
            return JSONResponse({"message": "Query is required", "statusCode": 400}, 400)
        num = body.get("num", 10)
        links = self.site_results("google", query)[:num]
        if self.credits is not None:
            self.credits -= 1
        return JSONResponse(
            {
                "searchParameters": {"q": query, "type": "search", "num": num, "engine": "google"},
                "organic": [
                    {"title": f"Result {i}", "link": u, "snippet": "", "position": i}
                    for i, u in enumerate(links, start=1)
                ],
                "credits": 1,
            }
        )
