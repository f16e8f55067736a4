"""The answer-engine adapters (Gemini grounding, Anthropic web search, Google's AI Overviews
through SerpApi and DataForSEO) against their fakes on loopback sockets: the answers read,
each provider's error bodies mapped, rate limits waited out, keys never in an error."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from seojobs.providers.ai_overview import DataForSeoOverview, SerpApiOverview
from seojobs.providers.ai_search import Answer
from seojobs.providers.anthropic_search import MAX_CONTINUATIONS, AnthropicSearch
from seojobs.providers.base import (
    AUTH_FAILED,
    QUOTA_EXHAUSTED,
    REJECTED,
    UPSTREAM_ERROR,
    ProviderError,
)
from seojobs.providers.gemini import GeminiSearch
from seojobs.settings import Settings
from tests.fakes.ai_search import Canned
from tests.fakes.answer_engines import (
    ANTHROPIC_KEY,
    GEMINI_KEY,
    FakeAnthropic,
    FakeDataForSeoOverview,
    FakeGemini,
    FakeSerpApiOverview,
    anthropic_error,
    gemini_rate_limited,
)
from tests.fakes.serp import RecordingSleep, Reply, dfs_task, envelope
from tests.fakes.server import serve

HOSE = "What is the best garden hose?"
SOURCES = [
    ("https://review.example/best-hoses", "Best hoses 2026"),
    ("https://shop.acme.example/hoses", "Acme hoses"),
]


@dataclass
class Engines:
    gemini: FakeGemini
    anthropic: FakeAnthropic
    serpapi: FakeSerpApiOverview
    dataforseo: FakeDataForSeoOverview
    bases: dict[str, str]

    def settings(self, **overrides: Any) -> Settings:
        values: dict[str, Any] = {
            "database_url": "sqlite://",
            "gemini_api_key": GEMINI_KEY,
            "gemini_base_url": self.bases["gemini"] + "/v1beta",
            "anthropic_api_key": ANTHROPIC_KEY,
            "anthropic_base_url": self.bases["anthropic"],
            "serpapi_key": self.serpapi.key,
            "serpapi_base_url": self.bases["serpapi"],
            "dataforseo_login": "dfs-login",
            "dataforseo_password": "dfs-password",
            "dataforseo_base_url": self.bases["dataforseo"],
            "provider_retries": 2,
            "provider_backoff": 0.0,
        }
        return Settings(**(values | overrides))


@pytest.fixture(scope="module")
def engines() -> Iterator[Engines]:
    fakes = FakeGemini(), FakeAnthropic(), FakeSerpApiOverview(), FakeDataForSeoOverview()
    for fake in fakes:
        fake.answers[HOSE] = Canned("Acme makes the best garden hose.", SOURCES)
    with (
        serve(fakes[0].app) as gemini,
        serve(fakes[1].app) as anthropic,
        serve(fakes[2].app) as serpapi,
        serve(fakes[3].app) as dataforseo,
    ):
        bases = {
            "gemini": gemini,
            "anthropic": anthropic,
            "serpapi": serpapi,
            "dataforseo": dataforseo,
        }
        yield Engines(*fakes, bases)


ADAPTERS = {
    "gemini": GeminiSearch,
    "anthropic": AnthropicSearch,
    "serpapi": SerpApiOverview,
    "dataforseo": DataForSeoOverview,
}


async def ask(engines: Engines, name: str, sleep: Any = None, **overrides: Any) -> Answer:
    adapter = ADAPTERS[name](engines.settings(**overrides), sleep=sleep or RecordingSleep())
    try:
        answer: Answer = await adapter.ask(HOSE)
        return answer
    finally:
        await adapter.aclose()


async def test_gemini_reads_the_grounding_chunks_in_the_order_the_text_cites_them(
    engines: Engines,
) -> None:
    answer = await ask(engines, "gemini")
    assert answer.text == "Acme makes the best garden hose."
    assert answer.model == "gemini-2.5-flash"
    # The fake's supports cite the last chunk first; each redirect keeps its site.
    assert [c.site for c in answer.citations] == ["shop.acme.example", "review.example"]
    assert all(
        c.url.startswith("https://vertexaisearch.cloud.google.com/") for c in answer.citations
    )
    sent = engines.gemini.requests[-1]
    assert sent.headers["x-goog-api-key"] == GEMINI_KEY
    assert sent.body["tools"] == [{"google_search": {}}]
    assert "key" not in sent.params  # the key travels in a header only


async def test_anthropic_reads_the_cited_search_results(engines: Engines) -> None:
    answer = await ask(engines, "anthropic")
    assert answer.text == "I'll search for that.Acme makes the best garden hose."
    assert [c.url for c in answer.citations] == [url for url, _ in SOURCES]
    sent = engines.anthropic.requests[-1]
    assert sent.headers["anthropic-version"] == "2023-06-01"
    assert sent.body["tools"][0]["type"] == "web_search_20250305"


@pytest.mark.parametrize("reason", ["SAFETY", "PROHIBITED_CONTENT"])
async def test_gemini_answers_a_blocked_prompt_empty_rather_than_failing(
    engines: Engines, reason: str
) -> None:
    """Google's contract: a prompt the content filters block gets no candidates and a
    ``promptFeedback.blockReason``; the prompt had no answer (nothing cited, nothing named),
    which is not the provider failing."""
    engines.gemini.blocked[HOSE] = reason
    try:
        answer = await ask(engines, "gemini")
    finally:
        engines.gemini.blocked.clear()
    assert answer == Answer("", (), "gemini-2.5-flash")
    assert engines.gemini.requests[-1].body["contents"][0]["parts"][0]["text"] == HOSE


async def test_anthropic_continues_a_paused_turn_with_its_content_as_is(
    engines: Engines,
) -> None:
    engines.anthropic.pausing.add(HOSE)
    before = len(engines.anthropic.requests)
    try:
        answer = await ask(engines, "anthropic")
    finally:
        engines.anthropic.pausing.clear()
    # The whole turn: the paused part's text, then the rest with its citations.
    assert answer.text == "I'll search for that.Acme makes the best garden hose."
    assert [c.url for c in answer.citations] == [url for url, _ in SOURCES]
    first, second = engines.anthropic.requests[before:]  # one continuation, then done
    assert first.body["messages"] == [{"role": "user", "content": HOSE}]
    user, assistant = second.body["messages"]
    assert user == first.body["messages"][0] and assistant["role"] == "assistant"
    assert [b["type"] for b in assistant["content"]] == ["text", "server_tool_use"]
    assert second.body["tools"] == first.body["tools"]


async def test_a_turn_paused_past_the_continuations_answers_with_its_text_so_far(
    engines: Engines,
) -> None:
    paused = {
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": "Still searching."}],
        "stop_reason": "pause_turn",
    }
    before = len(engines.anthropic.requests)
    engines.anthropic.script(*[Reply(200, paused)] * (MAX_CONTINUATIONS + 1))
    answer = await ask(engines, "anthropic")
    assert len(engines.anthropic.requests) - before == MAX_CONTINUATIONS + 1  # bounded
    assert answer.text == "Still searching." * (MAX_CONTINUATIONS + 1)


@pytest.mark.parametrize("deferred", [False, True])
async def test_serpapi_reads_the_ai_overview_inline_or_by_its_page_token(
    engines: Engines, deferred: bool
) -> None:
    engines.serpapi.deferred = {HOSE} if deferred else set()
    before = len(engines.serpapi.requests)
    try:
        answer = await ask(engines, "serpapi")
    finally:
        engines.serpapi.deferred = set()
    assert answer.text == "Acme makes the best garden hose.\nAlso: see the sources."
    assert [(c.url, c.title) for c in answer.citations] == SOURCES
    engines_asked = [r.params["engine"] for r in engines.serpapi.requests[before:]]
    assert engines_asked == (["google", "google_ai_overview"] if deferred else ["google"])


async def test_the_serp_providers_answer_empty_when_google_shows_no_overview(
    engines: Engines,
) -> None:
    engines.serpapi.none.add(HOSE)
    engines.dataforseo.none.add(HOSE)
    try:
        assert await ask(engines, "serpapi") == Answer("", (), "google-ai-overview")
        assert await ask(engines, "dataforseo") == Answer("", (), "google-ai-overview")
    finally:
        engines.serpapi.none.clear()
        engines.dataforseo.none.clear()


async def test_dataforseo_reads_the_ai_overview_item(engines: Engines) -> None:
    answer = await ask(engines, "dataforseo")
    assert answer.text == "Acme makes the best garden hose."
    assert [c.url for c in answer.citations] == [url for url, _ in SOURCES]
    assert engines.dataforseo.requests[-1].body[0]["load_async_ai_overview"] is True


# (adapter, scripted replies, expected code, least wait asked) -- each provider's documented
# error bodies: rate limits are waited out (their delay honoured), the rest end the call.
RATE_LIMITS = [
    ("gemini", [gemini_rate_limited("7s")], 7.0),
    (
        "gemini",
        [
            Reply(
                503,
                {
                    "error": {
                        "code": 503,
                        "message": "The model is overloaded.",
                        "status": "UNAVAILABLE",
                    }
                },
            )
        ],
        0.0,
    ),
    (
        "anthropic",
        [
            anthropic_error(
                429,
                "rate_limit_error",
                "Number of request tokens has exceeded your per-minute rate limit",
                **{"retry-after": "3"},
            )
        ],
        3.0,
    ),
    ("anthropic", [anthropic_error(529, "overloaded_error", "Overloaded")], 0.0),
    (
        "serpapi",
        [
            Reply(
                429,
                {"error": "Your searches for the month are exhausted. Hourly throughput exceeded."},
                headers={"Retry-After": "2"},
            )
        ],
        2.0,
    ),
    (
        "dataforseo",
        [Reply(200, envelope([dfs_task(40202, "Rate limit per minute exceeded.")]))],
        0.0,
    ),
]


@pytest.mark.parametrize(("name", "replies", "waited"), RATE_LIMITS)
async def test_a_rate_limit_is_waited_out_and_the_prompt_answered(
    engines: Engines, name: str, replies: list[Reply], waited: float
) -> None:
    fake: Any = getattr(engines, name)
    fake.script(*replies)
    sleep = RecordingSleep()
    answer = await ask(engines, name, sleep)
    assert answer.citations, answer
    assert len(sleep.delays) == 1 and sleep.delays[0] >= waited


FAILURES = [
    ("gemini", {"gemini_api_key": "AIzaSyWrong-0123456789"}, [], AUTH_FAILED),
    (
        "gemini",
        {},
        [gemini_rate_limited("30s", "GenerateRequestsPerDayPerProjectPerModel")],
        QUOTA_EXHAUSTED,
    ),
    ("gemini", {"gemini_model": "gemini-0"}, [], REJECTED),
    ("gemini", {}, [gemini_rate_limited("0s")] * 3, UPSTREAM_ERROR),
    ("anthropic", {"anthropic_api_key": "sk-ant-api03-wrong"}, [], AUTH_FAILED),
    (
        "anthropic",
        {},
        [
            anthropic_error(
                403,
                "permission_error",
                "Your API key does not have permission to use the specified resource.",
            )
        ],
        AUTH_FAILED,
    ),
    (
        "anthropic",
        {},
        [
            anthropic_error(
                400,
                "invalid_request_error",
                "Your credit balance is too "
                "low to access the Anthropic API. Please go to Plans & "
                "Billing to upgrade or purchase credits.",
            )
        ],
        QUOTA_EXHAUSTED,
    ),
    ("anthropic", {"anthropic_model": "claude-0"}, [], REJECTED),
    ("anthropic", {}, [anthropic_error(529, "overloaded_error", "Overloaded")] * 3, UPSTREAM_ERROR),
    ("serpapi", {"serpapi_key": "wrong-serpapi-key"}, [], AUTH_FAILED),
    (
        "serpapi",
        {},
        [Reply(429, {"error": "Your account has run out of searches."})],
        QUOTA_EXHAUSTED,
    ),
    ("dataforseo", {"dataforseo_password": "wrong"}, [], AUTH_FAILED),
    ("dataforseo", {}, [Reply(402, envelope([], 40200))], QUOTA_EXHAUSTED),
]


@pytest.mark.parametrize(("name", "overrides", "replies", "code"), FAILURES)
async def test_provider_errors_are_mapped_and_never_show_a_key(
    engines: Engines, name: str, overrides: dict[str, Any], replies: list[Reply], code: str
) -> None:
    fake: Any = getattr(engines, name)
    fake.script(*replies)
    with pytest.raises(ProviderError) as raised:
        await ask(engines, name, **overrides)
    assert raised.value.code == code, raised.value.message
    assert raised.value.fatal == (code != UPSTREAM_ERROR)
    secrets = [v for k, v in overrides.items() if k.endswith(("_key", "_password"))]
    keys = [GEMINI_KEY, ANTHROPIC_KEY, engines.serpapi.key, *secrets]
    for key in keys:
        assert key not in raised.value.message
    with fake._lock:
        fake._script.clear()  # a test whose call ended early leaves nothing for the next


@pytest.mark.parametrize("name", list(ADAPTERS))
async def test_seojobs_providers_checks_each_key_for_free(engines: Engines, name: str) -> None:
    adapter = ADAPTERS[name](engines.settings(), sleep=RecordingSleep())
    try:
        said = await adapter.verify()
    finally:
        await adapter.aclose()
    assert said
