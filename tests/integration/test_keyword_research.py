"""``keyword_research`` end to end on both stores: the HTTP API starts a job, the in-process
worker asks a local fake of DataForSEO or the Google Ads API (their documented wire formats,
error bodies included), and ``GET /v1/projects/{id}/keywords`` reads what was collected."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from seojobs.cli import app as cli
from seojobs.kinds import load_registry
from seojobs.schemarules import given
from seojobs.services import Services
from seojobs.store.db import Database
from tests.api_helpers import (
    Api,
    api,
    assert_problem,
    error_fields,
    owned,
    shared_api,
    stored,
)
from tests.conftest import make_settings
from tests.fakes.keywords import (
    TABLE,
    FakeDataForSeoKeywords,
    FakeGoogleAds,
    google_error,
    ideas_for,
)
from tests.fakes.serp import Reply, dfs_task, envelope
from tests.fakes.server import serve
from tests.procs import Procs
from tests.waiting import wait_until

SEEDS = ["Garden hose", "pruning shears"]
PAGE = "https://shop.example/hoses"
ADS = {
    "google_ads_developer_token": "dev-token",
    "google_ads_client_id": "client-id",
    "google_ads_client_secret": "client-secret",
    "google_ads_refresh_token": "refresh-token",
    "google_ads_customer_id": "123-456-7890",
}


@dataclass
class Fakes:
    dataforseo: FakeDataForSeoKeywords
    ads: FakeGoogleAds
    dfs_base: str
    ads_base: str

    def settings(self, store_url: str, **overrides: Any) -> Any:
        values: dict[str, Any] = {
            "dataforseo_login": "dfs-login",
            "dataforseo_password": "dfs-password",
            "dataforseo_base_url": self.dfs_base,
            **ADS,
            "google_ads_base_url": self.ads_base,
            "google_ads_token_url": self.ads_base + "/token",
            "provider_backoff": 0.0,
            "provider_retries": 1,
        }
        return make_settings(store_url, **(values | overrides))

    def reset(self) -> None:
        """As new, for the next test of the module: nothing recorded, scripted, granted or
        gated, and the pages planted. (The access tokens it granted stay valid.)"""
        self.dataforseo.forget()
        self.dataforseo.gate = None
        self.dataforseo.pages = {PAGE: ["garden hose", "hose reel", "expandable garden hose"]}
        self.ads.forget()
        self.ads.grants.clear()
        self.ads.pages = {PAGE: ["hose reel", "garden hose"]}


@pytest.fixture(scope="module")
def served_fakes() -> Iterator[Fakes]:
    dataforseo, ads = FakeDataForSeoKeywords(), FakeGoogleAds()
    with serve(dataforseo.app) as dfs_base, serve(ads.app) as ads_base:
        yield Fakes(dataforseo, ads, dfs_base, ads_base)


@pytest.fixture
def fakes(served_fakes: Fakes) -> Fakes:
    """The module's fakes, as new for this test (``Fakes.reset``)."""
    served_fakes.reset()
    return served_fakes


@pytest.fixture(scope="module")
def shared_research(
    module_store: str, served_fakes: Fakes, request: pytest.FixtureRequest
) -> Iterator[Api]:
    """The app with its worker on the fakes' default settings, one per store for the module's
    tests that need no other: each as its own user, and every job a test starts has ended
    before the test does (what one test's fakes record is its own job's)."""
    with shared_api(
        module_store, request, run_worker=True, settings_for=served_fakes.settings
    ) as running:
        yield running


@pytest.fixture
def researching(shared_research: Api, fakes: Fakes) -> Iterator[Api]:
    """``shared_research`` as this test's own (its users and clients), the fakes as new."""
    yield from owned(shared_research)


@contextlib.contextmanager
def started(settings: Any, user: str = "alice") -> Iterator[tuple[Api, httpx.Client, int]]:
    with api(settings, run_worker=True) as app, on(app, user) as (client, project):
        yield app, client, project


@contextlib.contextmanager
def on(app: Api, user: str = "alice") -> Iterator[tuple[httpx.Client, int]]:
    """A new user of ``app`` (its client) and a project of theirs."""
    client = app.client(app.account(user))
    project = client.post("/v1/projects", json={"name": "shop"}).json()["data"]["id"]
    yield client, project


def research(client: httpx.Client, project: int, **params: Any) -> dict[str, Any]:
    """Start a keyword research and wait until it has ended; its job."""
    answer = client.post(
        f"/v1/projects/{project}/jobs", json={"type": "keyword_research", "params": params}
    )
    assert answer.status_code == 202, answer.text
    job_id = answer.json()["data"]["id"]

    def ended() -> dict[str, Any] | None:
        job: dict[str, Any] = client.get(f"/v1/jobs/{job_id}").json()["data"]
        return job if job["status"] in ("completed", "failed") else None

    return wait_until(ended, timeout=60)


def keywords(client: httpx.Client, project: int, **query: Any) -> httpx.Response:
    return client.get(f"/v1/projects/{project}/keywords", params=query)


def test_dataforseo_seeds_give_their_volumes_and_ideas_stored_for_the_project(
    researching: Api, fakes: Fakes
) -> None:
    with on(researching) as (client, project):
        before = keywords(client, project)
        assert_problem(before, 404)
        assert "keyword_research" in before.json()["detail"]
        job = research(client, project, seeds=SEEDS, location=2826, language="en", limit=50)
        assert job["status"] == "completed", job
        answer = keywords(client, project)
    assert answer.status_code == 200, answer.text
    page = answer.json()
    assert (page["job_id"], page["provider"], page["subject"]) == (
        job["id"],
        "dataforseo",
        "2826/en",
    )
    assert page["seeds"] == SEEDS and page["url"] is None and page["collected_at"]
    # Two documented calls, each one task with HTTP Basic auth and the market.
    paths = [r.path for r in fakes.dataforseo.requests]
    assert paths == [
        "/v3/keywords_data/google_ads/search_volume/live",
        "/v3/dataforseo_labs/google/keyword_ideas/live",
    ]
    volume, ideas = (r.body for r in fakes.dataforseo.requests)
    assert volume == [{"keywords": SEEDS, "location_code": 2826, "language_code": "en"}]
    assert ideas == [{**volume[0], "limit": 50}]
    assert all(r.headers["authorization"].startswith("Basic ") for r in fakes.dataforseo.requests)
    # Every keyword of the table sharing a word with a seed, once, highest volume first.
    wanted = {"garden hose", "garden tools", "expandable garden hose", "hose reel",
              "garden design ideas", "raised garden bed", "pruning shears"}  # fmt: skip
    rows = page["data"]
    assert [r["keyword"].lower() for r in rows] == sorted(wanted, key=lambda k: -TABLE[k].volume)
    by_name = {r["keyword"].lower(): r for r in rows}
    assert {k for k, r in by_name.items() if r["seed"]} == {"garden hose", "pruning shears"}
    hose, bed = by_name["garden hose"], by_name["raised garden bed"]
    # A seed's row comes from search volume (competition as its index), an idea's from Labs
    # (competition 0..1, stored as the same 0..100 index).
    assert (hose["search_volume"], hose["cpc"], hose["competition"]) == (12100, 0.85, 100)
    assert (hose["competition_level"], hose["currency"]) == ("HIGH", "USD")
    assert (bed["search_volume"], bed["competition"], bed["competition_level"]) == (
        27100,
        64,
        "MEDIUM",
    )
    assert (bed["low_top_of_page_bid"], bed["high_top_of_page_bid"]) == (0.40, 1.25)
    assert len(bed["monthly_searches"]) == 12
    assert bed["monthly_searches"][0] == {"year": 2026, "month": 1, "search_volume": 27050}


def by_volume(names: list[str]) -> list[str]:
    return sorted(names, key=lambda k: -TABLE[k].volume)


def ideas_of(seed: str) -> list[str]:
    return [k for k in TABLE if seed in k.split()]


def names(answer: httpx.Response) -> list[str]:
    assert answer.status_code == 200, answer.text
    return [r["keyword"] for r in answer.json()["data"]]


def test_reads_sort_filter_and_page_one_collection_and_never_start_a_job(
    researching: Api,
) -> None:
    app = researching
    with on(app) as (client, project):
        research(client, project, seeds=["garden"])
        jobs = stored(app)["jobs"]
        garden = ideas_of("garden")
        assert names(keywords(client, project, sort="keyword")) == sorted(garden)
        assert names(keywords(client, project, sort="cpc")) == sorted(
            garden, key=lambda k: -TABLE[k].cpc
        )
        competition = keywords(client, project, sort="competition").json()["data"]
        assert [r["competition"] for r in competition] == sorted(
            (TABLE[k].index for k in garden), reverse=True
        )
        assert names(keywords(client, project, min_volume=9900)) == [
            "raised garden bed",
            "garden hose",
            "garden tools",
        ]
        # One market at a time: another has nothing yet; codes and case are normalised.
        assert_problem(keywords(client, project, location="2276", language="de"), 404)
        assert names(keywords(client, project, location="02840", language="EN")) == by_volume(
            garden
        )
        # A cursor naming no collection of this project is 404; malformed input 422.
        assert_problem(keywords(client, project, cursor="1"), 404)
        assert error_fields(keywords(client, project, cursor="x")) == ["cursor"]
        assert error_fields(keywords(client, project, sort="bogus")) == ["sort"]
        assert error_fields(keywords(client, project, language="english")) == ["language"]
        assert stored(app)["jobs"] == jobs  # no read started a job
        # Pages of two, through next_cursor, cover the list once and in order, even when a
        # newer research of the market completes between two pages.
        seen: list[str] = []
        cursor: str | None = None
        newer = 0
        while True:
            page = keywords(client, project, limit=2, **({"cursor": cursor} if cursor else {}))
            seen += names(page)
            cursor = page.json()["next_cursor"]
            if cursor is None:
                break
            assert research(client, project, seeds=["hose"])["status"] == "completed"
            newer += 1
        assert seen == by_volume(garden) and newer == 2
        assert names(keywords(client, project)) == by_volume(ideas_of("hose"))
        assert stored(app)["jobs"] == jobs + newer


def test_google_ads_ideas_for_a_page_through_the_refresh_token_flow(
    store_url: str, fakes: Fakes
) -> None:
    settings = fakes.settings(store_url, google_ads_login_customer_id="999-000-1111")
    with started(settings) as (_app, client, project):
        job = research(client, project, url=PAGE, provider="google_ads", language="de")
        assert job["status"] == "completed", job
        page = keywords(client, project, location="2840", language="de").json()
    # One refresh-token grant, then the documented call with its three headers.
    assert fakes.ads.grants == [
        {
            "grant_type": "refresh_token",
            "refresh_token": "refresh-token",
            "client_id": "client-id",
            "client_secret": "client-secret",
        }
    ]
    [call] = fakes.ads.requests
    assert call.path == "/v26/customers/1234567890:generateKeywordIdeas"
    assert call.headers["developer-token"] == "dev-token"
    assert call.headers["login-customer-id"] == "9990001111"
    assert call.headers["authorization"].removeprefix("Bearer ") in fakes.ads.tokens
    assert call.body == {
        "language": "languageConstants/1001",
        "geoTargetConstants": ["geoTargetConstants/2840"],
        "keywordPlanNetwork": "GOOGLE_SEARCH",
        "includeAdultKeywords": False,
        "pageSize": 100,
        "urlSeed": {"url": PAGE},
    }
    assert (page["provider"], page["url"], page["seeds"]) == ("google_ads", PAGE, None)
    # int64 strings read as numbers, micros as units, month names as numbers.
    hose, reel = page["data"]  # by volume
    assert (hose["keyword"], hose["search_volume"], hose["competition"]) == (
        "garden hose",
        12100,
        100,
    )
    assert (hose["cpc"], hose["low_top_of_page_bid"], hose["high_top_of_page_bid"]) == (
        0.85,
        0.42,
        1.37,
    )
    assert (hose["competition_level"], hose["currency"], hose["seed"]) == ("HIGH", None, False)
    assert reel["keyword"] == "hose reel"
    assert hose["monthly_searches"][-1] == {"year": 2025, "month": 12, "search_volume": 12160}


DFS_FAILURES = [
    # (the answer, the job's error code): never retried, the job fails at once.
    (Reply(401, envelope([], 40100)), "provider_auth_failed"),
    (Reply(402, envelope([], 40200)), "provider_quota_exhausted"),
    (Reply(200, envelope([dfs_task(40210, "Insufficient funds.")])), "provider_quota_exhausted"),
    (
        Reply(200, envelope([dfs_task(40501, "Invalid Field: 'location_code'.")])),
        "provider_rejected",
    ),
    (Reply(200, text="<html>maintenance</html>"), "malformed_response"),
]


@pytest.mark.stores("sqlite")
@pytest.mark.parametrize(("reply", "code"), DFS_FAILURES)
def test_dataforseo_errors_fail_the_job_with_a_code_and_no_retry(
    researching: Api, fakes: Fakes, reply: Reply, code: str
) -> None:
    fakes.dataforseo.script(reply)
    with on(researching) as (client, project):
        job = research(client, project, seeds=SEEDS)
        assert (job["status"], job["error"]["code"]) == ("failed", code), job
        assert_problem(keywords(client, project), 404)  # a failed job collected nothing
    assert len(fakes.dataforseo.requests) == 1


def test_a_busy_provider_is_retried_within_the_job_then_answers(
    sqlite_url: str, fakes: Fakes
) -> None:
    fakes.dataforseo.script(Reply(200, envelope([], 50000)), Reply(429))
    with started(fakes.settings(sqlite_url, provider_retries=2)) as (_app, client, project):
        job = research(client, project, seeds=SEEDS)
    assert job["status"] == "completed", job
    assert len(fakes.dataforseo.requests) == 4  # two refused, then the two calls


GOOGLE_FAILURES = [
    (429, "RESOURCE_EXHAUSTED", {"quotaError": "RESOURCE_EXHAUSTED"}, "provider_quota_exhausted"),
    (403, "PERMISSION_DENIED", {"authorizationError": "DEVELOPER_TOKEN_NOT_APPROVED"},
     "provider_auth_failed"),
    (400, "INVALID_ARGUMENT", {"fieldError": "INVALID_VALUE"}, "provider_rejected"),
]  # fmt: skip


@pytest.mark.stores("sqlite")
@pytest.mark.parametrize(("status", "name", "error_code", "code"), GOOGLE_FAILURES)
def test_google_ads_errors_fail_the_job_with_a_code(
    researching: Api, fakes: Fakes, status: int, name: str, error_code: dict[str, str], code: str
) -> None:
    fakes.ads.script(Reply(status, google_error(status, name, "Refused.", **error_code)))
    with on(researching) as (client, project):
        job = research(client, project, seeds=SEEDS, provider="google_ads")
    assert (job["status"], job["error"]["code"]) == ("failed", code), job
    assert "google_ads answered" in job["error"]["message"]
    assert len(fakes.ads.requests) == 1


def test_a_refused_refresh_token_fails_the_job_before_any_api_call(
    sqlite_url: str, fakes: Fakes
) -> None:
    settings = fakes.settings(sqlite_url, google_ads_refresh_token="revoked")
    with started(settings) as (_app, client, project):
        job = research(client, project, seeds=SEEDS, provider="google_ads")
    assert (job["status"], job["error"]["code"]) == ("failed", "provider_auth_failed")
    assert "invalid_grant" in job["error"]["message"]
    assert len(fakes.ads.grants) == 1 and fakes.ads.requests == []


def test_params_and_unconfigured_providers_are_refused_naming_the_field(
    store_url: str, fakes: Fakes
) -> None:
    bare = fakes.settings(store_url, dataforseo_login=None, google_ads_developer_token=None)
    with started(bare) as (app, client, project):
        before = stored(app)
        url = f"/v1/projects/{project}/jobs"

        def refused(params: dict[str, Any]) -> dict[str, Any]:
            answer = client.post(url, json={"type": "keyword_research", "params": params})
            return assert_problem(answer, 422)

        problem = refused({"seeds": SEEDS})
        assert problem["type"].endswith("/provider_not_configured")
        [error] = problem["errors"]
        assert error["field"] == "params.provider"
        assert "SEOJOBS_DATAFORSEO_LOGIN" in error["message"]
        assert "SEOJOBS_GOOGLE_ADS_DEVELOPER_TOKEN" in error["message"]
        chosen = refused({"seeds": SEEDS, "provider": "google_ads"})
        assert chosen["type"].endswith("/provider_not_configured")
        assert "google_ads is not configured" in chosen["detail"]
        cases = [
            ({}, "params.seeds"),
            ({"seeds": SEEDS, "url": PAGE}, "params.url"),
            ({"seeds": []}, "params.seeds"),
            ({"seeds": ["  "]}, "params.seeds[0]"),
            ({"seeds": ["x"] * 21}, "params.seeds"),
            ({"seeds": SEEDS, "limit": 0}, "params.limit"),
            ({"seeds": SEEDS, "limit": True}, "params.limit"),
            ({"seeds": SEEDS, "location": True}, "params.location"),
            ({"seeds": SEEDS, "language": "english"}, "params.language"),
            ({"seeds": SEEDS, "provider": "semrush"}, "params.provider"),
            ({"url": "ftp://a.example/"}, "params.url"),
        ]
        for params, field in cases:
            answer = client.post(url, json={"type": "keyword_research", "params": params})
            assert_problem(answer, 422)
            assert field in error_fields(answer), (params, answer.text)
        assert stored(app) == before


@pytest.mark.stores("sqlite")
@pytest.mark.parametrize(
    ("market", "why"),
    [({"location": "London"}, "not a name ('London')"), ({"language": "tlh"}, "no language 'tlh'")],
)
def test_a_market_google_ads_cannot_express_fails_the_job_before_any_call(
    researching: Api, fakes: Fakes, market: dict[str, str], why: str
) -> None:
    with on(researching) as (client, project):
        job = research(client, project, seeds=SEEDS, provider="google_ads", **market)
    assert (job["status"], job["error"]["code"]) == ("failed", "provider_rejected")
    assert why in job["error"]["message"]
    assert fakes.ads.requests == [] and fakes.ads.grants == []


def test_lookups_over_the_daily_quota_fail_with_the_reset_time(
    sqlite_url: str, fakes: Fakes
) -> None:
    settings = fakes.settings(sqlite_url, quota_keyword_lookups_daily=1)
    with started(settings) as (_app, client, project):
        first = research(client, project, seeds=SEEDS)
        second = research(client, project, seeds=SEEDS)
        usage = {q["quota"]: q for q in client.get("/v1/usage").json()["data"]}
    assert first["status"] == "completed"
    assert (second["status"], second["error"]["code"]) == ("failed", "quota_exceeded")
    assert "resets at" in second["error"]["message"]
    day, month = usage["keyword_lookups"], usage["keyword_lookups_month"]
    assert (day["limit"], day["used"], day["remaining"]) == (1, 1, 0)
    assert (month["period"], month["used"]) == ("month", 1)
    assert second["error"]["message"].endswith(day["resets_at"])
    assert len(fakes.dataforseo.requests) == 2  # the first job's two calls only


def test_job_types_show_the_params_schema_with_its_defaults(sqlite_url: str) -> None:
    with api(make_settings(sqlite_url)) as app:
        client = app.client(app.account())
        types = {t["name"]: t for t in client.get("/v1/job-types").json()["data"]}
        document = client.get("/openapi.json").json()
    schema = types["keyword_research"]["params_schema"]
    fields = schema["properties"]
    assert {name: fields[name].get("default") for name in fields} == {
        "seeds": None,
        "url": None,
        "location": 2840,
        "language": "en",
        "provider": None,
        "limit": 100,
    }
    # Exactly one of them given, null counting as not given (seojobs.schemarules).
    assert schema["oneOf"] == [given("seeds"), given("url")]
    assert schema["oneOf"][0]["properties"]["seeds"] == {"not": {"type": "null"}}
    assert fields["seeds"]["anyOf"][0]["maxItems"] == 20
    assert fields["limit"]["maximum"] == 1000
    # params {} is no valid research: the document makes params required for this type.
    branches = document["components"]["schemas"]["JobIn"]["allOf"][-1]["oneOf"]
    [branch] = [b for b in branches if b["properties"]["type"]["const"] == "keyword_research"]
    assert branch["required"] == ["params"]


def test_seojobs_providers_lists_keyword_providers_and_checks_the_refresh_token(
    tmp_path: Any, fakes: Fakes
) -> None:
    env = {
        "SEOJOBS_DATABASE_URL": f"sqlite:///{tmp_path / 'unused.db'}",
        **{f"SEOJOBS_{name.upper()}": value for name, value in ADS.items()},
        "SEOJOBS_GOOGLE_ADS_TOKEN_URL": fakes.ads_base + "/token",
        "SEOJOBS_PROVIDER_RETRIES": "0",
    }
    offline = CliRunner().invoke(cli, ["providers", "--offline"], env=env)
    assert offline.exit_code == 0, offline.output
    [row] = [line for line in offline.output.splitlines() if line.startswith("keywords")]
    assert row.split()[1:3] == ["google", "google_ads"]
    assert "dataforseo (not configured: SEOJOBS_DATAFORSEO_LOGIN and" in row
    assert fakes.ads.grants == []
    checked = CliRunner().invoke(cli, ["providers"], env=env)
    assert checked.exit_code == 0, checked.output
    assert "credential google_ads: ok: the token endpoint granted an access token" in checked.output
    assert len(fakes.ads.grants) == 1 and fakes.ads.requests == []  # no operation spent
    revoked = {**env, "SEOJOBS_GOOGLE_ADS_REFRESH_TOKEN": "revoked"}
    refused = CliRunner().invoke(cli, ["providers"], env=revoked)
    assert refused.exit_code == 1
    assert "credential google_ads: FAILED:" in refused.output and "invalid_grant" in refused.output


@pytest.mark.slow
def test_a_research_whose_worker_is_sigkilled_mid_call_is_resumed_and_collected_once(
    store_url: str, fakes: Fakes, tmp_path: Path
) -> None:
    settings = fakes.settings(store_url)
    services = Services(Database(store_url), settings, load_registry(settings))
    procs = Procs(store_url, tmp_path)
    env = {
        "SEOJOBS_LEASE_SECONDS": "1.5",
        "SEOJOBS_DATAFORSEO_LOGIN": "dfs-login",
        "SEOJOBS_DATAFORSEO_PASSWORD": "dfs-password",
        "SEOJOBS_DATAFORSEO_BASE_URL": fakes.dfs_base,
    }
    fakes.dataforseo.gate = threading.Event()
    try:
        user = services.accounts.create_user("alice").user
        project = services.accounts.create_project(user, "shop")
        job, _ = services.jobs.create(
            user, "keyword_research", {"seeds": SEEDS}, project_id=project.id
        )
        victim = procs.worker(**env)
        wait_until(lambda: fakes.dataforseo.requests, timeout=60)  # its first call in flight
        victim.send_signal(signal.SIGKILL)
        victim.wait(timeout=30)
        fakes.dataforseo.gate.set()
        assert not services.jobs.get(user, job.id).is_final
        procs.worker(**env)
        wait_until(lambda: services.jobs.get(user, job.id).is_final, timeout=120)
        done = services.jobs.get(user, job.id)
        history = services.collections.history(user, project.id, "keyword_research")
    finally:
        procs.stop_all()
        services.db.dispose()
    assert done.state == "completed", (done.error_code, done.error, procs.exits())
    assert [c.job_id for c in history] == [job.id]  # collected once, by the resumed job
    assert {k["keyword"].lower() for k in history[0].data["keywords"]} == set(ideas_for(SEEDS))
    # The killed call, then the resumed job's two (and, under load, a call in flight again
    # for each further claim lost to heartbeats too late for the 1.5 s lease).
    assert done.rescue_count >= 1
    assert 3 <= len(fakes.dataforseo.requests) <= 2 + done.rescue_count
