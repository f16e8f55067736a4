"""Fake answer engines speaking their documented wire formats: Gemini ``generateContent`` with
Grounding with Google Search, Anthropic's Messages API with the web search tool, and Google's
AI Overviews as SerpApi (``engine=google``, ``engine=google_ai_overview``) and DataForSEO (Live
SERP advanced, an ``ai_overview`` item) return them.

Each answers a prompt from ``answers`` (a :class:`~tests.fakes.ai_search.Canned` text and the
sources it cites; ``default`` for any other prompt), checks the key where the provider reads it
(a wrong one gets the provider's own refusal) and records every request; ``script(Reply(...))``
answers the next requests first (the scripting core of ``tests.fakes.serp``). The error bodies
the tests script are built by the helpers here, as each provider documents them.
"""

from __future__ import annotations

import base64
import uuid
from typing import Any

from fastapi import Request, Response
from fastapi.responses import JSONResponse

from tests.fakes.ai_search import Canned
from tests.fakes.serp import Reply, ScriptedFake, dfs_task, envelope

GEMINI_KEY = "AIzaSyTest-gemini-0123456789"
ANTHROPIC_KEY = "sk-ant-api03-test-0123456789"
SERPAPI_KEY = "serpapi-key"
REDIRECT = "https://vertexaisearch.cloud.google.com/grounding-api-redirect/"


class _Engine(ScriptedFake):
    def __init__(self) -> None:
        super().__init__()
        self.answers: dict[str, Canned] = {}
        self.default = Canned("I could not find anything about that.")

    def canned(self, prompt: str) -> Canned:
        return self.answers.get(prompt, self.default)


# -- Gemini ---------------------------------------------------------------------------------


def gemini_error(code: int, status: str, message: str, *details: Any) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "status": status, "details": list(details)}}


def gemini_rate_limited(retry_delay: str = "0s", quota: str = "") -> Reply:
    """429 RESOURCE_EXHAUSTED as the Gemini API sends it: a QuotaFailure naming the quota and
    a RetryInfo with the delay."""
    quota_id = quota or "GenerateRequestsPerMinutePerProjectPerModel-FreeTier"
    body = gemini_error(
        429,
        "RESOURCE_EXHAUSTED",
        "You exceeded your current quota, please check your plan and billing details.",
        {
            "@type": "type.googleapis.com/google.rpc.QuotaFailure",
            "violations": [
                {
                    "quotaMetric": "generativelanguage.googleapis.com/"
                    "generate_content_free_tier_requests",
                    "quotaId": quota_id,
                    "quotaDimensions": {"location": "global", "model": "gemini-2.5-flash"},
                    "quotaValue": "10",
                }
            ],
        },
        {"@type": "type.googleapis.com/google.rpc.Help", "links": []},
        {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": retry_delay},
    )
    return Reply(429, body)


class FakeGemini(_Engine):
    """``POST /v1beta/models/{model}:generateContent`` and ``GET /v1beta/models/{model}``. A
    prompt in ``blocked`` is refused by the content filters as documented: no candidates, a
    ``promptFeedback`` with its ``blockReason`` (``SAFETY``, ``OTHER``, ``BLOCKLIST``,
    ``PROHIBITED_CONTENT``) and the prompt's ``safetyRatings``."""

    model = "gemini-2.5-flash"

    def __init__(self, key: str = GEMINI_KEY) -> None:
        super().__init__()
        self.key = key
        self.blocked: dict[str, str] = {}
        self.app.add_api_route("/v1beta/models/{call}", self._call, methods=["POST"])
        self.app.add_api_route("/v1beta/models/{model}", self._model, methods=["GET"])

    def refused(self, request: Request) -> Response | None:
        if request.headers.get("x-goog-api-key") == self.key:
            return None
        body = gemini_error(
            400,
            "INVALID_ARGUMENT",
            "API key not valid. Please pass a valid API key.",
            {
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": "API_KEY_INVALID",
                "domain": "googleapis.com",
                "metadata": {"service": "generativelanguage.googleapis.com"},
            },
        )
        return JSONResponse(body, status_code=400)

    async def _model(self, request: Request, model: str) -> Response:
        _recorded, scripted = await self._begin(request)
        if scripted is not None:
            return scripted
        refused = self.refused(request)
        return refused or JSONResponse({"name": f"models/{model}", "version": "001"})

    async def _call(self, request: Request, call: str) -> Response:
        recorded, scripted = await self._begin(request)
        if scripted is not None:
            return scripted
        if (refused := self.refused(request)) is not None:
            return refused
        model, _, method = call.partition(":")
        if method != "generateContent" or model != self.model:
            message = f"models/{model} is not found for API version v1beta"
            return JSONResponse(gemini_error(404, "NOT_FOUND", message), status_code=404)
        body = recorded.body
        try:
            prompt = body["contents"][-1]["parts"][0]["text"]
        except (KeyError, IndexError, TypeError):
            error = gemini_error(
                400,
                "INVALID_ARGUMENT",
                "* GenerateContentRequest.contents: contents is not specified",
            )
            return JSONResponse(error, status_code=400)
        grounded = {"google_search": {}} in (body.get("tools") or [])
        return JSONResponse(self.response(str(prompt), grounded))

    def response(self, prompt: str, grounded: bool) -> dict[str, Any]:
        if prompt in self.blocked:
            return {
                "promptFeedback": {
                    "blockReason": self.blocked[prompt],
                    "safetyRatings": [
                        {"category": category, "probability": probability}
                        for category, probability in (
                            ("HARM_CATEGORY_SEXUALLY_EXPLICIT", "NEGLIGIBLE"),
                            ("HARM_CATEGORY_HATE_SPEECH", "NEGLIGIBLE"),
                            ("HARM_CATEGORY_HARASSMENT", "NEGLIGIBLE"),
                            ("HARM_CATEGORY_DANGEROUS_CONTENT", "HIGH"),
                        )
                    ],
                },
                "usageMetadata": {"promptTokenCount": 9, "totalTokenCount": 9},
                "modelVersion": self.model,
                "responseId": uuid.uuid4().hex[:20],
            }
        canned = self.canned(prompt)
        candidate: dict[str, Any] = {
            "content": {"parts": [{"text": canned.text}], "role": "model"},
            "finishReason": "STOP",
            "index": 0,
        }
        if grounded:
            chunks = [
                {"web": {"uri": REDIRECT + uuid.uuid4().hex, "title": url.split("/")[2]}}
                for url, _title in canned.sources
            ]
            # Cited in reverse order of the chunks: the text cites the last chunk first.
            supports = [
                {
                    "segment": {
                        "startIndex": n * 5,
                        "endIndex": n * 5 + 4,
                        "text": canned.text[:4],
                    },
                    "groundingChunkIndices": [len(chunks) - 1 - n],
                    "confidenceScores": [0.9],
                }
                for n in range(len(chunks))
            ]
            candidate["groundingMetadata"] = {
                "webSearchQueries": [prompt],
                "searchEntryPoint": {"renderedContent": "<style></style><div></div>"},
                "groundingChunks": chunks,
                "groundingSupports": supports,
            }
        return {
            "candidates": [candidate],
            "usageMetadata": {
                "promptTokenCount": 9,
                "candidatesTokenCount": 60,
                "totalTokenCount": 69,
            },
            "modelVersion": self.model,
            "responseId": uuid.uuid4().hex[:20],
        }


# -- Anthropic ------------------------------------------------------------------------------


def anthropic_error(status: int, kind: str, message: str, **headers: str) -> Reply:
    body = {
        "type": "error",
        "error": {"type": kind, "message": message},
        "request_id": "req_011CTest",
    }
    return Reply(status, body, headers=headers)


class FakeAnthropic(_Engine):
    """``POST /v1/messages`` and ``GET /v1/models/{model}``. A prompt in ``pausing`` is
    paused once, as a long server-tool turn is: the first answer stops with
    ``stop_reason: "pause_turn"`` after the search call; a request that sends that content
    back as-is as the assistant's message after the prompt gets the rest of the turn (any
    other continuation is refused with 400, as the API refuses a malformed conversation)."""

    model = "claude-sonnet-4-5"

    def __init__(self, key: str = ANTHROPIC_KEY) -> None:
        super().__init__()
        self.key = key
        self.pausing: set[str] = set()
        self.app.add_api_route("/v1/messages", self._messages, methods=["POST"])
        self.app.add_api_route("/v1/models/{model}", self._model, methods=["GET"])

    def refused(self, request: Request) -> Response | None:
        if request.headers.get("anthropic-version") != "2023-06-01":
            return anthropic_error(
                400, "invalid_request_error", "anthropic-version: header is required"
            ).response()
        if request.headers.get("x-api-key") == self.key:
            return None
        return anthropic_error(401, "authentication_error", "invalid x-api-key").response()

    async def _model(self, request: Request, model: str) -> Response:
        _recorded, scripted = await self._begin(request)
        if scripted is not None:
            return scripted
        refused = self.refused(request)
        return refused or JSONResponse({"type": "model", "id": model, "display_name": model})

    async def _messages(self, request: Request) -> Response:
        recorded, scripted = await self._begin(request)
        if scripted is not None:
            return scripted
        if (refused := self.refused(request)) is not None:
            return refused
        body = recorded.body if isinstance(recorded.body, dict) else {}
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages or "max_tokens" not in body:
            return anthropic_error(
                400, "invalid_request_error", "max_tokens: Field required"
            ).response()
        if body.get("model") != self.model:
            return anthropic_error(404, "not_found_error", f"model: {body.get('model')}").response()
        tools = body.get("tools") or []
        searched = any(t.get("type") == "web_search_20250305" for t in tools)
        prompt = str(messages[0].get("content"))
        whole = self.message(prompt, searched)
        if prompt not in self.pausing or not searched:
            if len(messages) != 1:
                return anthropic_error(400, "invalid_request_error", "unexpected turn").response()
            return JSONResponse(whole)
        head, rest = whole["content"][:2], whole["content"][2:]  # paused after the search call
        if len(messages) == 1:
            return JSONResponse(whole | {"content": head, "stop_reason": "pause_turn"})
        if messages[1:] != [{"role": "assistant", "content": head}]:
            return anthropic_error(
                400, "invalid_request_error", "messages: a paused turn is continued as-is"
            ).response()
        return JSONResponse(whole | {"content": rest})

    def message(self, prompt: str, searched: bool) -> dict[str, Any]:
        canned = self.canned(prompt)
        content: list[dict[str, Any]] = []
        sources = canned.sources if searched else []
        if searched:
            content += [
                {"type": "text", "text": "I'll search for that."},
                {
                    "type": "server_tool_use",
                    "id": "srvtoolu_01",
                    "name": "web_search",
                    "input": {"query": prompt},
                },
                {
                    "type": "web_search_tool_result",
                    "tool_use_id": "srvtoolu_01",
                    "content": [
                        {
                            "type": "web_search_result",
                            "url": url,
                            "title": title,
                            "encrypted_content": "EqgfCioIARgBIiQ3",
                            "page_age": "November 20, 2026",
                        }
                        for url, title in sources
                    ],
                },
            ]
        content.append(
            {
                "type": "text",
                "text": canned.text,
                "citations": [
                    {
                        "type": "web_search_result_location",
                        "url": url,
                        "title": title,
                        "encrypted_index": "Eo8BCioIAhgB",
                        "cited_text": canned.text[:20],
                    }
                    for url, title in sources
                ],
            }
        )
        return {
            "id": f"msg_{len(self.requests)}",
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": content,
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {
                "input_tokens": 2100,
                "output_tokens": 90,
                "server_tool_use": {"web_search_requests": int(searched)},
            },
        }


# -- Google's AI Overviews through the SERP providers --------------------------------------


class FakeSerpApiOverview(_Engine):
    """``GET /search.json?engine=google&q=`` with an ``ai_overview`` (inline, or a
    ``page_token`` for the prompts in ``deferred``), ``engine=google_ai_overview&page_token=``,
    and the Account API ``GET /account.json``."""

    def __init__(self, key: str = SERPAPI_KEY) -> None:
        super().__init__()
        self.key = key
        self.deferred: set[str] = set()
        self.none: set[str] = set()  # prompts Google shows no AI Overview for
        self.app.add_api_route("/search.json", self._search, methods=["GET"])
        self.app.add_api_route("/account.json", self._account, methods=["GET"])

    def refused(self, request: Request) -> Response | None:
        if request.query_params.get("api_key") == self.key:
            return None
        message = "Invalid API key. Your API key should be here: https://serpapi.com/manage-api-key"
        return JSONResponse({"error": message}, status_code=401)

    async def _account(self, request: Request) -> Response:
        _recorded, scripted = await self._begin(request)
        if scripted is not None:
            return scripted
        return self.refused(request) or JSONResponse(
            {"account_email": "a@example.com", "total_searches_left": 240}
        )

    async def _search(self, request: Request) -> Response:
        _recorded, scripted = await self._begin(request)
        if scripted is not None:
            return scripted
        if (refused := self.refused(request)) is not None:
            return refused
        params = request.query_params
        search_id = uuid.uuid4().hex[:24]
        meta = {"id": search_id, "status": "Success", "total_time_taken": 1.2}
        if params.get("engine") == "google_ai_overview":
            token = params.get("page_token", "")
            prompt = base64.urlsafe_b64decode(token.encode()).decode()
            body = {"search_metadata": meta, "ai_overview": self.overview(prompt)}
            return JSONResponse(body)
        prompt = params.get("q", "")
        if not prompt:
            return JSONResponse({"error": "Missing query `q` parameter."}, status_code=400)
        page: dict[str, Any] = {
            "search_metadata": meta,
            "search_parameters": {"engine": "google", "q": prompt},
            "organic_results": [
                {"position": 1, "title": "A result", "link": "https://result.example/"}
            ],
        }
        if prompt in self.deferred:
            token = base64.urlsafe_b64encode(prompt.encode()).decode()
            page["ai_overview"] = {
                "page_token": token,
                "serpapi_link": "https://serpapi.com/search.json?engine=google_ai_overview"
                f"&page_token={token}",
            }
        elif prompt not in self.none:
            page["ai_overview"] = self.overview(prompt)
        return JSONResponse(page)

    def overview(self, prompt: str) -> dict[str, Any]:
        canned = self.canned(prompt)
        indexes = list(range(len(canned.sources)))
        return {
            "text_blocks": [
                {"type": "paragraph", "snippet": canned.text, "reference_indexes": indexes[:1]},
                {
                    "type": "list",
                    "list": [
                        {
                            "title": "Also:",
                            "snippet": "see the sources.",
                            "reference_indexes": indexes[1:],
                        },
                    ],
                },
            ],
            "references": [
                {
                    "title": title,
                    "link": url,
                    "snippet": "...",
                    "source": url.split("/")[2],
                    "index": n,
                }
                for n, (url, title) in enumerate(canned.sources)
            ],
        }


class FakeDataForSeoOverview(_Engine):
    """``POST /v3/serp/google/organic/live/advanced`` (HTTP Basic) with an ``ai_overview`` item,
    and ``GET /v3/appendix/user_data``."""

    def __init__(self, login: str = "dfs-login", password: str = "dfs-password") -> None:
        super().__init__()
        self.login, self.password = login, password
        self.none: set[str] = set()
        self.app.add_api_route(
            "/v3/serp/google/organic/live/advanced", self._live, methods=["POST"]
        )
        self.app.add_api_route("/v3/appendix/user_data", self._user, methods=["GET"])

    def refused(self, request: Request) -> Response | None:
        expected = base64.b64encode(f"{self.login}:{self.password}".encode()).decode()
        if request.headers.get("authorization") == f"Basic {expected}":
            return None
        body = envelope([], 40100)
        body["status_message"] = "You are not authorized to access this resource."
        return JSONResponse(body, status_code=401)

    async def _user(self, request: Request) -> Response:
        _recorded, scripted = await self._begin(request)
        if scripted is not None:
            return scripted
        return self.refused(request) or JSONResponse(envelope([dfs_task(20000, "Ok.", [{}])]))

    async def _live(self, request: Request) -> Response:
        recorded, scripted = await self._begin(request)
        if scripted is not None:
            return scripted
        if (refused := self.refused(request)) is not None:
            return refused
        tasks = recorded.body
        if not isinstance(tasks, list) or len(tasks) != 1 or not isinstance(tasks[0], dict):
            return JSONResponse(envelope([dfs_task(40000, "You can set only one task at a time.")]))
        prompt = tasks[0].get("keyword")
        if not isinstance(prompt, str) or not prompt:
            return JSONResponse(envelope([dfs_task(40501, "Invalid Field: 'keyword'.")]))
        items: list[dict[str, Any]] = []
        if prompt not in self.none and tasks[0].get("load_async_ai_overview"):
            items.append(self.overview(prompt))
        items.append(
            {
                "type": "organic",
                "rank_group": 1,
                "rank_absolute": len(items) + 1,
                "domain": "result.example",
                "url": "https://result.example/",
                "title": "A result",
            }
        )
        result = {
            "keyword": prompt,
            "type": "organic",
            "se_domain": "google.com",
            "location_code": 2840,
            "language_code": "en",
            "items_count": len(items),
            "items": items,
        }
        return JSONResponse(envelope([dfs_task(20000, "Ok.", [result])]))

    def overview(self, prompt: str) -> dict[str, Any]:
        canned = self.canned(prompt)
        references = [
            {
                "type": "ai_overview_reference",
                "source": url.split("/")[2],
                "domain": url.split("/")[2],
                "url": url,
                "title": title,
                "text": "...",
            }
            for url, title in canned.sources
        ]
        return {
            "type": "ai_overview",
            "rank_group": 1,
            "rank_absolute": 1,
            "position": "left",
            "markdown": canned.text,
            "items": [
                {
                    "type": "ai_overview_element",
                    "position": "left",
                    "title": None,
                    "text": canned.text,
                    "references": references,
                }
            ],
            "references": references,
            "asynchronous_ai_overview": True,
        }
