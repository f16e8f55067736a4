"""The audit endpoints over real HTTP on both stores: the check catalogue, starting an audit
through ``/audits`` (the same job as through ``/jobs``), the latest summary (404 before the
first completed audit, and a read never starts one), an audit's issues and pages, and bad
params named by field."""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from seojobs.kinds.site_audit.params import SiteAuditParams
from tests.api_helpers import TERMINAL, Api, assert_problem, error_fields, owned, shared_api
from tests.fakes.audit_site import HOME_LINKS, PAGES, PLANTED, REACHED, AuditSite, html
from tests.waiting import wait_until

# Every code issue 13 names; the catalogue must serve each.
REQUIRED = {
    "http_4xx",
    "http_5xx",
    "broken_internal_link",
    "redirect_chain",
    "redirect_loop",
    "title_missing",
    "title_too_long",
    "title_duplicate",
    "meta_description_missing",
    "meta_description_duplicate",
    "h1_missing",
    "h1_multiple",
    "noindex",
    "linked_page_blocked_by_robots",
    "canonical_to_non_200",
    "canonical_to_redirect",
    "img_alt_missing",
    "hreflang_no_return_link",
    "thin_content",
    "sitemap_url_non_200",
    "sitemap_url_not_linked",
    "broken_external_link",
    "duplicate_content",
    "internal_link_nofollow",
    "lang_missing",
    "viewport_missing",
    "structured_data_invalid",
    "depth_too_high",
    "slow_response",
    "non_crawlable_link",
}


@pytest.fixture(scope="module")
def shared_served(module_store: str, request: pytest.FixtureRequest) -> Iterator[Api]:
    """One app with its worker per store for the module: each test keeps to its own users
    and projects (what it reads and counts is theirs)."""
    # Waiting on several audits polls the status often: the per-user budget is not what these
    # tests check, and at the default 120/minute a slow machine ran out of it (429).
    with shared_api(
        module_store,
        request,
        run_worker=True,
        allow_private_networks=True,
        rate_limit="6000/minute",
    ) as running:
        yield running


@pytest.fixture
def served(shared_served: Api) -> Iterator[Api]:
    yield from owned(shared_served)


def _jobs(client: httpx.Client, project_id: int) -> list[int]:
    answer = client.get(f"/v1/projects/{project_id}/jobs")
    assert answer.status_code == 200, answer.text
    return [j["id"] for j in answer.json()["data"]]


def test_the_catalogue_lists_every_check_with_its_severity_and_threshold(served: Api) -> None:
    client = served.client(served.account())
    answer = client.get("/v1/audit-checks")
    assert answer.status_code == 200, answer.text
    checks = {c["code"]: c for c in answer.json()["data"]}
    assert set(checks) >= REQUIRED
    assert {c["severity"] for c in checks.values()} == {"error", "warning", "notice"}
    assert checks["title_too_long"]["threshold"] == {"name": "title_max_chars", "default": 60}
    assert checks["http_4xx"]["threshold"] is None
    thresholds = SiteAuditParams.model_fields["thresholds"].annotation
    assert thresholds is not None
    for check in checks.values():  # a threshold the catalogue names can be set in params
        if check["threshold"]:
            assert check["threshold"]["name"] in thresholds.model_fields  # type: ignore[union-attr]


def test_an_audit_started_through_audits_is_read_back_as_the_latest(served: Api) -> None:
    client = served.client(served.account())
    project = client.post("/v1/projects", json={"name": "site"}).json()["data"]["id"]
    latest = f"/v1/projects/{project}/audits/latest"
    before = assert_problem(client.get(latest), 404)
    assert "site_audit" in before["detail"]
    assert client.get(f"/v1/projects/{project}/audits").json()["data"] == []
    for read in _reads_of(project, 1, 1):  # no audit 1 yet: nothing collected
        assert_problem(client.get(read), 404)
    assert_problem(client.get(f"/v1/projects/{project}/audits/1/pages", headers=CSV), 404)
    assert _jobs(client, project) == []  # reading started nothing
    site = AuditSite(generated=5, sitemaps=False)
    with site.running() as base:
        params = {"start_url": f"{base}/g/0", "thresholds": {"slow_response_ms": 600_000}}
        started = client.post(f"/v1/projects/{project}/audits", json=params)
        assert started.status_code == 202, started.text
        job = started.json()["data"]
        assert (
            job["type"] == "site_audit" and started.headers["location"] == f"/v1/jobs/{job['id']}"
        )
        done = wait_until(
            lambda: (
                (d := client.get(f"/v1/jobs/{job['id']}").json()["data"])["status"] in TERMINAL
                and d
            ),
            timeout=60,
            interval=0.2,  # an audit takes seconds: each look is a request to the app
        )
    assert done["status"] == "completed", done["error"]
    answer = client.get(latest)
    assert answer.status_code == 200, answer.text
    data = answer.json()["data"]
    assert (data["type"], data["job_id"]) == ("site_audit", job["id"])
    assert data["collected_at"]
    assert data["data"]["pages_crawled"] == 5 and data["data"]["health_score"] == 100
    listed = client.get(f"/v1/projects/{project}/audits").json()
    assert listed == {"data": [data], "next_cursor": None}
    for read in _reads_of(project, job["id"], job["id"]):
        answer = client.get(read)
        assert answer.status_code == 200, answer.text
        assert (answer.json()["job_id"], answer.json()["collected_at"]) == (
            job["id"],
            data["collected_at"],
        )
    for read in _reads_of(project, job["id"], job["id"])[:2]:
        assert client.get(read, headers=CSV).status_code == 200
    same = client.get(_reads_of(project, job["id"], job["id"])[2]).json()["data"]["counts"]
    assert same == {"new": 0, "fixed": 0, "unchanged": data["data"]["issues"]}
    assert _jobs(client, project) == [job["id"]]  # the reads started nothing


CSV = {"accept": "text/csv"}


def _reads_of(project: int, job_id: int, other: int) -> list[str]:
    """One audit's reads: its issues, its pages, its comparison with another."""
    audit = f"/v1/projects/{project}/audits/{job_id}"
    return [f"{audit}/issues", f"{audit}/pages", f"{audit}/compare/{other}"]


def test_bad_params_are_refused_naming_the_field(served: Api) -> None:
    client = served.client(served.account())
    project = client.post("/v1/projects", json={"name": "site"}).json()["data"]["id"]
    audits = f"/v1/projects/{project}/audits"
    assert "max_pages" in error_fields(
        client.post(audits, json={"start_url": "http://a.example/", "max_pages": 0})
    )
    assert "start_url" in error_fields(client.post(audits, json={"start_url": "ftp://a/"}))
    through_jobs = client.post(
        f"/v1/projects/{project}/jobs",
        json={"type": "site_audit", "params": {"start_url": "http://a.example/", "bogus": 1}},
    )
    assert "params.bogus" in error_fields(through_jobs)
    assert _jobs(client, project) == []


def test_an_audits_issues_and_pages_are_listed_filtered_and_paged(served: Api) -> None:
    client = served.client(served.account())
    project = client.post("/v1/projects", json={"name": "site"}).json()["data"]["id"]
    other = client.post("/v1/projects", json={"name": "other"}).json()["data"]["id"]
    with AuditSite().running() as base:
        params = {"start_url": f"{base}/", "thresholds": {"slow_response_ms": 600_000}}
        job = client.post(f"/v1/projects/{project}/audits", json=params).json()["data"]
        audit = f"/v1/projects/{project}/audits/{job['id']}"
        done = wait_until(
            lambda: (
                (d := client.get(f"/v1/jobs/{job['id']}").json()["data"])["status"] in TERMINAL
                and d
            ),
            timeout=120,
            interval=0.2,
        )
    assert done["status"] == "completed", done["error"]
    errors = client.get(f"{audit}/issues", params={"severity": "error", "limit": 1000}).json()
    assert errors["job_id"] == job["id"] and errors["collected_at"]
    codes = {i["code"] for i in errors["data"]}
    assert {"http_4xx", "http_5xx", "broken_internal_link", "title_missing"} <= codes
    assert {i["severity"] for i in errors["data"]} == {"error"}
    dup = client.get(f"{audit}/issues", params={"code": "title_duplicate"}).json()["data"]
    assert sorted(urlsplit(i["url"]).path for i in dup) == ["/dup-title-a", "/dup-title-b"]
    assert dup[0]["evidence"]["title"] == "The same title on two pages of it"
    seen = [i["id"] for i in _every(client, f"{audit}/issues", {"limit": 7})]
    assert len(seen) == len(set(seen)) == len(PLANTED)
    pages = client.get(f"{audit}/pages", params={"limit": 1000}).json()
    assert pages["job_id"] == job["id"] and pages["collected_at"] == errors["collected_at"]
    by_path = {urlsplit(p["url"]).path: p for p in pages["data"]}
    assert set(by_path) == REACHED and len(pages["data"]) == len(REACHED)
    home = by_path["/"]
    assert (home["status"], home["depth"], home["indexable"]) == (200, 0, True)
    # In-links: the crawled pages that link to it, each once (a nofollow link counts).
    assert home["out_links"] == len(HOME_LINKS)  # the first pages, and the hubs
    assert by_path["/no-title"]["in_links"] == 3  # home and two hubs (the first chunk)
    assert by_path["/single-inlink"]["in_links"] == 1  # one hub
    # Home, two hubs, /clean/3, /empty-link-text, /generic-link-text, /target-blank
    assert by_path["/clean/2"]["in_links"] == 7
    assert by_path["/clean/1"]["in_links"] == 5  # home, two hubs, /clean/2, /nofollow-links
    assert by_path["/deep/3"]["in_links"] == 2  # /deep/2 and /deep/4
    assert by_path["/redirect-target"]["in_links"] == 0  # reached by a redirect only
    assert by_path["/no-title"]["title"] is None
    assert by_path["/orphan"]["in_links"] == 0 and by_path["/orphan"]["depth"] is None
    assert by_path["/noindex"]["indexability_reason"] == "noindex"
    assert by_path["/no-alt"]["issues"] == ["img_alt_missing"]
    assert_problem(client.get(f"{audit}/issues", params={"severity": "fatal"}), 422)
    _filters_and_pages(client, audit, pages["data"])
    _csv_of_issues_and_pages(client, audit, seen, pages["data"])
    # Not this project's audit, or not an audit: nothing collected there.
    assert_problem(client.get(f"/v1/projects/{other}/audits/{job['id']}/pages"), 404)
    noop = client.post(f"/v1/projects/{project}/jobs", json={"type": "test_noop"}).json()
    assert_problem(client.get(f"/v1/projects/{project}/audits/{noop['data']['id']}/issues"), 404)


def _filters_and_pages(client: httpx.Client, audit: str, every: list[dict[str, Any]]) -> None:
    def paths(**query: Any) -> set[str]:
        found = client.get(f"{audit}/pages", params={"limit": 1000, **query})
        assert found.status_code == 200, found.text
        return {urlsplit(p["url"]).path for p in found.json()["data"]}

    def having(keep: Callable[[dict[str, Any]], bool]) -> set[str]:
        return {urlsplit(p["url"]).path for p in every if keep(p)}

    def status_in(lo: int, hi: int) -> Callable[[dict[str, Any]], bool]:
        return lambda p: p["status"] is not None and lo <= p["status"] <= hi

    for first in range(1, 6):
        assert paths(status=f"{first}xx") == having(status_in(first * 100, first * 100 + 99))
    assert "/gone" in paths(status="4xx") and paths(status="404") == having(status_in(404, 404))
    assert paths(status="5xx") == {"/server-error"}
    # A status is the last answer: /hop1 redirects to a 200, a loop never gets past a 301.
    assert {"/loop-a", "/loop-b"} <= paths(status="3xx") and "/hop1" in paths(status="200")
    assert paths(status="201") == set()
    indexable = having(lambda p: p["indexable"])
    assert paths(indexable="true") == indexable
    assert paths(indexable="false") == REACHED - indexable
    assert {"/private/secret", "/noindex"} <= REACHED - indexable
    assert "/private/secret" not in having(lambda p: p["status"] is not None)  # no answer
    both = paths(status="2xx", indexable="false")
    assert both == having(lambda p: status_in(200, 299)(p) and not p["indexable"])
    assert {"/noindex", "/hop1", "/canonical-to-404"} <= both
    for bad in ("4XX", "4x", "600", "40", "abc", ""):
        assert error_fields(client.get(f"{audit}/pages", params={"status": bad})) == ["status"]
    assert error_fields(client.get(f"{audit}/pages", params={"indexable": "maybe"})) == [
        "indexable"
    ]
    seqs = [p["seq"] for p in _every(client, f"{audit}/pages", {"limit": 5})]
    assert seqs == sorted(seqs) == [p["seq"] for p in every]


def _csv_rows(answer: httpx.Response) -> list[dict[str, str]]:
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/csv")
    return list(csv.DictReader(io.StringIO(answer.text)))


def _csv_of_issues_and_pages(
    client: httpx.Client, audit: str, issue_ids: list[int], every: list[dict[str, Any]]
) -> None:
    as_csv = {"accept": "text/csv"}
    issues = _csv_rows(client.get(f"{audit}/issues", headers=as_csv, params={"limit": 3}))
    assert [int(r["id"]) for r in issues] == issue_ids  # every one, whatever the limit
    errors = _csv_rows(client.get(f"{audit}/issues", headers=as_csv, params={"severity": "error"}))
    assert errors and {r["severity"] for r in errors} == {"error"}
    pages = _csv_rows(client.get(f"{audit}/pages", headers=as_csv))
    assert [r["url"] for r in pages] == [p["url"] for p in every]
    missing = _csv_rows(client.get(f"{audit}/pages", headers=as_csv, params={"status": "404"}))
    # /redirect-to-gone redirects to /gone-moved, which answers 404 (issue 30.5).
    assert sorted(urlsplit(r["url"]).path for r in missing) == [
        "/gone",
        "/gone-moved",
        "/redirect-to-gone",
    ]
    [gone] = [r for r in missing if urlsplit(r["url"]).path == "/gone"]
    assert (gone["status"], gone["indexable"], gone["indexability_reason"]) == (
        "404",
        "false",
        "client_error",
    )
    # The long title starts with a letter; a title that starts "=" would be guarded.
    [long] = [r for r in pages if r["url"].endswith("/long-title")]
    assert long["title"].startswith("A title far too long")


def _completed(client: httpx.Client, project: int, params: dict[str, Any]) -> int:
    job = client.post(f"/v1/projects/{project}/audits", json=params).json()["data"]
    done = wait_until(
        lambda: (
            (d := client.get(f"/v1/jobs/{job['id']}").json()["data"])["status"] in TERMINAL and d
        ),
        timeout=120,
        interval=0.2,
    )
    assert done["status"] == "completed", done["error"]
    return int(job["id"])


def _every(
    client: httpx.Client,
    url: str,
    query: dict[str, Any],
    rows: Callable[[dict[str, Any]], list[dict[str, Any]]] = lambda body: body["data"],
) -> list[dict[str, Any]]:
    """Every row of a list, page after page (``next_cursor``)."""
    found: list[dict[str, Any]] = []
    query = dict(query)
    while True:
        answer = client.get(url, params=query)
        assert answer.status_code == 200, answer.text
        found += rows(answer.json())
        if not answer.json()["next_cursor"]:
            return found
        query["cursor"] = answer.json()["next_cursor"]


def _all_changed(client: httpx.Client, url: str, change: str) -> set[tuple[str, str]]:
    query = {"change": change, "limit": 4}
    found = _every(client, url, query, lambda body: body["data"]["issues"])
    return {(i["code"], urlsplit(i["url"]).path) for i in found}


def test_two_audits_are_compared_by_code_and_url(
    served: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = served.client(served.account())
    project = client.post("/v1/projects", json={"name": "site"}).json()["data"]["id"]
    other = client.post("/v1/projects", json={"name": "other"}).json()["data"]["id"]
    with AuditSite().running() as base:
        params = {"start_url": f"{base}/", "thresholds": {"slow_response_ms": 600_000}}
        first = _completed(client, project, params)
        # Between the audits the site fixes its missing title and loses an h1.
        monkeypatch.setitem(PAGES, "/no-title", html("no-title"))
        # ... and takes a title a spreadsheet would run (CSV cells are guarded).
        formula = "=SUM(1+1) reads like a formula in garden care"
        monkeypatch.setitem(
            PAGES, "/clean/2", html("clean-2", title=formula, h1=(), links=("/", "/clean/1"))
        )
        second = _completed(client, project, params)
    # Another project's completed audit (what it found is not compared): a one-page site.
    with AuditSite(generated=1, sitemaps=False).running() as small:
        elsewhere = _completed(client, other, {**params, "start_url": f"{small}/g/0"})
    before = client.get(f"/v1/projects/{project}/audits/{first}/issues", params={"limit": 1000})
    total = len(before.json()["data"])
    url = f"/v1/projects/{project}/audits/{second}/compare/{first}"
    answer = client.get(url)
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert (body["job_id"], body["other_job_id"]) == (second, first)
    assert body["collected_at"] and body["other_collected_at"]
    assert body["data"]["counts"] == {"new": 1, "fixed": 1, "unchanged": total - 1}
    by_code = {c["code"]: c for c in body["data"]["by_code"]}
    assert by_code["h1_missing"] == {
        "code": "h1_missing",
        "severity": by_code["h1_missing"]["severity"],
        "new": 1,
        "fixed": 0,
        "unchanged": 1,
    }
    assert (by_code["title_missing"]["fixed"], by_code["title_missing"]["new"]) == (1, 0)
    assert _all_changed(client, url, "new") == {("h1_missing", "/clean/2")}
    assert _all_changed(client, url, "fixed") == {("title_missing", "/no-title")}
    unchanged = _all_changed(client, url, "unchanged")
    assert len(unchanged) == total - 1 and ("h1_missing", "/no-h1") in unchanged
    pages = f"/v1/projects/{project}/audits/{second}/pages"
    [clean2] = [p for p in _every(client, pages, {}) if p["url"].endswith("/clean/2")]
    assert clean2["title"] == formula  # JSON keeps it as it is
    [row] = [r for r in _csv_rows(client.get(pages, headers=CSV)) if r["url"] == clean2["url"]]
    assert row["title"] == "'" + formula
    itself = client.get(f"/v1/projects/{project}/audits/{first}/compare/{first}").json()
    assert itself["data"]["counts"] == {"new": 0, "fixed": 0, "unchanged": total}
    # The other way round, new and fixed swap.
    back = client.get(f"/v1/projects/{project}/audits/{first}/compare/{second}").json()
    assert [i["code"] for i in back["data"]["issues"]] == ["title_missing"]
    filtered = client.get(url, params={"change": "unchanged", "code": "h1_missing"}).json()
    assert [urlsplit(i["url"]).path for i in filtered["data"]["issues"]] == ["/no-h1"]
    # Not both completed audits of this project: 404; a bad change: 422.
    assert_problem(client.get(f"/v1/projects/{project}/audits/{second}/compare/{elsewhere}"), 404)
    assert_problem(client.get(f"/v1/projects/{other}/audits/{elsewhere}/compare/{first}"), 404)
    noop = client.post(f"/v1/projects/{project}/jobs", json={"type": "test_noop"}).json()
    assert_problem(client.get(f"{url.rsplit('/', 1)[0]}/{noop['data']['id']}"), 404)
    assert error_fields(client.get(url, params={"change": "gone"})) == ["change"]
