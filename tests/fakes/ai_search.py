"""Fake AI-search APIs speaking their documented wire formats: the OpenAI Responses API
(``POST /v1/responses`` with the ``web_search`` tool) and Perplexity Sonar (``POST
/chat/completions``).

Both answer a prompt from ``answers`` (a :class:`Canned` text and the sources it cites;
``default`` for any other prompt), check the Bearer key (a wrong one gets the provider's 401
body) and the request's shape (400 with the provider's error body), and record every request.
``script(Reply(...))`` answers the next requests with errors first (the scripting core of
``tests.fakes.serp``), e.g. ``Reply(429, headers={"Retry-After": "0"})``; ``failing[prompt]``
answers every request for that prompt with one.
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass, field
from typing import Any

from fastapi import Request, Response
from fastapi.responses import JSONResponse

from tests.fakes.serp import Reply, ScriptedFake

OPENAI_KEY = "sk-test-openai-0123456789"
PERPLEXITY_KEY = "pplx-test-0123456789"


@dataclass
class Canned:
    text: str
    sources: list[tuple[str, str]] = field(default_factory=list)  # (url, title), cited in order


def openai_error(message: str, kind: str, code: str | None) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def perplexity_error(message: str, kind: str, code: int) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "code": code}}


class _AiFake(ScriptedFake):
    def __init__(self, key: str) -> None:
        super().__init__()
        self.key = key
        self.answers: dict[str, Canned] = {}
        self.default = Canned("I could not find anything about that.")
        self.failing: dict[str, Reply] = {}  # a prompt always answered so (after the key check)
        # A prompt whose requests wait until its event is set (a test's call in flight).
        self.gates: dict[str, threading.Event] = {}

    def forget(self) -> None:
        super().forget()
        self.failing.clear()
        self.gates.clear()

    def canned(self, prompt: str) -> Canned:
        return self.answers.get(prompt, self.default)

    async def begin(self, request: Request) -> tuple[Any, Response | None]:
        recorded, scripted = await self._begin(request)
        gate = self.gates.get(self.prompt_of(recorded.body))
        if gate is not None:
            await asyncio.to_thread(gate.wait, 60)
        if scripted is not None:
            return recorded.body, scripted
        if request.headers.get("authorization") != f"Bearer {self.key}":
            return recorded.body, self.unauthorized(request.headers.get("authorization", ""))
        failing = self.failing.get(self.prompt_of(recorded.body))
        return recorded.body, failing.response() if failing is not None else None

    @staticmethod
    def prompt_of(body: Any) -> str:
        if not isinstance(body, dict):
            return ""
        if isinstance(body.get("input"), str):
            return str(body["input"])
        messages = body.get("messages")
        last = messages[-1] if isinstance(messages, list) and messages else None
        return str(last.get("content", "")) if isinstance(last, dict) else ""

    def unauthorized(self, sent: str) -> Response:
        raise NotImplementedError


class FakeOpenAi(_AiFake):
    """``POST /v1/responses`` (the base URL is ``…/v1``, as ``OPENAI_BASE_URL`` is)."""

    model = "gpt-5-2025-08-07"

    def __init__(self, key: str = OPENAI_KEY) -> None:
        super().__init__(key)
        self.app.add_api_route("/v1/responses", self._responses, methods=["POST"])
        self.app.add_api_route("/v1/models/{model}", self._model, methods=["GET"])

    def unauthorized(self, sent: str) -> Response:
        shown = sent.removeprefix("Bearer ")
        masked = f"{shown[:3]}*****{shown[-4:]}" if len(shown) > 8 else shown
        message = (
            f"Incorrect API key provided: {masked}. You can find your API key at "
            "https://platform.openai.com/account/api-keys."
        )
        body = openai_error(message, "invalid_request_error", "invalid_api_key")
        return JSONResponse(body, status_code=401)

    async def _model(self, request: Request, model: str) -> Response:
        """Retrieve a model: what ``seojobs providers`` asks to check the key."""
        _body, refused = await self.begin(request)
        if refused is not None:
            return refused
        if model == "no-such-model":
            message = f"The model '{model}' does not exist"
            error = openai_error(message, "invalid_request_error", "model_not_found")
            return JSONResponse(error, status_code=404)
        return JSONResponse({"id": model, "object": "model", "created": 1754425777,
                             "owned_by": "system"})  # fmt: skip

    async def _responses(self, request: Request) -> Response:
        body, refused = await self.begin(request)
        if refused is not None:
            return refused
        if not isinstance(body, dict) or not isinstance(body.get("input"), str):
            error = openai_error(
                "Missing required parameter: 'input'.", "invalid_request_error", None
            )
            return JSONResponse(error, status_code=400)
        if not isinstance(body.get("model"), str) or body["model"] == "no-such-model":
            error = openai_error(
                f"The requested model '{body.get('model')}' does not exist.",
                "invalid_request_error",
                "model_not_found",
            )
            return JSONResponse(error, status_code=400)
        return JSONResponse(self.response(body["input"], body.get("tools") or []))

    def response(self, prompt: str, tools: list[Any]) -> dict[str, Any]:
        canned = self.canned(prompt)
        searched = {"type": "web_search"} in tools
        text, annotations = canned.text, []
        for url, title in canned.sources if searched else []:
            link = f"{url}{'&' if '?' in url else '?'}utm_source=openai"
            cite = f" ([{title}]({link}))"
            annotations.append(
                {
                    "type": "url_citation",
                    "start_index": len(text) + 1,
                    "end_index": len(text) + len(cite),
                    "url": link,
                    "title": title,
                }
            )
            text += cite
        output: list[dict[str, Any]] = [
            {"id": "rs_1", "type": "reasoning", "summary": []},
            {
                "id": "ws_1",
                "type": "web_search_call",
                "status": "completed",
                "action": {"type": "search", "query": prompt},
            },
            {
                "id": "msg_1",
                "type": "message",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": text, "annotations": annotations}],
            },
        ]
        return {
            "id": f"resp_{len(self.requests)}",
            "object": "response",
            "created_at": 1764806400,
            "status": "completed",
            "error": None,
            "model": self.model,
            "output": output if searched else output[2:],
            "tools": tools,
            "usage": {"input_tokens": 12, "output_tokens": 80, "total_tokens": 92},
        }


class FakePerplexity(_AiFake):
    """``POST /chat/completions`` (OpenAI-compatible, with ``citations`` and
    ``search_results``)."""

    def __init__(self, key: str = PERPLEXITY_KEY) -> None:
        super().__init__(key)
        self.app.add_api_route("/chat/completions", self._completions, methods=["POST"])

    def unauthorized(self, sent: str) -> Response:
        body = perplexity_error("Invalid API key provided.", "invalid_api_key", 401)
        return JSONResponse(body, status_code=401)

    async def _completions(self, request: Request) -> Response:
        body, refused = await self.begin(request)
        if refused is not None:
            return refused
        messages = body.get("messages") if isinstance(body, dict) else None
        if not isinstance(messages, list) or not messages or not isinstance(body.get("model"), str):
            error = perplexity_error("Invalid request: model and messages are required.",
                                     "invalid_request", 400)  # fmt: skip
            return JSONResponse(error, status_code=400)
        prompt = str(messages[-1].get("content", ""))
        return JSONResponse(self.completion(prompt, body["model"]))

    def completion(self, prompt: str, model: str) -> dict[str, Any]:
        canned = self.canned(prompt)
        marks = "".join(f"[{n}]" for n in range(1, len(canned.sources) + 1))
        return {
            "id": f"pplx-{len(self.requests)}",
            "model": model,
            "created": 1764806400,
            "object": "chat.completion",
            "usage": {"prompt_tokens": 9, "completion_tokens": 60, "total_tokens": 69},
            "citations": [url for url, _title in canned.sources],
            "search_results": [
                {"title": title, "url": url, "date": "2026-11-20"} for url, title in canned.sources
            ],
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": f"{canned.text} {marks}".strip()},
                }
            ],
        }
