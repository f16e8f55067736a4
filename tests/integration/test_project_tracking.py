"""What a project tracks (issue 29.1, 29.8): tracked keywords and prompts (bulk, each once,
bounded, refusals naming the field), the project's collection on schedules (per schedulable
kind, audits and vitals opt-in), collections that fire as ordinary jobs with what the project
tracks when they start, the share of voice over tracked keywords, and everything gone with
the project. Both stores: one app per store for the module without a worker (``idle``), and
one with its worker and a fake Serper (``running``); each test works as its own users."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select

from seojobs.store.tables import (
    collections,
    jobs,
    schedules,
    tracked_keywords,
    tracked_prompts,
)
from tests.api_helpers import (
    Api,
    assert_problem,
    error_fields,
    owned,
    shared_api,
    shared_idle_per_test,  # noqa: F401 (the module's ``idle``: one app per store)
)
from tests.fakes.ranks import FakeSerperRanks
from tests.fakes.server import serve
from tests.waiting import wait_until


def _project(client: httpx.Client, **tracked: Any) -> int:
    made = client.post("/v1/projects", json={"name": "shop", **tracked})
    assert made.status_code == 201, made.text
    return int(made.json()["data"]["id"])


def _add(client: httpx.Client, project: int, what: str, values: list[Any]) -> httpx.Response:
    return client.post(f"/v1/projects/{project}/tracked-{what}", json={what: values})


def _collection(client: httpx.Client, project: int) -> dict[str, dict[str, Any]]:
    answer = client.get(f"/v1/projects/{project}/collection")
    assert answer.status_code == 200, answer.text
    return {entry["type"]: entry for entry in answer.json()["data"]}


def test_tracked_keywords_are_added_in_bulk_each_once_and_deleted(idle: Api) -> None:
    client = idle.client(idle.account())
    project = _project(client)
    first = _add(client, project, "keywords", [
        {"keyword": " Garden hose "},
        {"keyword": "garden HOSE"},  # the same keyword in the same market
        {"keyword": "garden hose", "device": "mobile"},  # another market
        {"keyword": "hose reel", "location": "London,England,United Kingdom", "language": "EN"},
    ])  # fmt: skip
    assert first.status_code == 201, first.text
    data = first.json()["data"]
    assert data["already_tracked"] == 1
    assert [(k["keyword"], k["location"], k["language"], k["device"]) for k in data["added"]] == [
        ("Garden hose", 2840, "en", "desktop"),
        ("garden hose", 2840, "en", "mobile"),
        ("hose reel", "London,England,United Kingdom", "en", "desktop"),
    ]
    again = _add(client, project, "keywords", [{"keyword": "GARDEN hose"}, {"keyword": "rake"}])
    assert again.json()["data"]["already_tracked"] == 1
    assert [k["keyword"] for k in again.json()["data"]["added"]] == ["rake"]
    listed = client.get(f"/v1/projects/{project}/tracked-keywords", params={"limit": 2}).json()
    assert len(listed["data"]) == 2 and listed["next_cursor"]
    rest = client.get(
        f"/v1/projects/{project}/tracked-keywords", params={"cursor": listed["next_cursor"]}
    ).json()
    assert [k["keyword"] for k in rest["data"]] == ["hose reel", "rake"]
    gone = rest["data"][-1]["id"]
    path = f"/v1/projects/{project}/tracked-keywords/{gone}"
    assert client.delete(path).status_code == 204
    assert_problem(client.delete(path), 404)
    # Another user sees none of it.
    other = idle.client(idle.account())
    assert_problem(other.get(f"/v1/projects/{project}/tracked-keywords"), 404)
    assert_problem(_add(other, project, "keywords", [{"keyword": "x"}]), 404)


@pytest.mark.parametrize(
    ("values", "field"),
    [
        ([], "keywords"),
        ([{"keyword": "a"}] * 1001, "keywords"),
        ([{"keyword": "a"}, {"keyword": "b", "device": "tablet"}], "keywords[1].device"),
        ([{"keyword": "\t"}], "keywords[0].keyword"),
        ([{"keyword": "a", "location": 0}], "keywords[0].location"),
        ([{"keyword": "a", "language": "english!"}], "keywords[0].language"),
        ([{"keyword": "a", "volume": 3}], "keywords[0].volume"),
        (["plain"], "keywords[0]"),
    ],
)
def test_a_refused_keyword_names_its_field(idle: Api, values: list[Any], field: str) -> None:
    client = idle.client(idle.account())
    project = _project(client)
    refused = _add(client, project, "keywords", values)
    assert_problem(refused, 422)
    assert field in error_fields(refused), refused.text
    assert client.get(f"/v1/projects/{project}/tracked-keywords").json()["data"] == []


def test_tracked_prompts_are_bounded_per_project(idle: Api) -> None:
    client = idle.client(idle.account())
    project = _project(client)
    made = _add(client, project, "prompts", ["Best hose?", "best HOSE?", "Which reel?"])
    assert made.status_code == 201, made.text
    assert made.json()["data"]["already_tracked"] == 1
    over = _add(client, project, "prompts", [f"question {i}" for i in range(49)])
    assert assert_problem(over, 409)["type"].endswith("/tracked_limit")
    listed = client.get(f"/v1/projects/{project}/tracked-prompts").json()["data"]
    assert [p["prompt"] for p in listed] == ["Best hose?", "Which reel?"]  # nothing added
    assert _add(client, project, "prompts", [f"question {i}" for i in range(48)]).status_code == 201
    assert "prompts[0]" in error_fields(_add(client, project, "prompts", ["a\nb"]))


def test_the_collection_lists_every_schedulable_kind_audits_and_vitals_opt_in(idle: Api) -> None:
    client = idle.client(idle.account())
    project = _project(client)
    found = _collection(client, project)
    collected = {"rank_check", "local_rank_check", "geo_lookup", "backlink_refresh",
                 "backlink_analysis", "site_audit", "web_vitals"}  # fmt: skip
    assert collected <= set(found)
    assert "domain_lookup" not in found  # only when started
    assert not any(entry["enabled"] for entry in found.values())  # nothing until set
    assert found["site_audit"]["opt_in"] and found["web_vitals"]["opt_in"]
    assert not found["rank_check"]["opt_in"]
    path = f"/v1/projects/{project}/collection"
    # Named without "enabled", an opt-in kind stays off; it runs only when enabled.
    audit_params = {"start_url": "https://shop.example/"}
    put = client.put(path, json={"site_audit": {"frequency": "weekly", "params": audit_params}})
    assert put.status_code == 200, put.text
    audit = {e["type"]: e for e in put.json()["data"]}["site_audit"]
    assert (audit["enabled"], audit["frequency"], audit["every_days"]) == (False, "weekly", 7)
    vitals = {"enabled": True, "cron": "0 3 * * 1", "params": {"urls": ["https://shop.example/"]}}
    on = client.put(path, json={"site_audit": {"enabled": True}, "web_vitals": vitals})
    assert on.status_code == 200, on.text
    entries = {e["type"]: e for e in on.json()["data"]}
    assert entries["site_audit"]["enabled"] and entries["site_audit"]["frequency"] == "weekly"
    assert entries["web_vitals"]["frequency"] == "cron" and entries["web_vitals"]["next_run_at"]
    # Every N days (of SEOJOBS_DAY_SECONDS); off, it needs nothing tracked.
    every = client.put(path, json={"geo_lookup": {"enabled": False, "every_days": 3}})
    assert every.status_code == 200, every.text
    geo = {e["type"]: e for e in every.json()["data"]}["geo_lookup"]
    assert (geo["enabled"], geo["every_days"]) == (False, 3)
    # Behind each, a schedule of the project's, marked as its collection.
    listed = client.get(f"/v1/projects/{project}/schedules").json()["data"]
    assert {(s["type"], s["collection"]) for s in listed} == {
        ("site_audit", True), ("web_vitals", True), ("geo_lookup", True)}  # fmt: skip
    # Stated again as it is, nothing moves (no extra run).
    before = entries["site_audit"]["next_run_at"]
    again = client.put(path, json={"site_audit": {"enabled": True, "frequency": "weekly"}})
    assert {e["type"]: e for e in again.json()["data"]}["site_audit"]["next_run_at"] == before


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"domain_lookup": {"enabled": True}}, "domain_lookup"),
        ({"no_such_kind": {}}, "no_such_kind"),
        ({"rank_check": {"every_days": 0}}, "rank_check.every_days"),
        ({"rank_check": {"cron": "61 * * * *"}}, "rank_check.cron"),
        ({"rank_check": {"frequency": "hourly"}}, "rank_check.frequency"),
        ({"rank_check": {"frequency": "daily", "cron": "* * * * *"}}, "rank_check"),
        ({"rank_check": {"enabled": "yes"}}, "rank_check.enabled"),
        # Nothing tracked: a rank check would have no keywords, no target.
        ({"rank_check": {}}, "rank_check.params"),
        ({"geo_lookup": {"params": {"prompts": ["x"], "repeats": 9}}},
         "geo_lookup.params.repeats"),
    ],
)  # fmt: skip
def test_a_refused_collection_names_its_field(idle: Api, body: dict[str, Any], field: str) -> None:
    client = idle.client(idle.account())
    project = _project(client)
    refused = client.put(f"/v1/projects/{project}/collection", json=body)
    assert_problem(refused, 422)
    assert any(f.startswith(field) for f in error_fields(refused)), refused.text
    assert client.get(f"/v1/projects/{project}/schedules").json()["data"] == []


# -- collections that run -------------------------------------------------------------------------

DAY = 1.5  # SEOJOBS_DAY_SECONDS: a "daily" collection every 1.5 s


@pytest.fixture(scope="module")
def running_app(module_store: str, request: pytest.FixtureRequest) -> Iterator[Api]:
    """An app with its worker, its rank checks answered by a fake Serper, and a "day" of
    ``DAY`` seconds: one per store for the module."""
    serper = FakeSerperRanks()
    serper.results("garden hose", "https://rival.com/a", "https://example.com/hoses")
    serper.results("hose reel", "https://example.com/reels", "https://rival.com/b")
    serper.results("rake", "https://rival.com/rakes", "https://other.example/")
    with (
        serve(serper.app) as serper.base_url,
        shared_api(
            module_store,
            request,
            run_worker=True,
            serper_key="serper-key",
            serper_base_url=serper.base_url,
            provider_backoff=0.0,
            provider_retries=1,
            day_seconds=DAY,
            schedule_min_interval_seconds=1,
        ) as app,
    ):
        yield app


@pytest.fixture
def running(running_app: Api) -> Iterator[Api]:
    """The module's ``running_app`` as this test's own users (each reads its own project's
    jobs, collections and usage)."""
    yield from owned(running_app)


def _jobs(client: httpx.Client, project: int) -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = client.get(f"/v1/projects/{project}/jobs").json()["data"]
    return data


def test_a_daily_collection_fires_three_times_as_ordinary_jobs(running: Api) -> None:
    app = running
    client = app.client(app.account("alice"))
    project = _project(client, domain="example.com",
                       competitors=[{"domain": "rival.com"}])  # fmt: skip
    _add(client, project, "keywords", [{"keyword": "garden hose"}, {"keyword": "hose reel"}])
    put = client.put(f"/v1/projects/{project}/collection", json={"rank_check": {}})
    assert put.status_code == 200, put.text
    entry = {e["type"]: e for e in put.json()["data"]}["rank_check"]
    assert (entry["enabled"], entry["frequency"], entry["params"]) == (True, "daily", {})

    def three() -> list[dict[str, Any]] | None:
        done = [j for j in _jobs(client, project) if j["status"] == "completed"]
        return done if len(done) >= 3 else None

    done = wait_until(three, timeout=60)
    client.put(f"/v1/projects/{project}/collection", json={"rank_check": {"enabled": False}})
    assert {j["schedule_id"] for j in done} == {entry["schedule_id"]}
    assert all(j["type"] == "rank_check" and j["items_total"] == 2 for j in done)
    usage = client.get("/v1/usage").json()["data"]
    charged = {(q["quota"], q["period"]): q["used"] for q in usage}
    assert charged["rank_keywords", "day"] >= 6, usage  # charged like any job
    history = client.get(f"/v1/projects/{project}/rankings/history",
                         params={"keyword": "garden hose"}).json()["data"]  # fmt: skip
    assert len(history) >= 3 and {h["position"] for h in history} == {2}
    # Reads never start a job.
    count = len(_jobs(client, project))
    for path in ("rankings", "rankings/history", "rankings/share-of-voice", "collection",
                 "tracked-keywords", "tracked-prompts"):  # fmt: skip
        assert client.get(f"/v1/projects/{project}/{path}").status_code == 200
    assert len(_jobs(client, project)) == count


def test_share_of_voice_is_over_the_tracked_keywords(running: Api) -> None:
    app = running
    client = app.client(app.account("alice"))
    project = _project(client, domain="example.com",
                       competitors=[{"domain": "rival.com"}])  # fmt: skip
    _add(client, project, "keywords", [{"keyword": "garden hose"}, {"keyword": "hose reel"}])

    def run(params: dict[str, Any]) -> dict[str, Any]:
        made = client.post(f"/v1/projects/{project}/jobs",
                           json={"type": "rank_check", "params": params})  # fmt: skip
        assert made.status_code == 202, made.text
        job_id = made.json()["data"]["id"]

        def ended() -> dict[str, Any] | None:
            job: dict[str, Any] = client.get(f"/v1/jobs/{job_id}").json()["data"]
            return job if job["status"] in ("completed", "failed") else None

        return wait_until(ended, timeout=60)

    tracked = run({})  # the project's tracked keywords, target and competitors
    assert tracked["status"] == "completed" and tracked["items_total"] == 2, tracked
    # garden hose: rival 1, us 2; hose reel: us 1, rival 2: equal shares.
    assert tracked["result"]["share_of_voice"] == tracked_share(0.46)
    # A check of one tracked and one untracked keyword: the voice stays over the tracked
    # two (hose reel's latest ranking stands in), and rake is left out.
    mixed = run({"keywords": ["garden hose", "rake"]})
    assert mixed["result"]["share_of_voice"] == tracked_share(0.46), mixed
    voice = client.get(f"/v1/projects/{project}/rankings/share-of-voice").json()["data"][0]
    assert voice["keywords"] == 2 and voice["keywords_basis"] == "tracked"
    assert voice["competitors"][0]["share"] == tracked_share(0.46)


def tracked_share(clicks: float) -> float:
    return round(clicks / (2 * (0.30 + 0.16)), 4)


def test_deleting_a_project_deletes_what_it_tracks(running: Api) -> None:
    # Its competitors are fields of its row (tests/integration/test_api_projects.py); its
    # tracked keywords and prompts, its collection's schedules, its jobs and what they
    # collected are rows of their own, gone with it.
    app = running
    client = app.client(app.account("alice"))
    project = _project(client, domain="example.com", competitors=[{"domain": "rival.com"}])
    _add(client, project, "keywords", [{"keyword": "garden hose"}])
    _add(client, project, "prompts", ["best hose?"])
    off = {"enabled": False}  # collections that never fire: their schedules are rows
    put = client.put(
        f"/v1/projects/{project}/collection", json={"rank_check": off, "geo_lookup": off}
    )
    assert put.status_code == 200, put.text
    made = client.post(f"/v1/projects/{project}/jobs", json={"type": "rank_check"})
    assert made.status_code == 202, made.text
    job_id = made.json()["data"]["id"]
    wait_until(
        lambda: client.get(f"/v1/jobs/{job_id}").json()["data"]["status"] == "completed",
        timeout=60,
    )
    tables = (tracked_keywords, tracked_prompts, schedules, jobs, collections)

    def counts() -> dict[str, int]:
        with app.services.db.read() as conn:
            return {
                t.name: conn.execute(
                    select(func.count()).select_from(t).where(t.c.project_id == project)
                ).scalar_one()
                for t in tables
            }

    assert all(counts().values()), counts()  # a row of each before
    assert client.delete(f"/v1/projects/{project}").status_code == 204
    assert counts() == dict.fromkeys(counts(), 0)
    assert_problem(client.get(f"/v1/projects/{project}/collection"), 404)
