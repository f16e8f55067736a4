"""``rank_check`` end to end: the HTTP API starts a check, the in-process worker asks a local
fake of Serper or DataForSEO (their documented wire formats, error bodies included), and
``GET /v1/projects/{id}/rankings`` (and ``/rankings/history``) read what was collected."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import httpx
import pytest

from seojobs.engine import maintenance
from seojobs.kinds import load_registry
from seojobs.services import Services
from seojobs.services.quotas import day_start
from seojobs.settings import Settings
from seojobs.store import usage
from seojobs.store.coltypes import utcnow
from seojobs.store.db import Database
from tests.api_helpers import Api, api, assert_problem, error_fields, owned, shared_api, stored
from tests.conftest import NO_PROVIDERS, make_settings
from tests.fakes.ranks import FakeDataForSeoRanks, FakeSerperRanks
from tests.fakes.serp import Reply, dfs_task, envelope
from tests.fakes.server import serve
from tests.waiting import wait_until

KEYWORDS = ["Garden hose", "hose reel", "pruning shears"]


@dataclass
class Fakes:
    serper: FakeSerperRanks
    dataforseo: FakeDataForSeoRanks

    def settings(self, store_url: str, **overrides: Any) -> Settings:
        values: dict[str, Any] = {
            "serper_key": "serper-key",
            "serper_base_url": self.serper.base_url,
            "dataforseo_login": "dfs-login",
            "dataforseo_password": "dfs-password",
            "dataforseo_base_url": self.dataforseo.base_url,
            "provider_backoff": 0.0,
            "provider_retries": 1,
        }
        return make_settings(store_url, **(values | overrides))


def _fakes() -> Iterator[Fakes]:
    serper, dataforseo = FakeSerperRanks(), FakeDataForSeoRanks()
    for fake in (serper, dataforseo):
        fake.results(
            "garden hose",
            "https://shop.example/hoses",
            "https://www.example.com/hoses/",
            "https://blog.example.com/hose-guide",
        )
        fake.features("garden hose", "featured_snippet", "people_also_ask")
        fake.results(
            "hose reel", "https://a.example/", "https://b.example/", "http://blog.example.com/reels"
        )
        fake.results(
            "pruning shears", "https://notexample.com/", "https://example.com.evil.example/"
        )
    with serve(serper.app) as serper.base_url, serve(dataforseo.app) as dataforseo.base_url:
        yield Fakes(serper, dataforseo)


@pytest.fixture
def fakes() -> Iterator[Fakes]:
    yield from _fakes()


@pytest.fixture(scope="module")
def one_at_a_time_app(
    module_store: str, request: pytest.FixtureRequest
) -> Iterator[tuple[Fakes, Api]]:
    """Fakes of their own and an app (with its worker) that searches one keyword at a time, one
    per store for the whole module."""
    for fakes in _fakes():
        with shared_api(
            module_store,
            request,
            run_worker=True,
            settings_for=fakes.settings,
            rank_check_concurrency=1,
        ) as app:
            yield fakes, app


@pytest.fixture
def one_at_a_time(
    one_at_a_time_app: tuple[Fakes, Api],
) -> Iterator[tuple[Fakes, httpx.Client, int]]:
    """``one_at_a_time_app`` for one test: the fakes with no request recorded or reply scripted,
    and a project of the test's own user. The tests that script the fakes and need no setting of
    their own share it; each of their checks has ended when the test ends."""
    fakes, shared = one_at_a_time_app
    for fake in (fakes.serper, fakes.dataforseo):
        fake.forget()
    for app in owned(shared):
        client = app.client(app.account("alice"))
        project = client.post("/v1/projects", json={"name": "shop"}).json()["data"]["id"]
        yield fakes, client, project


@contextlib.contextmanager
def started(settings: Settings) -> Iterator[tuple[Api, httpx.Client, int]]:
    with api(settings, run_worker=True) as app:
        client = app.client(app.account("alice"))
        project = client.post("/v1/projects", json={"name": "shop"}).json()["data"]["id"]
        yield app, client, project


def check(client: httpx.Client, project: int, **params: Any) -> dict[str, Any]:
    """Start a rank check and wait until it has ended; its job."""
    body = {
        "type": "rank_check",
        "params": {"keywords": KEYWORDS, "target": "example.com"} | params,
    }
    answer = client.post(f"/v1/projects/{project}/jobs", json=body)
    assert answer.status_code == 202, answer.text
    job_id = answer.json()["data"]["id"]

    def ended() -> dict[str, Any] | None:
        job: dict[str, Any] = client.get(f"/v1/jobs/{job_id}").json()["data"]
        return job if job["status"] in ("completed", "failed") else None

    return wait_until(ended, timeout=60)


def rankings(client: httpx.Client, project: int, path: str = "", **query: Any) -> httpx.Response:
    return client.get(f"/v1/projects/{project}/rankings{path}", params=query)


def positions(answer: httpx.Response) -> list[tuple[str, int | None]]:
    assert answer.status_code == 200, answer.text
    return [(r["keyword"], r["position"]) for r in answer.json()["data"]]


def test_positions_are_collected_served_paged_and_kept_as_history(
    store_url: str, fakes: Fakes
) -> None:
    with started(fakes.settings(store_url)) as (app, client, project):
        before = rankings(client, project)
        assert "rank_check" in assert_problem(before, 404)["detail"]
        assert_problem(rankings(client, project, "/history", keyword="garden hose"), 404)
        first = check(client, project, provider="dataforseo", device="mobile", location="2826")
        assert first["status"] == "completed", first
        assert first["result"] == {"keywords": 3, "ranked": 2, "not_ranked": 1, "failed": 0,
                                   "provider": "dataforseo", "share_of_voice": 0.2278}  # fmt: skip
        jobs = stored(app)["jobs"]
        answer = rankings(client, project)
        # The best position first; not ranked last. www and a subdomain count for the domain,
        # a look-alike host (notexample.com, example.com.evil.example) does not.
        assert positions(answer) == [("Garden hose", 2), ("hose reel", 3), ("pruning shears", None)]
        hose, reel, shears = answer.json()["data"]
        assert (hose["url"], hose["title"], hose["rank_absolute"]) == (
            "https://www.example.com/hoses/", "Result 2", 4)  # two features above  # fmt: skip
        assert hose["features"] == ["featured_snippet", "people_also_ask"]
        assert (hose["job_id"], hose["provider"], hose["device"], hose["location"]) == (
            first["id"], "dataforseo", "mobile", 2826)  # fmt: skip
        assert hose["collected_at"] and hose["checked_at"] and hose["target"] == "example.com"
        assert reel["url"] == "http://blog.example.com/reels"
        assert (shears["url"], shears["rank_absolute"], shears["results"]) == (None, None, 2)
        # One documented task per keyword: HTTP Basic, the market, the device and the depth.
        tasks = sorted((r.body[0] for r in fakes.dataforseo.requests), key=lambda t: t["keyword"])
        assert tasks[0] == {"keyword": "Garden hose", "location_code": 2826,
                            "language_code": "en", "device": "mobile", "depth": 100}  # fmt: skip
        assert {r.path for r in fakes.dataforseo.requests} == {
            "/v3/serp/google/organic/live/advanced"
        }
        # Filters: a keyword in any case, a part of one, the device; sort by keyword.
        assert positions(rankings(client, project, keyword="GARDEN HOSE")) == [("Garden hose", 2)]
        assert positions(rankings(client, project, contains="hose", sort="keyword")) == [
            ("Garden hose", 2), ("hose reel", 3)]  # fmt: skip
        assert positions(rankings(client, project, device="desktop")) == []
        assert error_fields(rankings(client, project, sort="rank")) == ["sort"]
        assert error_fields(rankings(client, project, device="tablet")) == ["device"]
        assert stored(app)["jobs"] == jobs  # no read started a job

        # A first page of two; then a second check moves the hose and the shears to the top.
        # The next page is of the rankings as they stood (else it would repeat the hose
        # reel), and the new ones are served from then on.
        page = rankings(client, project, limit=2)
        assert positions(page) == [("Garden hose", 2), ("hose reel", 3)]
        fakes.dataforseo.results("garden hose", "https://example.com/", "https://shop.example/")
        fakes.dataforseo.results("pruning shears", "https://example.com/shears")
        second = check(client, project, provider="dataforseo", device="mobile", location=2826)
        assert second["status"] == "completed", second
        rest = rankings(client, project, limit=2, cursor=page.json()["next_cursor"])
        assert positions(rest) == [("pruning shears", None)]
        assert rest.json()["next_cursor"] is None
        now = rankings(client, project).json()["data"]
        assert [(r["keyword"], r["position"], r["job_id"]) for r in now] == [
            ("Garden hose", 1, second["id"]), ("pruning shears", 1, second["id"]),
            ("hose reel", 3, second["id"])]  # fmt: skip
        history = rankings(client, project, "/history", keyword="garden HOSE")
        assert [(r["position"], r["job_id"]) for r in history.json()["data"]] == [
            (1, second["id"]), (2, first["id"])]  # fmt: skip
        everything = rankings(client, project, "/history", limit=4)
        assert len(everything.json()["data"]) == 4  # of six, newest first
        cursor = everything.json()["next_cursor"]
        older = rankings(client, project, "/history", limit=4, cursor=cursor).json()
        assert [r["job_id"] for r in older["data"]] == [first["id"]] * 2
        assert older["next_cursor"] is None
        assert_problem(rankings(client, project, "/history", keyword="unknown"), 404)
        assert stored(app)["jobs"] == jobs + 1


def test_serper_searches_by_country_and_matches_an_exact_page(
    sqlite_url: str, fakes: Fakes
) -> None:
    fakes.serper.results(
        "hose reel",
        "https://example.com/",
        "https://example.com/reels/other",
        "http://www.example.com/reels?utm_source=news",
    )
    with started(fakes.settings(sqlite_url)) as (_app, client, project):
        page = {"target": "https://example.com/reels/", "match": "exact_url"}
        job = check(client, project, keywords=["hose reel", "garden hose"], location=2826, **page)
        assert job["status"] == "completed", job
        rows = {r["keyword"]: r for r in rankings(client, project).json()["data"]}
    # The page, whatever its scheme, www, trailing slash or tracking parameters; not another.
    assert (rows["hose reel"]["position"], rows["hose reel"]["rank_absolute"]) == (3, None)
    assert rows["garden hose"]["position"] is None  # its domain ranks, the page does not
    assert rows["garden hose"]["features"] == ["featured_snippet", "people_also_ask"]
    assert rows["hose reel"]["provider"] == "serper"  # the first in SEOJOBS_RANK_PROVIDERS
    bodies = sorted((r.body for r in fakes.serper.requests), key=lambda b: b["q"])
    assert bodies[0] == {"q": "garden hose", "gl": "gb", "hl": "en", "num": 100}
    assert all(r.headers["x-api-key"] == "serper-key" for r in fakes.serper.requests)


def _share(clicks: float, total: float) -> float:
    return round(clicks / total, 4)


def test_a_competitor_overtaking_the_project_shows_in_positions_and_share_of_voice(
    sqlite_url: str, fakes: Fakes
) -> None:
    """Two checks: the project leads, then rival.com overtakes it on both keywords. The rows
    keep the top results (registrable domains: two hosts of other.co.uk are one site) and the
    competitor's position; the share of voice follows (CTR weights 0.30, 0.16, 0.10, 0.07)."""
    ours, theirs = "https://www.example.com/hoses", "https://shop.rival.com/hoses"
    others = ("https://a.other.co.uk/x", "https://b.other.co.uk/y")
    fakes.dataforseo.results("garden hose", ours, theirs, *others)
    fakes.dataforseo.results("hose reel", "https://example.com/reels", "https://x.example/",
                             "https://rival.com/reels")  # fmt: skip
    fakes.dataforseo.marks("garden hose", ours, "sitelinks", "rating")
    fakes.serper.results("garden hose", theirs, ours, *others)
    fakes.serper.results("hose reel", "https://rival.com/reels", "https://x.example/",
                         "https://example.com/reels")  # fmt: skip
    fakes.serper.marks("garden hose", theirs, "sitelinks")
    params = {"keywords": ["garden hose", "hose reel"], "competitors": ["rival.com"]}
    total = (0.30 + 0.16 + 0.10 + 0.07) + (0.30 + 0.16 + 0.10)
    with started(fakes.settings(sqlite_url)) as (_app, client, project):
        assert_problem(rankings(client, project, "/share-of-voice"), 404)
        first = check(client, project, provider="dataforseo", **params)
        assert first["result"]["share_of_voice"] == _share(0.60, total), first
        hose = rankings(client, project, keyword="garden hose").json()["data"][0]
        assert hose["position"] == 1
        assert hose["competitors"] == [{"domain": "rival.com", "position": 2, "url": theirs}]
        assert hose["top_results"][0] == {"position": 1, "domain": "example.com", "url": ours,
            "title": "Result 1", "features": ["sitelinks", "rating"]}  # fmt: skip
        assert [r["domain"] for r in hose["top_results"]] == [
            "example.com", "rival.com", "other.co.uk", "other.co.uk"]  # fmt: skip
        second = check(client, project, provider="serper", **params)
        assert second["status"] == "completed", second
        rows = {r["keyword"]: r for r in rankings(client, project).json()["data"]}
        assert len(rows) == 2  # the share of voice is no ranking
        assert [(r["position"], r["competitors"][0]["position"]) for r in rows.values()] == [
            (2, 1), (3, 1)]  # fmt: skip
        assert rows["garden hose"]["top_results"][0]["features"] == ["sitelinks"]
        voice = rankings(client, project, "/share-of-voice")
        assert voice.status_code == 200, voice.text
        [latest] = voice.json()["data"]
        assert latest["job_id"] == second["id"] and latest["keywords"] == 2
        assert latest["target"] == {"domain": "example.com", "share": _share(0.26, total),
                                    "keywords_on_first_page": 2}  # fmt: skip
        assert latest["competitors"] == [{"domain": "rival.com", "share": _share(0.60, total),
                                          "keywords_on_first_page": 2}]  # fmt: skip
        assert latest["top_domains"][:3] == [
            {"domain": "rival.com", "share": _share(0.60, total)},
            {"domain": "example.com", "share": _share(0.26, total)},
            {"domain": "other.co.uk", "share": _share(0.17, total)},
        ]
        history = rankings(client, project, "/share-of-voice/history").json()["data"]
        shares = [(h["job_id"], h["target"]["share"], h["competitors"][0]["share"])
                  for h in history]  # fmt: skip
        assert shares == [
            (second["id"], _share(0.26, total), _share(0.60, total)),
            (first["id"], _share(0.60, total), _share(0.26, total)),
        ]
        assert len(rankings(client, project, "/history").json()["data"]) == 4


FALLBACK = [
    # Serper first, a 503 to every call (retried once: two calls a keyword).
    (["serper", "dataforseo"], "serper", [Reply(503, {"message": "Service Unavailable",
     "statusCode": 503})] * 6, "upstream_error", 6),
    # DataForSEO first, its documented 401 (a refused login): not asked again in the job.
    (["dataforseo", "serper"], "dataforseo",
     [Reply(401, envelope([], 40100))] * 3,
     "provider_auth_failed", 1),
]  # fmt: skip


@pytest.mark.parametrize(("order", "first", "replies", "code", "calls"), FALLBACK)
def test_a_provider_failing_hands_every_keyword_to_the_next(
    sqlite_url: str, fakes: Fakes, order: list[str], first: str, replies: list[Reply],
    code: str, calls: int,
) -> None:  # fmt: skip
    failing = getattr(fakes, first)
    failing.script(*replies)
    settings = fakes.settings(
        sqlite_url, rank_check_providers={"google": order}, rank_check_concurrency=1
    )
    second = order[1]
    with started(settings) as (_app, client, project):
        job = check(client, project)
        assert job["status"] == "completed", job
        assert (job["result"]["ranked"], job["result"]["failed"]) == (2, 0), job
        assert job["result"]["answered_by"] == {second: 3}
        assert job["result"]["failed_over"] == {first: 3}
        rows = rankings(client, project).json()["data"]
        assert [r["provider"] for r in rows] == [second] * 3
        assert {(f["provider"], f["code"]) for r in rows for f in r["failed_over"]} == {
            (first, code)
        }
        assert positions(rankings(client, project)) == [("Garden hose", 2), ("hose reel", 3),
                                                         ("pruning shears", None)]  # fmt: skip
    assert len(failing.requests) == calls
    assert len(getattr(fakes, second).requests) == 3


FATAL = [
    ("serper", Reply(403, {"message": "Unauthorized.", "statusCode": 403}), "provider_auth_failed"),
    ("serper", Reply(400, {"message": "Not enough credits", "statusCode": 400}),
     "provider_quota_exhausted"),
    ("dataforseo", Reply(401, envelope([], 40100)), "provider_auth_failed"),
    ("dataforseo", Reply(402, envelope([], 40200)), "provider_quota_exhausted"),
    ("dataforseo", Reply(200, envelope([dfs_task(40210, "Insufficient funds.")])),
     "provider_quota_exhausted"),
]  # fmt: skip


@pytest.mark.stores("sqlite")
@pytest.mark.parametrize(("provider", "reply", "code"), FATAL)
def test_a_refused_key_or_spent_credits_end_the_job(
    one_at_a_time: tuple[Fakes, httpx.Client, int], provider: str, reply: Reply, code: str
) -> None:
    fakes, client, project = one_at_a_time
    fake = getattr(fakes, provider)
    fake.script(reply)
    job = check(client, project, provider=provider)
    assert (job["status"], job["error"]["code"]) == ("failed", code), job
    assert_problem(rankings(client, project), 404)  # a failed check collected nothing
    assert len(fake.requests) == 1  # never retried, and no other keyword was searched


KEYWORD_FAILURES = [
    ("serper", [Reply(500), Reply(503)], "upstream_error"),
    ("serper", [Reply(200, text="<html>busy</html>")], "malformed_response"),
    ("serper", [Reply(200, {"organic": [{"title": "no link"}]})], "malformed_response"),
    ("dataforseo", [Reply(200, envelope([], 50000)), Reply(500)], "upstream_error"),
    ("dataforseo", [Reply(200, envelope([dfs_task(40501, "Invalid Field: 'keyword'.")]))],
     "provider_rejected"),
    ("dataforseo", [Reply(200, {"status_code": 20000, "tasks": []})], "malformed_response"),
]  # fmt: skip


@pytest.mark.stores("sqlite")
@pytest.mark.parametrize(("provider", "replies", "code"), KEYWORD_FAILURES)
def test_a_provider_failure_fails_that_keyword_and_the_others_are_collected(
    one_at_a_time: tuple[Fakes, httpx.Client, int],
    provider: str,
    replies: list[Reply],
    code: str,
) -> None:
    fakes, client, project = one_at_a_time  # one keyword at a time: the first one fails
    getattr(fakes, provider).script(*replies)
    job = check(client, project, provider=provider)
    assert job["status"] == "completed", job
    assert (job["result"]["failed"], job["result"]["ranked"]) == (1, 1)
    items = client.get(f"/v1/jobs/{job['id']}/items").json()["data"]
    assert [i["error"]["code"] for i in items if i.get("error")] == [code]
    assert positions(rankings(client, project)) == [("hose reel", 3), ("pruning shears", None)]


@pytest.mark.stores("sqlite")
def test_a_providers_errors_never_show_its_credentials(
    one_at_a_time: tuple[Fakes, httpx.Client, int],
) -> None:
    """Each provider's 5xx echoing the request, credentials included (Serper's key, DataForSEO's
    password, and a key of another account spelled like one): the stored error is cleared."""
    fakes, client, project = one_at_a_time  # one keyword at a time: the first one fails
    for provider, secret in (("serper", "serper-key"), ("dataforseo", "dfs-password")):
        echo = Reply(500, text=f"failed: X-API-KEY {secret}, also sk-proj-abc123 tried")
        getattr(fakes, provider).script(echo, echo)  # the try and its one retry
        job = check(client, project, provider=provider)
        assert job["status"] == "completed", job
        items = client.get(f"/v1/jobs/{job['id']}/items").json()["data"]
        [error] = [i["error"] for i in items if i.get("error")]
        assert error["code"] == "upstream_error", error
        assert secret not in error["message"] and "sk-proj" not in error["message"]
        assert error["message"].count("[key]") == 2, error


def test_a_check_where_every_keyword_failed_fails_with_the_first_error(
    sqlite_url: str, fakes: Fakes
) -> None:
    fakes.serper.script(*[Reply(404, {"message": "Not found", "statusCode": 404})] * 3)
    with started(fakes.settings(sqlite_url)) as (_app, client, project):
        job = check(client, project)
        assert (job["status"], job["error"]["code"]) == ("failed", "provider_rejected"), job
        assert_problem(rankings(client, project), 404)


def test_params_and_unconfigured_providers_are_refused_naming_the_field(
    store_url: str, fakes: Fakes
) -> None:
    with started(fakes.settings(store_url, **NO_PROVIDERS)) as (app, client, project):
        before = stored(app)
        url = f"/v1/projects/{project}/jobs"

        def post(params: dict[str, Any]) -> httpx.Response:
            return client.post(url, json={"type": "rank_check", "params": params})

        problem = assert_problem(post({"keywords": KEYWORDS, "target": "example.com"}), 422)
        assert problem["type"].endswith("/provider_not_configured")
        [error] = problem["errors"]
        assert error["field"] == "params.provider" and "SEOJOBS_SERPER_KEY" in error["message"]
        base = {"keywords": ["a"], "target": "example.com"}
        cases = [
            ({"target": "example.com"}, "params.keywords"),
            ({"keywords": [], "target": "example.com"}, "params.keywords"),
            ({"keywords": ["  "], "target": "example.com"}, "params.keywords[0]"),
            ({"keywords": [f"k{i}" for i in range(101)], "target": "x.example"}, "params.keywords"),
            ({"keywords": ["x" * 81], "target": "example.com"}, "params.keywords[0]"),
            ({"keywords": ["a"]}, "params.target"),
            ({**base, "target": "not a domain"}, "params.target"),
            ({**base, "target": "ftp://example.com/"}, "params.target"),
            ({**base, "match": "exact_url"}, "params.target"),
            ({**base, "match": "prefix"}, "params.match"),
            ({**base, "device": "tablet"}, "params.device"),
            ({**base, "depth": 9}, "params.depth"),
            ({**base, "depth": 101}, "params.depth"),
            ({**base, "location": True}, "params.location"),
            ({**base, "language": "english"}, "params.language"),
            ({**base, "provider": "semrush"}, "params.provider"),
        ]
        for params, field in cases:
            answer = post(params)
            assert_problem(answer, 422)
            assert field in error_fields(answer), (params, answer.text)
        assert stored(app) == before


def test_a_search_serper_cannot_make_fails_the_job_before_any_call(
    sqlite_url: str, fakes: Fakes
) -> None:
    with started(fakes.settings(sqlite_url)) as (_app, client, project):
        mobile = check(client, project, device="mobile", provider="serper")
        nowhere = check(client, project, location=2999, provider="serper")
        # Named by no job, Serper is left out of a search it cannot make: the next answers.
        handed = check(client, project, device="mobile")
    assert (mobile["status"], mobile["error"]["code"]) == ("failed", "provider_rejected")
    assert "desktop results only" in mobile["error"]["message"]
    assert (nowhere["status"], nowhere["error"]["code"]) == ("failed", "provider_rejected")
    assert (handed["status"], handed["result"]["provider"]) == ("completed", "dataforseo")
    assert fakes.serper.requests == []


def test_keywords_over_the_daily_quota_fail_with_quota_exceeded(
    sqlite_url: str, fakes: Fakes
) -> None:
    settings = fakes.settings(sqlite_url, quota_rank_keywords_daily=4)
    with started(settings) as (_app, client, project):
        first = check(client, project)
        second = check(client, project, keywords=["a", "b"])
        usage_rows = {q["quota"]: q for q in client.get("/v1/usage").json()["data"]}
    assert first["status"] == "completed"
    assert (second["status"], second["error"]["code"]) == ("failed", "quota_exceeded")
    day, month = usage_rows["rank_keywords"], usage_rows["rank_keywords_month"]
    assert (day["limit"], day["used"], day["remaining"]) == (4, 3, 1)
    assert (month["period"], month["used"]) == ("month", 3)
    assert len(fakes.serper.requests) == 3  # the first job's keywords only


def test_a_schedule_fires_rank_checks_with_their_items_and_charges_them(
    db: Database, settings: Settings
) -> None:
    services = Services(db, settings, load_registry(settings))
    user = services.accounts.create_user("alice").user
    t0 = day_start(utcnow()) + timedelta(hours=1)  # every tick below is in one UTC day
    made = services.schedules.create(
        user,
        name="daily ranks",
        kind="rank_check",
        params={"keywords": ["garden hose", "Hose reel"], "target": "example.com"},
        every_seconds=3600,
        start_at=t0,
    )
    fire = services.schedules.fire
    assert maintenance.run_once(services.db, services.settings, "a", t0, fire).fired == 1
    [job] = [j for j in services.jobs.page(user, kind="rank_check") if j.schedule_id == made.id]
    assert (job.kind, job.state, job.items_total) == ("rank_check", "pending", 2)
    inputs = [i.data["keyword"] for i in services.jobs.items(user, job.id)]
    assert inputs == ["garden hose", "Hose reel"]
    with services.db.read() as conn:
        assert usage.used(conn, user.id, "rank_keywords", t0 - timedelta(minutes=1)) == 2
    # At quota, the next tick stores a refused job, which never runs.
    user = services.quotas.set_limits(user, {"rank_keywords_daily": 3})
    later = t0 + timedelta(hours=1)
    assert maintenance.run_once(services.db, services.settings, "a", later, fire).fired == 1
    refused = [j for j in services.jobs.page(user) if j.schedule_id == made.id and j.id != job.id]
    assert [(j.state, j.error_code) for j in refused] == [("failed", "quota_exceeded")]


def test_an_api_schedule_runs_a_check_whose_rankings_are_read(
    sqlite_url: str, fakes: Fakes
) -> None:
    settings = fakes.settings(sqlite_url, schedule_min_interval_seconds=1)
    with started(settings) as (_app, client, project):
        made = client.post(
            f"/v1/projects/{project}/schedules",
            json={"name": "ranks", "type": "rank_check", "every_seconds": 3600,
                  "params": {"keywords": ["garden hose"], "target": "example.com"}},
        )  # fmt: skip
        assert made.status_code == 201, made.text

        def collected() -> httpx.Response | None:
            answer = rankings(client, project)
            return answer if answer.status_code == 200 else None

        answer = wait_until(collected, timeout=60)
    assert positions(answer) == [("garden hose", 2)]


# Outside text both stores can keep (issue 25.1), outside depth bounded (25.2): a provider's
# error body with a NUL, or an answer nested 5,000 deep, fails that keyword only.
HOSTILE_KEYWORD = [
    pytest.param(Reply(400, text='{"message": "bad\x00query"}'), "provider_rejected", id="nul-400"),
    pytest.param(Reply(500, text="down\x00\x00"), "upstream_error", id="nul-500"),
    pytest.param(Reply(200, text="[" * 5000 + "]" * 5000), "malformed_response", id="deep-array"),
    pytest.param(
        Reply(200, text='{"a":' * 5000 + "1" + "}" * 5000), "malformed_response", id="deep-object"
    ),
]


@pytest.mark.parametrize(("reply", "code"), HOSTILE_KEYWORD)
def test_a_hostile_provider_answer_fails_that_keyword_on_either_store(
    one_at_a_time: tuple[Fakes, httpx.Client, int], reply: Reply, code: str
) -> None:
    fakes, client, project = one_at_a_time  # one keyword at a time: the first one fails
    retried = reply.status >= 500  # the retry of a 5xx gets the same
    fakes.serper.script(*[reply] * (2 if retried else 1))
    job = check(client, project, provider="serper")  # named: no fallback
    assert job["status"] == "completed", job
    assert (job["result"]["failed"], job["result"]["ranked"]) == (1, 1)
    items = client.get(f"/v1/jobs/{job['id']}/items").json()["data"]
    [error] = [i["error"] for i in items if i.get("error")]
    assert error["code"] == code
    assert "\x00" not in error["message"]


def test_a_fatal_provider_error_with_a_nul_fails_the_job_once_on_either_store(
    one_at_a_time: tuple[Fakes, httpx.Client, int],
) -> None:
    fakes, client, project = one_at_a_time
    fakes.serper.script(Reply(403, text='{"message": "Unauthorized.\x00"}'))
    job = check(client, project, provider="serper")  # named: no fallback
    assert (job["status"], job["error"]["code"]) == ("failed", "provider_auth_failed"), job
    assert "Unauthorized.\ufffd" in job["error"]["message"]
    assert len(fakes.serper.requests) == 1  # written at once: never rescued and asked again
