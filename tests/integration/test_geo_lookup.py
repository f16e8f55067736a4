"""``geo_lookup`` end to end on both stores: the HTTP API starts a job (or a schedule does),
the in-process worker asks a local fake of the OpenAI Responses API or Perplexity Sonar
(their documented wire formats, error bodies included), and ``GET /v1/projects/{id}/geo``
and ``/geo/history`` read what was collected."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from seojobs.cli import app as cli
from tests.api_helpers import Api, api, assert_problem, error_fields, owned, shared_api, stored
from tests.conftest import make_settings
from tests.fakes.ai_search import (
    OPENAI_KEY,
    PERPLEXITY_KEY,
    Canned,
    FakeOpenAi,
    FakePerplexity,
    openai_error,
)
from tests.fakes.serp import Reply
from tests.fakes.server import serve
from tests.waiting import wait_until

HOSE = "What is the best garden hose?"
REEL = "Which hose reel should I buy?"
SOURCES = [
    ("https://review.example/best-hoses", "Best hoses 2026"),
    ("https://shop.acme.example/hoses", "Acme hoses"),
]
LOOKUP = {"prompts": [HOSE, REEL], "brand": ["Acme"], "domain": "acme.example"}


@dataclass
class Fakes:
    openai: FakeOpenAi
    perplexity: FakePerplexity
    openai_base: str
    perplexity_base: str

    def settings(self, store_url: str, **overrides: Any) -> Any:
        values: dict[str, Any] = {
            "openai_api_key": OPENAI_KEY,
            "openai_base_url": self.openai_base + "/v1",
            "openai_model": "gpt-5",
            "perplexity_api_key": PERPLEXITY_KEY,
            "perplexity_base_url": self.perplexity_base,
            "provider_backoff": 0.0,
            "provider_retries": 1,
        }
        return make_settings(store_url, **(values | overrides))


def _plant(fake: FakeOpenAi | FakePerplexity) -> None:
    """The fake's answers as the tests expect them (a test may change them)."""
    fake.answers.clear()
    fake.answers[HOSE] = Canned("Acme makes the best garden hose; ACME hoses last.", SOURCES)
    fake.answers[REEL] = Canned("Try the Zeta reel.", SOURCES[:1])


def _fakes() -> Iterator[Fakes]:
    openai, sonar = FakeOpenAi(), FakePerplexity()
    for fake in (openai, sonar):
        _plant(fake)
    with serve(openai.app) as openai_base, serve(sonar.app) as sonar_base:
        yield Fakes(openai, sonar, openai_base, sonar_base)


@pytest.fixture
def fakes() -> Iterator[Fakes]:
    yield from _fakes()


@pytest.fixture(scope="module")
def answering_app(module_store: str, request: pytest.FixtureRequest) -> Iterator[tuple[Fakes, Api]]:
    """Fakes of their own and an app (with its worker) with the fakes' settings, one per store
    for the whole module."""
    for fakes in _fakes():
        with shared_api(module_store, request, run_worker=True, settings_for=fakes.settings) as app:
            yield fakes, app


@pytest.fixture
def answering(answering_app: tuple[Fakes, Api]) -> Iterator[tuple[Fakes, httpx.Client, int]]:
    """``answering_app`` for one test: the fakes with no request recorded, reply scripted or
    prompt failing, their answers planted again, and a project of the test's own user. The
    tests that need no setting of their own share it; each of their jobs has ended when the
    test ends."""
    fakes, shared = answering_app
    for fake in (fakes.openai, fakes.perplexity):
        fake.forget()
        _plant(fake)
    for app in owned(shared):
        client = app.client(app.account("alice"))
        project = client.post("/v1/projects", json={"name": "acme"}).json()["data"]["id"]
        yield fakes, client, project


@contextlib.contextmanager
def started(settings: Any) -> Iterator[tuple[Api, httpx.Client, int]]:
    with api(settings, run_worker=True) as app:
        client = app.client(app.account("alice"))
        project = client.post("/v1/projects", json={"name": "acme"}).json()["data"]["id"]
        yield app, client, project


def ended(client: httpx.Client, job_id: int) -> dict[str, Any]:
    def final() -> dict[str, Any] | None:
        job: dict[str, Any] = client.get(f"/v1/jobs/{job_id}").json()["data"]
        return job if job["status"] in ("completed", "failed") else None

    return wait_until(final, timeout=60)


def lookup(client: httpx.Client, project: int, **params: Any) -> dict[str, Any]:
    """Start a GEO lookup and wait until it has ended; its job."""
    answer = client.post(
        f"/v1/projects/{project}/jobs", json={"type": "geo_lookup", "params": params}
    )
    assert answer.status_code == 202, answer.text
    return ended(client, answer.json()["data"]["id"])


def geo(client: httpx.Client, project: int, path: str = "", **query: Any) -> httpx.Response:
    return client.get(f"/v1/projects/{project}/geo{path}", params=query)


def rows(answer: httpx.Response) -> dict[str, dict[str, Any]]:
    assert answer.status_code == 200, answer.text
    return {r["prompt"]: r for r in answer.json()["data"]}


def test_a_lookup_is_collected_served_by_geo_and_a_changed_answer_keeps_history(
    answering_app: tuple[Fakes, Api], answering: tuple[Fakes, httpx.Client, int]
) -> None:
    fakes, client, project = answering
    app = answering_app[1]  # stored(): no other test runs while this one does
    assert_problem(geo(client, project), 404)
    assert_problem(geo(client, project, "/history", prompt=HOSE), 404)
    job = lookup(client, project, **LOOKUP, provider="openai", repeats=2)
    assert job["status"] == "completed", job
    assert job["result"] == {
        "provider": "openai",
        "prompts": 2,
        "answered": 2,
        "cited": 1,
        "mentioned": 1,
        "share_of_voice": 1.0,  # no competitors: all the tracked voice is its own
    }
    first = rows(geo(client, project))
    jobs = stored(app)["jobs"]
    # The answer changes: the second run no longer cites the site, names the brand once.
    fakes.openai.answers[HOSE] = Canned("Acme is fine, but Zeta is better.", SOURCES[:1])
    second_job = lookup(client, project, **LOOKUP, provider="openai")
    second = rows(geo(client, project))
    history = geo(client, project, "/history", prompt=f"  {HOSE} ")
    usage = {q["quota"]: q for q in client.get("/v1/usage").json()["data"]}
    job_text = client.get(f"/v1/jobs/{job['id']}").text
    items_text = client.get(f"/v1/jobs/{job['id']}/items").text
    assert stored(app)["jobs"] == jobs + 1  # no read started a job
    # Each call is the documented request with the Bearer key.
    assert len(fakes.openai.requests) == 2 * 2 + 2
    call = fakes.openai.requests[0]
    assert (call.path, call.headers["authorization"]) == ("/v1/responses", f"Bearer {OPENAI_KEY}")
    assert call.body == {
        "model": "gpt-5",
        "input": call.body["input"],
        "tools": [{"type": "web_search"}],
    }
    assert {r.body["input"] for r in fakes.openai.requests} == {HOSE, REEL}
    hose, reel = first[HOSE], first[REEL]
    assert (hose["job_id"], hose["provider"], hose["model"]) == (
        job["id"],
        "openai",
        "gpt-5-2025-08-07",
    )
    assert (hose["domain_cited"], hose["citation_position"]) == (True, 2)
    # Per answer: twice in the text and once as a link's title ("[Acme hoses](…)"), never in
    # a URL (shop.acme.example).
    assert (hose["brand_mentioned"], hose["mention_count"]) == (True, 6)
    assert (hose["cited_share"], hose["mentioned_share"], hose["repeats"]) == (1.0, 1.0, 2)
    assert hose["collected_at"] and hose["checked_at"] and len(hose["answers"]) == 2
    [review, shop] = hose["answers"][0]["citations"]
    assert shop == {"url": "https://shop.acme.example/hoses", "domain": "shop.acme.example",
                    "title": "Acme hoses"}  # fmt: skip
    assert review["domain"] == "review.example"
    assert (reel["domain_cited"], reel["citation_position"], reel["brand_mentioned"]) == (
        False,
        None,
        False,
    )
    assert (reel["cited_share"], reel["mentioned_share"]) == (0.0, 0.0)
    # The second run replaced what /geo serves; the history has both, newest first.
    assert second[HOSE]["job_id"] == second_job["id"]
    assert (second[HOSE]["domain_cited"], second[HOSE]["mention_count"]) == (False, 1)
    assert [r["job_id"] for r in history.json()["data"]] == [second_job["id"], job["id"]]
    assert usage["ai_lookups"]["used"] == 6 and usage["ai_lookups_month"]["used"] == 6
    for text in (job_text, items_text):  # keys are secrets
        assert OPENAI_KEY not in text and PERPLEXITY_KEY not in text


def test_geo_filters_and_pages_and_perplexity_answers(
    answering: tuple[Fakes, httpx.Client, int],
) -> None:
    fakes, client, project = answering
    job = lookup(client, project, **LOOKUP, provider="perplexity", repeats=3)
    assert job["status"] == "completed", job
    lookup(client, project, prompts=[HOSE], domain="acme.example", provider="openai")
    both = geo(client, project).json()["data"]
    cited = geo(client, project, cited="true").json()["data"]
    uncited = rows(geo(client, project, cited="false", provider="perplexity"))
    sonar = geo(client, project, provider="perplexity").json()["data"]
    pages: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        page = geo(client, project, limit=2, **({"cursor": cursor} if cursor else {})).json()
        pages += page["data"]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    sonar_history = geo(client, project, "/history", provider="perplexity").json()["data"]
    assert error_fields(geo(client, project, cited="maybe")) == ["cited"]
    assert error_fields(geo(client, project, provider="bard")) == ["provider"]
    assert error_fields(geo(client, project, cursor="x")) == ["cursor"]
    assert error_fields(geo(client, project, "/history", prompt="a\nb")) == ["prompt"]
    assert len(both) == 3 and pages == both  # pages of two cover the list once
    assert {(r["provider"], r["prompt"]) for r in cited} == {
        ("perplexity", HOSE),
        ("openai", HOSE),
    }
    assert list(uncited) == [REEL]
    assert {r["provider"] for r in sonar} == {"perplexity"} and len(sonar) == 2
    assert {r["provider"] for r in sonar_history} == {"perplexity"}
    # Sonar: the Bearer key, the model, one user message; citations from citations[].
    call = fakes.perplexity.requests[0]
    assert (call.path, call.headers["authorization"]) == (
        "/chat/completions",
        f"Bearer {PERPLEXITY_KEY}",
    )
    assert call.body["model"] == "sonar" and call.body["messages"][0]["role"] == "user"
    hose = next(r for r in sonar if r["prompt"] == HOSE)
    assert (hose["model"], hose["repeats"], hose["citation_position"]) == ("sonar", 3, 2)
    assert [c["title"] for c in hose["answers"][0]["citations"]] == [
        "Best hoses 2026",
        "Acme hoses",
    ]
    assert len(fakes.perplexity.requests) == 2 * 3


RATE_LIMITED = Reply(429, openai_error("Rate limit reached.", "requests", "rate_limit_exceeded"),
                     headers={"Retry-After": "0"})  # fmt: skip
FAILURES = [
    # (the replies, the job's status and error code, requests made): two prompts of one
    # repeat asked at once (so a failure ending the job meets the other's call in flight),
    # one retry allowed.
    ([Reply(401, openai_error("Incorrect API key provided: sk-tes*****6789.",
                              "invalid_request_error", "invalid_api_key"))],
     "failed", "provider_auth_failed", 2),
    ([Reply(429, openai_error("You exceeded your current quota.", "insufficient_quota",
                              "insufficient_quota"))], "failed", "provider_quota_exhausted", 2),
    ([Reply(400, openai_error("The requested model does not exist.", "invalid_request_error",
                              "model_not_found"))], "failed", "provider_rejected", 2),
    ([RATE_LIMITED], "completed", None, 3),  # retried, then answered
    ([Reply(500)] * 4, "failed", "upstream_error", 4),  # each prompt: a call and a retry
    ([Reply(200, text="<html>busy</html>")] * 2, "failed", "malformed_response", 2),
    ([Reply(200, {"output": [{"type": "message", "content": "x"}]})] * 2, "failed",
     "malformed_response", 2),
]  # fmt: skip


@pytest.mark.stores("sqlite")
@pytest.mark.parametrize(("replies", "status", "code", "calls"), FAILURES)
def test_provider_failures_end_the_job_or_its_prompt(
    answering: tuple[Fakes, httpx.Client, int],
    replies: list[Reply],
    status: str,
    code: str | None,
    calls: int,
) -> None:
    fakes, client, project = answering
    fakes.openai.script(*replies)
    job = lookup(client, project, **LOOKUP, provider="openai")  # named: no fallback
    job_text = client.get(f"/v1/jobs/{job['id']}").text
    served = geo(client, project)
    assert job["status"] == status, job
    assert (job["error"] or {}).get("code") == code
    # A provider down (a refused key, no quota) is not asked again: a prompt started after the
    # first failed makes no call.
    assert 1 <= len(fakes.openai.requests) <= calls
    assert "sk-tes" not in job_text and OPENAI_KEY not in job_text
    assert served.status_code == (200 if status == "completed" else 404)


@pytest.mark.stores("sqlite")
def test_a_prompt_that_keeps_failing_fails_its_item_and_the_others_are_served(
    answering: tuple[Fakes, httpx.Client, int],
) -> None:
    fakes, client, project = answering
    fakes.openai.failing[HOSE] = Reply(503, openai_error("Overloaded.", "server_error", None))
    job = lookup(client, project, prompts=[HOSE, REEL], domain="acme.example",
                 provider="openai")  # fmt: skip
    items = client.get(f"/v1/jobs/{job['id']}/items").json()["data"]
    served = rows(geo(client, project))
    assert job["status"] == "completed" and job["items_failed"] == 1, job
    failed = [i for i in items if i["status"] == "failed"]
    assert [(i["input"], i["error"]["code"]) for i in failed] == [(HOSE, "upstream_error")]
    assert list(served) == [REEL]
    assert [r.body["input"] for r in fakes.openai.requests].count(HOSE) == 2  # with its retry


@pytest.mark.stores("sqlite")
@pytest.mark.parametrize(
    ("reply", "code", "calls"),
    [
        (Reply(503, openai_error("Overloaded.", "server_error", None)), "upstream_error", 4),
        (Reply(401, openai_error("Incorrect API key provided: sk-tes*****6789.",
                                 "invalid_request_error", "invalid_api_key")),
         "provider_auth_failed", 2),  # the two prompts are asked at once
    ],
)  # fmt: skip
def test_a_provider_failing_hands_every_prompt_to_the_next(
    answering: tuple[Fakes, httpx.Client, int], reply: Reply, code: str, calls: int
) -> None:
    """OpenAI answers 503 (after its retry) or 401 to every call: Perplexity, next in order,
    answers every prompt, and each names both (issue 29.6)."""
    fakes, client, project = answering
    fakes.openai.script(*[reply] * 4)
    job = lookup(client, project, **LOOKUP, repeats=2)
    served = rows(geo(client, project))
    assert job["status"] == "completed" and job["items_failed"] == 0, job
    assert set(served) == {HOSE, REEL}
    assert {r["provider"] for r in served.values()} == {"perplexity"}
    assert {(f["provider"], f["code"]) for r in served.values() for f in r["failed_over"]} == {
        ("openai", code)
    }
    assert len(fakes.openai.requests) <= calls  # a refused key is not asked again in the job
    assert len(fakes.perplexity.requests) == 4  # two prompts, two repeats each


def test_unconfigured_providers_and_bad_params_are_refused_naming_the_field(
    store_url: str, fakes: Fakes
) -> None:
    bare = fakes.settings(store_url, openai_api_key=None, perplexity_api_key=None)
    with started(bare) as (app, client, project):
        before = stored(app)
        url = f"/v1/projects/{project}/jobs"

        def post(params: dict[str, Any]) -> httpx.Response:
            return client.post(url, json={"type": "geo_lookup", "params": params})

        problem = assert_problem(post(LOOKUP), 422)
        assert problem["type"].endswith("/provider_not_configured")
        [error] = problem["errors"]
        assert error["field"] == "params.provider"
        assert "SEOJOBS_OPENAI_API_KEY" in error["message"]
        assert "SEOJOBS_PERPLEXITY_API_KEY" in error["message"]
        chosen = assert_problem(post({**LOOKUP, "provider": "perplexity"}), 422)
        assert "perplexity is not configured" in chosen["detail"]
        cases = [
            ({"brand": ["Acme"]}, "params.prompts"),
            ({"prompts": [HOSE]}, "params.brand"),
            ({"prompts": [" "], "brand": ["Acme"]}, "params.prompts[0]"),
            ({**LOOKUP, "domain": "https://acme.example/"}, "params.domain"),
            ({**LOOKUP, "repeats": 6}, "params.repeats"),
            ({**LOOKUP, "provider": "bard"}, "params.provider"),
        ]
        for params, field in cases:
            assert field in error_fields(post(params)), params
        assert stored(app) == before


def test_lookups_over_the_daily_quota_fail_and_call_no_provider(
    sqlite_url: str, fakes: Fakes
) -> None:
    settings = fakes.settings(sqlite_url, quota_ai_lookups_daily=4)
    with started(settings) as (_app, client, project):
        first = lookup(client, project, **LOOKUP, repeats=2)  # 2 prompts x 2 calls
        second = lookup(client, project, prompts=[HOSE], domain="acme.example")
    assert first["status"] == "completed"
    assert (second["status"], second["error"]["code"]) == ("failed", "quota_exceeded")
    assert "daily ai_lookups quota" in second["error"]["message"]
    assert len(fakes.openai.requests) == 4


def test_a_schedule_fires_lookups_with_their_items_until_the_quota_is_spent(
    store_url: str, fakes: Fakes
) -> None:
    settings = fakes.settings(store_url, schedule_min_interval_seconds=1, quota_ai_lookups_daily=2)
    with started(settings) as (_app, client, project):
        made = client.post(
            f"/v1/projects/{project}/schedules",
            json={"name": "geo", "type": "geo_lookup", "params": LOOKUP, "every_seconds": 1},
        )
        assert made.status_code == 201, made.text

        def two_final() -> list[dict[str, Any]] | None:
            found = client.get(f"/v1/projects/{project}/jobs").json()["data"]
            final = [j for j in found if j["status"] in ("completed", "failed")]
            return final if len(final) >= 2 else None

        found = wait_until(two_final, timeout=60)
        client.delete(f"/v1/projects/{project}/schedules/{made.json()['data']['id']}")
        served = rows(geo(client, project))
    first, second = sorted(found, key=lambda j: j["id"])[:2]
    assert (first["status"], first["type"], first["items_total"]) == ("completed", "geo_lookup", 2)
    assert (second["status"], second["error"]["code"]) == ("failed", "quota_exceeded")
    assert {r["job_id"] for r in served.values()} == {first["id"]} and len(served) == 2
    assert len(fakes.openai.requests) == 2  # only the first job reached the provider


@pytest.mark.parametrize("provider", ["openai", "perplexity"])
def test_a_wrong_key_fails_the_job_and_is_never_shown(
    sqlite_url: str, fakes: Fakes, provider: str
) -> None:
    wrong = {"openai": "sk-wrong-key-qzxjv", "perplexity": "pplx-wrong-key-qzxjv"}[provider]
    settings = fakes.settings(sqlite_url, **{f"{provider}_api_key": wrong})
    with started(settings) as (_app, client, project):
        job = lookup(client, project, prompts=[HOSE], domain="acme.example", provider=provider)
        job_text = client.get(f"/v1/jobs/{job['id']}").text
    assert (job["status"], job["error"]["code"]) == ("failed", "provider_auth_failed")
    assert f"{provider} refused the credentials (401)" in job["error"]["message"]
    # Not even its tail (letters no id or timestamp of the job holds: "9999" was once in
    # a created_at's microseconds).
    assert "wrong" not in job_text and "qzxj" not in job_text
    fake = fakes.openai if provider == "openai" else fakes.perplexity
    assert [r.headers["authorization"] for r in fake.requests] == [f"Bearer {wrong}"]


def test_seojobs_providers_lists_ai_search_and_checks_each_key(
    tmp_path: Path, fakes: Fakes
) -> None:
    env = {
        "SEOJOBS_DATABASE_URL": f"sqlite:///{tmp_path / 'unused.db'}",
        "SEOJOBS_OPENAI_API_KEY": OPENAI_KEY,
        "SEOJOBS_OPENAI_BASE_URL": fakes.openai_base + "/v1",
        "SEOJOBS_PERPLEXITY_BASE_URL": fakes.perplexity_base,
        "SEOJOBS_PROVIDER_RETRIES": "0",
    }
    offline = CliRunner().invoke(cli, ["providers", "--offline"], env=env)
    assert offline.exit_code == 0, offline.output
    [row] = [line for line in offline.output.splitlines() if line.startswith("AI search")]
    assert row.split()[2:4] == ["ai", "openai"]
    assert "perplexity (not configured: SEOJOBS_PERPLEXITY_API_KEY)" in row
    assert fakes.openai.requests == []
    checked = CliRunner().invoke(cli, ["providers"], env=env)
    assert checked.exit_code == 0, checked.output
    assert "credential openai: ok: the key may use the model gpt-5" in checked.output
    [call] = fakes.openai.requests  # a model retrieved: no answer billed
    assert (call.method, call.path) == ("GET", "/v1/models/gpt-5")
    wrong = {**env, "SEOJOBS_OPENAI_API_KEY": "sk-wrong-key-qzxjv",
             "SEOJOBS_PERPLEXITY_API_KEY": PERPLEXITY_KEY}  # fmt: skip
    refused = CliRunner().invoke(cli, ["providers"], env=wrong)
    assert refused.exit_code == 1, refused.output
    assert "credential openai: FAILED: openai refused the credentials (401)" in refused.output
    assert "credential perplexity: ok: answered one short question with sonar" in refused.output
    assert "wrong" not in refused.output and "qzxj" not in refused.output
    assert fakes.perplexity.requests[0].body["max_tokens"] == 1
