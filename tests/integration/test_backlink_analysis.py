"""``backlink_analysis`` end to end on both stores: the HTTP API starts a job, the in-process
worker asks a local fake of DataForSEO's Backlinks API (its documented wire format, error
bodies included), and the project's reads serve the links, the links lost since the previous
analysis, the referring domains and anchors, and every analysis's totals.

One app (with its worker) per store serves the module; each test has its own user and its
own target domain in the fake's index, so tests never see each other's links."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.api_helpers import Api, api, assert_problem, error_fields, run_project_job
from tests.conftest import database_of, make_settings
from tests.fakes.backlinks import FakeDataForSeoBacklinks, Link
from tests.fakes.serp import Reply, dfs_task, envelope
from tests.fakes.server import serve

CREDENTIALS = {"dataforseo_login": "dfs-login", "dataforseo_password": "dfs-password"}


@pytest.fixture(scope="module")
def fake(module_store: str) -> Iterator[FakeDataForSeoBacklinks]:
    """One index per store's app (``module_store``): the tests of each store add the same
    links."""
    made = FakeDataForSeoBacklinks()
    with serve(made.app) as base:
        made.base_url = base
        yield made


@pytest.fixture(scope="module")
def shared(
    module_store: str, fake: FakeDataForSeoBacklinks, request: pytest.FixtureRequest
) -> Iterator[Api]:
    with database_of(module_store, request) as url:
        settings = make_settings(
            url,
            **CREDENTIALS,
            dataforseo_base_url=fake.base_url,
            provider_backoff=0.0,
            provider_retries=1,
        )
        with api(settings, run_worker=True) as running:
            running.shared = True
            yield running


@pytest.fixture
def app(shared: Api) -> Iterator[Api]:
    mine = shared.own()
    try:
        yield mine
    finally:
        mine.close()


@pytest.fixture
def client(app: Api) -> httpx.Client:
    return app.client(app.account())


def project_of(client: httpx.Client) -> int:
    answer = client.post("/v1/projects", json={"name": "links"})
    assert answer.status_code == 201, answer.text
    return int(answer.json()["data"]["id"])


def analyse(client: httpx.Client, project: int, **params: Any) -> dict[str, Any]:
    """Start an analysis and wait until it has ended; its job."""
    return run_project_job(client, project, "backlink_analysis", params)


def read(client: httpx.Client, project: int, path: str = "", **query: Any) -> httpx.Response:
    return client.get(f"/v1/projects/{project}/backlinks/analysis{path}", params=query)


def asked(fake: FakeDataForSeoBacklinks, target: str) -> list[tuple[str, dict[str, Any]]]:
    """The calls made about ``target``: (endpoint, task)."""
    return [
        (r.path.split("/")[3], r.body[0])
        for r in fake.requests
        if isinstance(r.body, list) and r.body and r.body[0].get("target") == target
    ]


def test_an_analysis_stores_the_links_domains_and_anchors_the_index_knows(
    fake: FakeDataForSeoBacklinks, client: httpx.Client
) -> None:
    site = "shop-a.test"
    fake.links += [
        Link("https://blog.one.test/post", f"https://{site}/", "shop a", rank=300),
        Link("https://news.two.test/item", f"https://www.{site}/hoses", "hoses", dofollow=False),
        Link("https://blog.one.test/old", f"https://{site}/", "shop a", lost=True, rank=50),
        Link("https://forum.three.test/t/1", f"https://help.{site}/faq", "faq", rank=10),
    ]
    project = project_of(client)
    assert_problem(read(client, project), 404)  # nothing analysed yet: no job is started
    assert client.get(f"/v1/projects/{project}/jobs").json()["data"] == []
    job = analyse(client, project, domain=f"www.{site}", period_days=7)
    assert job["status"] == "completed", job
    assert job["result"] == {"provider": "dataforseo", "links": 4, "new": 3, "lost": 0}

    calls = asked(fake, site)
    assert [name for name, _task in calls] == [
        "summary",
        "backlinks",
        "referring_domains",
        "anchors",
        "timeseries_new_lost_summary",
    ]
    backlinks_task = calls[1][1]
    assert backlinks_task == {
        "target": site,  # without www., as documented
        "include_subdomains": True,
        "mode": "as_is",
        "limit": 1000,
        "backlinks_status_type": "all",
        "order_by": ["rank,desc"],
    }
    timeline_task = calls[4][1]
    assert timeline_task["group_range"] == "day" and timeline_task["date_to"]

    page = read(client, project).json()
    assert (page["job_id"], page["target"], page["provider"]) == (job["id"], site, "dataforseo")
    assert page["summary"]["backlinks"] == 3 and page["summary"]["referring_domains"] == 3
    assert (page["new"], page["lost"], page["previous_job_id"]) == (3, 0, None)
    assert page["timeline"][0]["new_backlinks"] == 3
    rows = page["data"]
    assert [r["url_from"] for r in rows] == [  # strongest first
        "https://blog.one.test/post",
        "https://news.two.test/item",
        "https://blog.one.test/old",
        "https://forum.three.test/t/1",
    ]
    nofollow = rows[1]
    assert (nofollow["dofollow"], nofollow["rel"], nofollow["new"]) == (False, ["nofollow"], True)
    assert (rows[2]["is_lost"], rows[2]["new"]) == (True, False)  # lost: not new

    only = read(client, project, dofollow="false").json()["data"]
    assert [r["url_from"] for r in only] == ["https://news.two.test/item"]
    from_one = read(client, project, domain_from="one.test", lost="false").json()["data"]
    assert [r["url_from"] for r in from_one] == ["https://blog.one.test/post"]
    first = read(client, project, limit=2).json()
    rest = read(client, project, limit=2, cursor=first["next_cursor"]).json()
    assert [r["url_from"] for r in first["data"] + rest["data"]] == [r["url_from"] for r in rows]

    domains = read(client, project, "/referring-domains").json()["data"]
    assert {d["domain"]: d["backlinks"] for d in domains} == {
        "blog.one.test": 1,
        "news.two.test": 1,
        "forum.three.test": 1,
    }
    anchors = read(client, project, "/anchors", sort="anchor").json()["data"]
    assert [a["anchor"] for a in anchors] == ["faq", "hoses", "shop a"]
    table = read(client, project, "/anchors", sort="anchor")
    as_csv = client.get(
        f"/v1/projects/{project}/backlinks/analysis", headers={"Accept": "text/csv"}
    )
    assert table.status_code == 200 and as_csv.status_code == 200, as_csv.text
    lines = list(csv.DictReader(io.StringIO(as_csv.text)))
    assert [line["url_from"] for line in lines] == [r["url_from"] for r in rows]


def test_a_second_analysis_reports_the_links_new_and_lost_since_the_first(
    fake: FakeDataForSeoBacklinks, client: httpx.Client
) -> None:
    site = "shop-b.test"
    kept = Link("https://kept.test/a", f"https://{site}/", "kept", rank=90)
    removed = Link("https://removed.test/a", f"https://{site}/", "removed", rank=80)
    dropped = Link("https://dropped.test/a", f"https://{site}/", "dropped", rank=70)
    fake.links += [kept, removed, dropped]
    project = project_of(client)
    first = analyse(client, project, domain=site)
    assert first["status"] == "completed", first

    removed.lost = True  # the index saw it removed
    fake.links.remove(dropped)  # the index no longer lists it
    fake.links.append(Link("https://fresh.test/a", f"https://{site}/", "fresh", rank=60))
    second = analyse(client, project, domain=site)
    assert second["result"] == {"provider": "dataforseo", "links": 3, "new": 1, "lost": 2}

    page = read(client, project).json()
    assert (page["new"], page["lost"], page["previous_job_id"]) == (1, 2, first["id"])
    assert [r["url_from"] for r in read(client, project, new="true").json()["data"]] == [
        "https://fresh.test/a"
    ]
    lost = read(client, project, "/lost").json()["data"]
    assert {r["url_from"]: r["reason"] for r in lost} == {
        "https://removed.test/a": "lost",
        "https://dropped.test/a": "gone",
    }
    history = read(client, project, "/history").json()["data"]
    assert [(h["job_id"], h["new"], h["lost"], h["links"]) for h in history] == [
        (second["id"], 1, 2, 3),
        (first["id"], 3, 0, 3),
    ]
    # Each target keeps its own latest: another site's analysis leaves this one readable.
    fake.links.append(Link("https://x.test/a", "https://other-b.test/", "x"))
    assert analyse(client, project, domain="other-b.test")["status"] == "completed"
    assert read(client, project).json()["target"] == "other-b.test"  # the newest of any
    assert read(client, project, target=f"www.{site}").json()["job_id"] == second["id"]


def test_a_page_is_analysed_without_the_domain_timeline(
    fake: FakeDataForSeoBacklinks, client: httpx.Client
) -> None:
    page_url = "https://shop-c.test/guide"
    fake.links += [
        Link("https://one.test/a", page_url, "guide"),
        Link("https://one.test/b", "https://shop-c.test/other", "other"),
    ]
    project = project_of(client)
    job = analyse(client, project, url=page_url, mode="one_per_domain", limit=10)
    assert job["status"] == "completed", job
    assert [name for name, _ in asked(fake, page_url)] == [
        "summary",
        "backlinks",
        "referring_domains",
        "anchors",
    ]
    page = read(client, project, target=page_url).json()
    assert [r["url_to"] for r in page["data"]] == [page_url]
    assert page["timeline"] == []


def test_what_the_index_answers_is_bounded_and_stored(
    fake: FakeDataForSeoBacklinks, client: httpx.Client
) -> None:
    site = "shop-d.test"
    fake.links.append(Link("https://h.test/a", f"https://{site}/", "\x00" + "x" * 5000))
    project = project_of(client)
    job = analyse(client, project, domain=site)
    assert job["status"] == "completed", job
    anchor = read(client, project).json()["data"][0]["anchor"]
    assert len(anchor) == 2048 and anchor.endswith("x")


FAILURES = [
    (Reply(401, envelope([], 40100)), "provider_auth_failed"),
    (Reply(402, envelope([], 40200)), "provider_quota_exhausted"),
    (Reply(200, envelope([dfs_task(40210, "Insufficient funds.")])), "provider_quota_exhausted"),
    (Reply(200, envelope([dfs_task(40501, "Invalid Field: 'target'.")])), "provider_rejected"),
    (Reply(200, text="<html>maintenance</html>"), "malformed_response"),
]


@pytest.mark.parametrize(("reply", "code"), FAILURES)
def test_provider_errors_fail_the_job_with_a_code(
    fake: FakeDataForSeoBacklinks, client: httpx.Client, reply: Reply, code: str
) -> None:
    fake.links.append(Link("https://e.test/a", "https://shop-e.test/"))
    project = project_of(client)
    fake.script(reply)
    job = analyse(client, project, domain="shop-e.test")
    assert (job["status"], job["error"]["code"]) == ("failed", code), job
    assert_problem(read(client, project), 404)  # a failed job collected nothing


def test_a_busy_provider_is_retried_within_the_job(
    fake: FakeDataForSeoBacklinks, client: httpx.Client
) -> None:
    fake.links.append(Link("https://r.test/a", "https://shop-f.test/"))
    project = project_of(client)
    fake.script(Reply(200, envelope([], 50000)))  # retried once (provider_retries=1)
    job = analyse(client, project, domain="shop-f.test")
    assert job["status"] == "completed", job


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({}, "domain"),
        ({"domain": "a.test", "url": "https://a.test/"}, "url"),
        ({"domain": "https://a.test/"}, "domain"),
        ({"domain": "a.test", "limit": 1001}, "limit"),
        ({"domain": "a.test", "mode": "every"}, "mode"),
        ({"domain": "a.test", "period_days": 0}, "period_days"),
    ],
)
def test_bad_params_are_refused_naming_the_field(
    client: httpx.Client, params: dict[str, Any], field: str
) -> None:
    project = project_of(client)
    answer = client.post(
        f"/v1/projects/{project}/jobs", json={"type": "backlink_analysis", "params": params}
    )
    assert any(f.endswith(field) for f in error_fields(answer)), answer.text


def test_reads_are_the_owners_alone(app: Api, fake: FakeDataForSeoBacklinks) -> None:
    fake.links.append(Link("https://o.test/a", "https://shop-g.test/"))
    owner, other = app.client(app.account()), app.client(app.account())
    project = project_of(owner)
    assert analyse(owner, project, domain="shop-g.test")["status"] == "completed"
    for path in ("", "/lost", "/referring-domains", "/anchors", "/history"):
        assert read(owner, project, path).status_code == 200
        assert_problem(read(other, project, path), 404)


def test_analyses_over_the_daily_quota_fail_with_quota_exceeded_and_call_no_one(
    app: Api, fake: FakeDataForSeoBacklinks
) -> None:
    fake.links.append(Link("https://o.test/q", "https://shop-q.test/"))
    owner = app.account()
    app.services.quotas.set_limits(owner.user, {"backlink_analyses_daily": 1})
    client = app.client(owner)
    project = project_of(client)
    assert analyse(client, project, domain="shop-q.test")["status"] == "completed"
    calls = len(asked(fake, "shop-q.test"))
    second = analyse(client, project, domain="shop-q.test")
    assert (second["status"], second["error"]["code"]) == ("failed", "quota_exceeded")
    assert len(asked(fake, "shop-q.test")) == calls  # the refused one asked nothing
    usage = {q["quota"]: q for q in client.get("/v1/usage").json()["data"]}
    day = usage["backlink_analyses"]
    assert (day["limit"], day["used"], day["remaining"]) == (1, 1, 0)


@pytest.mark.stores("sqlite")
def test_without_dataforseo_an_analysis_is_refused_at_creation(sqlite_url: str) -> None:
    with api(make_settings(sqlite_url, dataforseo_login=None)) as running:
        client = running.client(running.account())
        project = project_of(client)
        answer = client.post(
            f"/v1/projects/{project}/jobs",
            json={"type": "backlink_analysis", "params": {"domain": "a.test"}},
        )
    body = assert_problem(answer, 422)
    assert body["type"].endswith("/provider_not_configured")
    [error] = body["errors"]
    assert error["field"] == "params.domain" and "SEOJOBS_DATAFORSEO_LOGIN" in error["message"]
    with running.services.db.read() as conn:  # nothing was stored, nothing charged
        assert conn.exec_driver_sql("SELECT count(*) FROM jobs").scalar() == 0


# -- found links monitored by backlink_refresh (issue 29.3) -----------------------------------


def monitor(client: httpx.Client, project: int, **body: Any) -> httpx.Response:
    return client.post(f"/v1/projects/{project}/backlinks/analysis/monitor", json=body)


def refresh_collection(client: httpx.Client, project: int) -> dict[str, Any]:
    found = client.get(f"/v1/projects/{project}/collection").json()["data"]
    [refresh] = [c for c in found if c["type"] == "backlink_refresh"]
    return dict(refresh)


def test_found_links_are_monitored_in_bulk_each_once(
    fake: FakeDataForSeoBacklinks, client: httpx.Client
) -> None:
    site = "shop-m.test"
    fake.links += [
        Link("https://strong.test/a", f"https://{site}/", "strong", rank=300),
        Link("https://weak.test/a", f"https://{site}/shoes", "weak", rank=20),
        Link("https://nofollow.test/a", f"https://{site}/", "nf", dofollow=False, rank=200),
        Link("https://lost.test/a", f"https://{site}/", "lost", lost=True, rank=250),
    ]
    project = project_of(client)
    assert_problem(monitor(client, project), 404)  # no analysis yet: nothing to monitor
    assert analyse(client, project, domain=site)["status"] == "completed"
    assert refresh_collection(client, project)["schedule_id"] is None

    answer = monitor(client, project, target=f"www.{site}", dofollow=True)
    assert answer.status_code == 201, answer.text
    done = answer.json()["data"]
    strong = {"donor": "https://strong.test/a", "target": f"https://{site}/"}
    weak = {"donor": "https://weak.test/a", "target": f"https://{site}/shoes"}
    assert done["added"] == [strong, weak]  # live and dofollow, strongest first
    assert (done["already_monitored"], done["monitored"], done["target"]) == (0, 2, site)
    collection = done["collection"]
    assert (collection["type"], collection["enabled"], collection["frequency"]) == (
        "backlink_refresh",
        True,
        "daily",
    )
    assert refresh_collection(client, project)["params"] == {"links": [strong, weak]}

    # Again with every live link: the two are skipped, the nofollow one joins; lost ones not.
    again = monitor(client, project, limit=5).json()["data"]
    nofollow = {"donor": "https://nofollow.test/a", "target": f"https://{site}/"}
    assert (again["added"], again["already_monitored"], again["monitored"]) == ([nofollow], 2, 3)
    # Named links: one already monitored (another spelling of it), one lost (asked for).
    named = [
        {"url_from": "HTTPS://strong.test/a", "url_to": f"https://{site}/"},
        {"url_from": "https://lost.test/a", "url_to": f"https://{site}/"},
    ]
    third_answer = monitor(client, project, links=named)
    assert third_answer.status_code == 201, third_answer.text
    third = third_answer.json()["data"]
    assert [p["donor"] for p in third["added"]] == ["https://lost.test/a"]
    assert (third["already_monitored"], third["monitored"]) == (1, 4)
    # The collection's timing and state are the user's: a paused one stays paused.
    paused = client.put(
        f"/v1/projects/{project}/collection",
        json={"backlink_refresh": {"enabled": False, "frequency": "weekly"}},
    )
    assert paused.status_code == 200, paused.text
    fake.links.append(Link("https://late.test/a", f"https://{site}/", "late", rank=1))
    assert analyse(client, project, domain=site)["status"] == "completed"
    fourth = monitor(client, project, new=True).json()["data"]
    assert [p["donor"] for p in fourth["added"]] == ["https://late.test/a"]
    kept = refresh_collection(client, project)
    assert (kept["enabled"], kept["frequency"], len(kept["params"]["links"])) == (
        False,
        "weekly",
        5,
    )
    nothing = monitor(client, project, domain_from="none.test").json()["data"]
    assert (nothing["added"], nothing["monitored"]) == ([], 5)


def test_monitoring_past_the_refreshs_limit_or_unknown_links_is_refused(
    fake: FakeDataForSeoBacklinks, client: httpx.Client
) -> None:
    site = "shop-n.test"
    fake.links += [Link(f"https://d{n}.test/a", f"https://{site}/", rank=n) for n in (1, 2)]
    project = project_of(client)
    assert analyse(client, project, domain=site)["status"] == "completed"
    unknown = [
        {"url_from": "https://d1.test/a", "url_to": f"https://{site}/"},
        {"url_from": "https://elsewhere.test/", "url_to": f"https://{site}/"},
    ]
    assert error_fields(monitor(client, project, links=unknown)) == ["links[1]"]
    both = monitor(client, project, links=unknown[:1], dofollow=True)
    assert error_fields(both) == ["dofollow"]
    assert error_fields(monitor(client, project, limit=0)) == ["limit"]
    assert error_fields(monitor(client, project, links=[{"url_from": "ftp://x"}])) == [
        "links[0].url_from",
        "links[0].url_to",
    ]
    assert_problem(monitor(client, project, target="never-analysed.test"), 404)

    full = [{"donor": f"https://m.test/{n}", "target": f"https://{site}/"} for n in range(999)]
    put = client.put(
        f"/v1/projects/{project}/collection",
        # Paused: a new collection runs at once, and its 999-link job is not what this tests
        # (firing it holds the user's lock while the requests below wait for it).
        json={"backlink_refresh": {"enabled": False, "params": {"links": full}}},
    )
    assert put.status_code == 200, put.text
    over = assert_problem(monitor(client, project), 409)  # 999 + 2 > 1,000
    assert over["type"].endswith("/tracked_limit") and "1,000" in over["detail"]
    assert len(refresh_collection(client, project)["params"]["links"]) == 999  # unchanged
    answer = monitor(client, project, limit=1)
    assert answer.status_code == 201, answer.text
    fits = answer.json()["data"]
    assert (fits["added"], fits["monitored"]) == (
        [{"donor": "https://d2.test/a", "target": f"https://{site}/"}],
        1_000,
    )
