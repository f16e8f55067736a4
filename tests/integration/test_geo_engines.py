"""``geo_lookup`` with the answer engines of issue 29.5 and the competitors of 29.4, on both
stores: Gemini, Anthropic and Google's AI Overviews (SerpApi, DataForSEO) answer through their
fakes; each competitor's citations and mentions are stored beside the project's with the
brand's order among the tracked names; the share of voice is read at ``geo/share-of-voice``
with its history; a competitor overtaking the project shows in both; the engines that stand
in for each other fall back."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from tests.api_helpers import Api, api, assert_problem
from tests.conftest import make_settings
from tests.dashboard_helpers import sign_in
from tests.fakes.ai_search import Canned
from tests.fakes.answer_engines import (
    ANTHROPIC_KEY,
    GEMINI_KEY,
    FakeAnthropic,
    FakeDataForSeoOverview,
    FakeGemini,
    FakeSerpApiOverview,
)
from tests.fakes.serp import Reply
from tests.fakes.server import serve
from tests.integration.test_dashboard_kind_views import _section, _table
from tests.integration.test_geo_lookup import ended, geo, rows

HOSE = "What is the best garden hose?"
REEL = "Which hose reel should I buy?"
ACME = ("https://shop.acme.example/hoses", "Acme hoses")
ZETA = ("https://www.zeta.example/hoses", "Zeta hoses")
REVIEW = ("https://review.example/best-hoses", "Best hoses 2026")
TRACKED = {
    "domain": "acme.example",
    "brand_names": ["Acme"],
    "competitors": [{"domain": "zeta.example", "names": ["Zeta"]}],
}
ENGINES = ("gemini", "anthropic", "serpapi_ai_overview", "dataforseo_ai_overview")


@dataclass
class Fakes:
    gemini: FakeGemini
    anthropic: FakeAnthropic
    serpapi: FakeSerpApiOverview
    dataforseo: FakeDataForSeoOverview
    bases: dict[str, str]

    def all(self) -> tuple[Any, ...]:
        return self.gemini, self.anthropic, self.serpapi, self.dataforseo

    def answer(self, prompt: str, canned: Canned) -> None:
        for fake in self.all():
            fake.answers[prompt] = canned

    def settings(self, store_url: str, **overrides: Any) -> Any:
        values: dict[str, Any] = {
            "openai_api_key": None,
            "perplexity_api_key": None,
            "gemini_api_key": GEMINI_KEY,
            "gemini_base_url": self.bases["gemini"] + "/v1beta",
            "anthropic_api_key": ANTHROPIC_KEY,
            "anthropic_base_url": self.bases["anthropic"],
            "serpapi_key": self.serpapi.key,
            "serpapi_base_url": self.bases["serpapi"],
            "dataforseo_login": "dfs-login",
            "dataforseo_password": "dfs-password",
            "dataforseo_base_url": self.bases["dataforseo"],
            "provider_backoff": 0.0,
            "provider_retries": 1,
        }
        return make_settings(store_url, **(values | overrides))


@pytest.fixture
def fakes() -> Iterator[Fakes]:
    made = FakeGemini(), FakeAnthropic(), FakeSerpApiOverview(), FakeDataForSeoOverview()
    with (
        serve(made[0].app) as gemini,
        serve(made[1].app) as anthropic,
        serve(made[2].app) as serpapi,
        serve(made[3].app) as dataforseo,
    ):
        bases = {
            "gemini": gemini,
            "anthropic": anthropic,
            "serpapi": serpapi,
            "dataforseo": dataforseo,
        }
        yield Fakes(*made, bases)


@contextlib.contextmanager
def tracked(settings: Any) -> Iterator[tuple[Api, httpx.Client, int, str]]:
    """A project that knows its domain, brand and competitor (issue 29.1): the app, its
    owner's client, the project and the owner's API key."""
    with api(settings, run_worker=True) as app:
        alice = app.account("alice")
        client = app.client(alice)
        answer = client.post("/v1/projects", json={"name": "acme", **TRACKED})
        assert answer.status_code == 201, answer.text
        yield app, client, answer.json()["data"]["id"], alice.key


def lookup(client: httpx.Client, project: int, **params: Any) -> dict[str, Any]:
    """A lookup with the project's defaults (domain, brand, competitors), ended."""
    answer = client.post(
        f"/v1/projects/{project}/jobs", json={"type": "geo_lookup", "params": params}
    )
    assert answer.status_code == 202, answer.text
    return ended(client, answer.json()["data"]["id"])


def voice(client: httpx.Client, project: int, path: str = "") -> list[dict[str, Any]]:
    answer = client.get(f"/v1/projects/{project}/geo/share-of-voice{path}")
    assert answer.status_code == 200, answer.text
    found: list[dict[str, Any]] = answer.json()["data"]
    return found


def test_each_engine_answers_with_each_competitor_beside_the_project(
    store_url: str, fakes: Fakes
) -> None:
    fakes.answer(
        HOSE, Canned("Zeta hoses are fine, but Acme makes the best hose.", [REVIEW, ACME, ZETA])
    )
    with tracked(fakes.settings(store_url)) as (_app, client, project, _key):
        assert_problem(client.get(f"/v1/projects/{project}/geo/share-of-voice"), 404)
        for engine in ENGINES:
            job = lookup(client, project, prompts=[HOSE], provider=engine)
            assert job["status"] == "completed", job
        served = {r["provider"]: r for r in geo(client, project).json()["data"]}
        voices = voice(client, project)
    assert set(served) == set(ENGINES)
    # Gemini's fake cites its chunks last first: Zeta's site before Acme's.
    positions = {
        e: (r["citation_position"], r["competitors"][0]["citation_position"])
        for e, r in served.items()
    }
    assert positions == {
        "gemini": (2, 1),
        "anthropic": (2, 3),
        "serpapi_ai_overview": (2, 3),
        "dataforseo_ai_overview": (2, 3),
    }
    for engine, row in served.items():
        assert (row["domain"], row["brand"]) == ("acme.example", ["Acme"]), engine
        assert row["brand_mentioned"] and row["brand_position"] == 2  # Zeta is named first
        [zeta] = row["competitors"]
        assert zeta | {"citation_position": None} == {
            "domain": "zeta.example",
            "names": ["Zeta"],
            "cited": True,
            "citation_position": None,
            "mentioned": True,
            "mention_count": 1,
            "mention_position": 1,
            "cited_share": 1.0,
            "mentioned_share": 1.0,
        }
        assert row["answers"][0]["competitors"][0]["mention_position"] == 1
    [newest] = voices
    # The last lookup's share counts every engine's latest answer of its prompt.
    assert sorted(newest["providers"]) == sorted(ENGINES)
    assert newest["answers"] == 4 and newest["prompts"] == 1
    [zeta_share] = newest["competitors"]
    assert newest["project"]["domain"] == "acme.example"
    assert round(newest["project"]["share"] + zeta_share["share"], 3) == 1.0
    # Gemini: Acme cited 2nd, named 2nd (0.5 x 1/2 + 0.5 x 1/2); Zeta cited 1st, named 1st.
    assert newest["project"]["by_provider"]["gemini"] == pytest.approx(0.5 / 1.5, abs=1e-4)
    # The others cite Zeta 3rd: Acme 0.5, Zeta 0.5 x 1/3 + 0.5.
    assert newest["project"]["by_provider"]["anthropic"] == pytest.approx(
        0.5 / (0.5 + 2 / 3), abs=1e-4
    )


def test_a_competitor_overtaking_the_project_shows_in_both_and_in_share_of_voice(
    store_url: str, fakes: Fakes
) -> None:
    ahead = Canned("Acme is the best hose. Zeta comes close.", [ACME, REVIEW])
    behind = Canned("Zeta is the best hose now; Acme is still good.", [ZETA, ACME])
    with tracked(fakes.settings(store_url)) as (app, client, project, key):
        fakes.answer(HOSE, ahead)
        fakes.answer(REEL, ahead)
        first = lookup(client, project, prompts=[HOSE, REEL], provider="anthropic")
        fakes.answer(HOSE, behind)
        fakes.answer(REEL, behind)
        second = lookup(client, project, prompts=[HOSE, REEL], provider="anthropic")
        latest = rows(geo(client, project))
        history = geo(client, project, "/history", prompt=HOSE).json()["data"]
        shares = voice(client, project, "/history")
        newest = voice(client, project)
        page = sign_in(app, key).get(f"/dashboard/jobs/{second['id']}/view")
    assert page.status_code == 200, page.text
    shown = {
        (r["Prompt"]): r for r in _table(_section(page.text, "Visibility per prompt and provider"))
    }
    assert shown[HOSE]["Brand named (order)"] == "2"
    assert shown[HOSE]["Competitors"] == "zeta.example: cited #1, named #1"
    voices = {r["Site"]: r for r in _table(_section(page.text, "Share of voice"))}
    assert voices["acme.example (the project)"]["Share of voice"] == "33 %"
    assert voices["zeta.example"]["Share of voice"] == "67 %"
    assert first["status"] == second["status"] == "completed"
    # Acme cited and named first (1.0); Zeta named second (0.5 x 1/2): 1 / 1.25.
    assert first["result"]["share_of_voice"] == 0.8
    now, before = history
    assert (before["citation_position"], before["brand_position"]) == (1, 1)
    assert (
        before["competitors"][0]["citation_position"],
        before["competitors"][0]["mention_position"],
    ) == (None, 2)
    assert (now["citation_position"], now["brand_position"]) == (2, 2)
    assert (
        now["competitors"][0]["citation_position"],
        now["competitors"][0]["mention_position"],
    ) == (1, 1)
    assert latest[HOSE]["job_id"] == second["id"]
    assert [s["job_id"] for s in shares] == [second["id"], first["id"]]
    was, is_ = shares[1], shares[0]
    assert was["project"]["share"] > was["competitors"][0]["share"]
    assert is_["project"]["share"] < is_["competitors"][0]["share"]
    # Acme cited 2nd and named 2nd: 0.5; Zeta first in both: 1.0 -> a third of the voice.
    assert is_["project"]["share"] == pytest.approx(1 / 3, abs=1e-4)
    assert newest == [is_]
    assert second["result"]["share_of_voice"] == is_["project"]["share"]


def test_google_ai_overview_falls_back_from_serpapi_to_dataforseo(
    store_url: str, fakes: Fakes
) -> None:
    fakes.answer(HOSE, Canned("Acme makes the best hose.", [ACME]))
    fakes.answer(REEL, Canned("Zeta makes reels.", [ZETA]))
    # SerpApi answers 503 to every call: each prompt goes to DataForSEO, naming SerpApi.
    fakes.serpapi.script(*[Reply(503, {"error": "Internal server error."})] * 8)
    with tracked(fakes.settings(store_url)) as (_app, client, project, _key):
        job = lookup(client, project, prompts=[HOSE, REEL], provider="google_ai_overview")
        served = rows(geo(client, project))
    assert job["status"] == "completed", job
    assert {r["provider"] for r in served.values()} == {"dataforseo_ai_overview"}
    for row in served.values():
        [failed] = row["failed_over"]
        assert (failed["provider"], failed["code"]) == ("serpapi_ai_overview", "upstream_error")
    assert served[HOSE]["domain_cited"] and not served[REEL]["domain_cited"]
    assert served[REEL]["competitors"][0]["cited"]
    assert len(fakes.serpapi.requests) == 4  # two prompts, each tried twice (one retry)


def test_a_refused_key_hands_every_prompt_to_the_next_engine_and_names_it(
    store_url: str, fakes: Fakes
) -> None:
    fakes.answer(HOSE, Canned("Acme makes the best hose.", [ACME]))
    settings = fakes.settings(store_url, gemini_api_key="AIzaSyWrong-0123456789")
    with tracked(settings) as (_app, client, project, _key):
        job = lookup(client, project, prompts=[HOSE, REEL])  # the order: gemini, anthropic
        served = rows(geo(client, project))
    assert job["status"] == "completed", job
    assert {r["provider"] for r in served.values()} == {"anthropic"}
    for row in served.values():
        [failed] = row["failed_over"]
        assert (failed["provider"], failed["code"]) == ("gemini", "provider_auth_failed")
        assert "AIzaSyWrong" not in failed["message"]
    # A refused key is not asked again in the job (the prompts in flight at once were asked).
    assert len(fakes.gemini.requests) <= 2


def test_an_engine_without_its_keys_is_refused_naming_them(store_url: str, fakes: Fakes) -> None:
    bare = fakes.settings(store_url, serpapi_key=None, dataforseo_login=None, gemini_api_key=None)
    with tracked(bare) as (_app, client, project, _key):
        url = f"/v1/projects/{project}/jobs"
        params = {"prompts": [HOSE], "provider": "google_ai_overview"}
        problem = assert_problem(
            client.post(url, json={"type": "geo_lookup", "params": params}), 422
        )
        assert "SEOJOBS_SERPAPI_KEY" in problem["detail"]
        assert "SEOJOBS_DATAFORSEO_LOGIN" in problem["detail"]
        params = {"prompts": [HOSE], "provider": "gemini"}
        problem = assert_problem(
            client.post(url, json={"type": "geo_lookup", "params": params}), 422
        )
        assert "SEOJOBS_GEMINI_API_KEY" in problem["detail"]
