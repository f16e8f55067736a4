"""The audit endpoints over real HTTP on both stores: the check catalogue, starting an audit
through ``/audits`` (the same job as through ``/jobs``), the latest summary (404 before the
first completed audit, and a read never starts one), an audit's issues and pages, and bad
params named by field."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from seojobs.kinds.site_audit.params import SiteAuditParams
from tests.api_helpers import TERMINAL, Api, api, assert_problem, error_fields
from tests.conftest import make_settings
from tests.fakes.audit_site import PLANTED, REACHED, AuditSite
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


@pytest.fixture
def served(store_url: str) -> Iterator[Api]:
    settings = make_settings(store_url, allow_private_networks=True)
    with api(settings, run_worker=True) as running:
        yield running


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
    assert _jobs(client, project) == [job["id"]]  # the reads started nothing


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
    seen: list[int] = []
    query: dict[str, Any] = {"limit": 7}
    while True:
        answer = client.get(f"{audit}/issues", params=query).json()
        seen += [i["id"] for i in answer["data"]]
        if not answer["next_cursor"]:
            break
        query["cursor"] = answer["next_cursor"]
    assert len(seen) == len(set(seen)) == len(PLANTED)
    pages = client.get(f"{audit}/pages", params={"limit": 1000}).json()
    assert {urlsplit(p["url"]).path for p in pages["data"]} == REACHED
    [home] = [p for p in pages["data"] if urlsplit(p["url"]).path == "/"]
    assert (home["status"], home["depth"], home["indexable"]) == (200, 0, True)
    assert_problem(client.get(f"{audit}/issues", params={"severity": "fatal"}), 422)
    # Not this project's audit, or not an audit: nothing collected there.
    assert_problem(client.get(f"/v1/projects/{other}/audits/{job['id']}/pages"), 404)
    noop = client.post(f"/v1/projects/{project}/jobs", json={"type": "test_noop"}).json()
    assert_problem(client.get(f"/v1/projects/{project}/audits/{noop['data']['id']}/issues"), 404)
