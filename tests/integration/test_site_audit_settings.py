"""A project's audit settings (issue 30.4) on both stores: per-check severities and checks
turned off change the issue list and the health score; thresholds are the defaults of the
project's audits (a request's own params win, key by key); include and exclude patterns keep
the crawler off URLs (the loopback site counts every request); query parameters ignored and
sorted make one page of several URLs; a crawl time budget ends the crawl, not the audit. And
``/v1/projects/{id}/audit-settings`` reads and replaces them, bad input named by field."""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response
from starlette.routing import Route

from seojobs.kinds.site_audit.params import AuditSettings
from seojobs.records import UserRecord
from seojobs.services import Services
from tests.api_helpers import (
    Api,
    assert_problem,
    error_fields,
    shared_idle_per_test,  # noqa: F401  (this module's ``idle``: one app per store)
)
from tests.fakes.audit_site import AuditSite, words
from tests.fakes.server import serve
from tests.waiting import run_until_final

HOME_LINKS = (
    "/a",
    "/notitle",
    "/private/secret",
    "/a?utm_source=news&z=1&b=2",
    "/a?b=2&utm_campaign=winter&z=1",
)


def _page(title: str | None, links: tuple[str, ...] = ()) -> str:
    anchors = "".join(f'<a href="{href}">link {n}</a>' for n, href in enumerate(links))
    head = f"<title>{title}</title>" if title else ""
    return f"<!DOCTYPE html><html lang='en'><head>{head}</head><body><h1>Page</h1>" + (
        f"<p>{words(title or 'none', 50)}</p>{anchors}</body></html>"
    )


class Site:
    """Four pages, one without a title (``title_missing``, an error), counted by path and
    query."""

    def __init__(self) -> None:
        self.hits: Counter[tuple[str, str]] = Counter()
        self._lock = threading.Lock()

    def app(self) -> Starlette:
        pages = {
            "/": _page("The home page of the settings site", HOME_LINKS),
            "/a": _page("Page a of the settings site"),
            "/notitle": _page(None),
            "/private/secret": _page("A page the crawl may be kept off"),
        }

        def any_path(request: Request) -> Response:
            with self._lock:
                self.hits[(request.url.path, request.url.query)] += 1
            if request.url.path == "/robots.txt":
                return PlainTextResponse("User-agent: *\nAllow: /\n")
            page = pages.get(request.url.path)
            return HTMLResponse(page) if page else PlainTextResponse("none", status_code=404)

        return Starlette(routes=[Route("/{path:path}", any_path, methods=["GET", "HEAD"])])

    def paths(self) -> Counter[str]:
        found: Counter[str] = Counter()
        for (path, _query), n in self.hits.items():
            found[path] += n
        return found


async def _audit(
    services: Services, user: UserRecord, project_id: int, params: dict[str, Any]
) -> tuple[dict[str, Any], list[tuple[str, str, str | None]]]:
    """The audit's summary and its issues as (code, severity, url)."""
    job, _ = services.jobs.create(user, "site_audit", params, project_id=project_id)
    done = await run_until_final(services, user, job)
    assert done.state == "completed", done.error
    issues = [
        (f.code, f.severity, (f.data or {}).get("url"))
        for f in services.jobs.findings(user, job.id, limit=1000)
    ]
    return dict(done.result or {}), issues


async def test_severities_and_disabled_checks_change_the_issues_and_the_health_score(
    audit_services: Services,
) -> None:
    services = audit_services
    user = services.accounts.create_user("alice").user
    project = services.accounts.create_project(user, "site").id
    site = Site()
    with serve(site.app()) as base:
        # Issues are counted below: a page served slowly on a loaded machine is no extra
        # slow_response (as test_site_audit's RELAXED).
        start = {
            "start_url": f"{base}/",
            "include_sitemaps": False,
            "thresholds": {"slow_response_ms": 600_000},
        }
        before, found_before = await _audit(services, user, project, start)
        settings = AuditSettings.model_validate(
            {
                "severities": {"title_missing": "notice"},
                "disabled_checks": ["open_graph_missing", "favicon_missing"],
            }
        )
        services.audits.set_project_settings(user, project, settings)
        after, found_after = await _audit(services, user, project, start)
        # A request's own severities win over the project's, code by code.
        asked = {**start, "severities": {"title_missing": "warning"}}
        own, found_own = await _audit(services, user, project, asked)
    notitle = f"{base}/notitle"
    assert ("title_missing", "error", notitle) in found_before
    assert ("title_missing", "notice", notitle) in found_after
    assert ("title_missing", "warning", notitle) in found_own
    for code in ("open_graph_missing", "favicon_missing"):
        assert code in before["issues_by_code"]
        assert code not in after["issues_by_code"]
        assert not [f for f in found_after if f[0] == code]
        assert code not in own["issues_by_code"]  # the project's, kept under the request's
    # The page without a title was the only one with an error: no longer.
    errors_before = {url for _code, severity, url in found_before if severity == "error"}
    assert errors_before == {notitle}
    assert not [f for f in found_after if f[1] == "error"]
    pages = before["pages_crawled"]
    assert before["health_score"] == round(100 * (pages - 1) / pages)
    assert after["health_score"] == own["health_score"] == 100
    assert after["issues_by_severity"]["error"] == 0
    assert after["issues_by_severity"]["notice"] > before["issues_by_severity"]["notice"] - (
        before["issues_by_code"]["open_graph_missing"] + before["issues_by_code"]["favicon_missing"]
    )


async def test_thresholds_of_the_project_are_its_audits_defaults(
    audit_services: Services,
) -> None:
    services = audit_services
    user = services.accounts.create_user("alice").user
    project = services.accounts.create_project(user, "site").id
    other = services.accounts.create_project(user, "other").id
    services.audits.set_project_settings(
        user,
        project,
        AuditSettings.model_validate({"thresholds": {"title_max_chars": 10, "max_links": 3}}),
    )
    site = Site()
    with serve(site.app()) as base:
        start = {"start_url": f"{base}/", "include_sitemaps": False, "max_pages": 1}
        job, _ = services.jobs.create(user, "site_audit", start, project_id=project)
        mine, _ = services.jobs.create(
            user, "site_audit", {**start, "thresholds": {"max_links": 50}}, project_id=project
        )
        plain, _ = services.jobs.create(user, "site_audit", start, project_id=other)
    thresholds = job.params["thresholds"]
    assert (thresholds["title_max_chars"], thresholds["max_links"]) == (10, 3)
    assert thresholds["title_min_chars"] == 20  # not set by the project: the server's
    # The request's threshold wins; the project's others stay.
    assert (
        mine.params["thresholds"]["title_max_chars"],
        mine.params["thresholds"]["max_links"],
    ) == (
        10,
        50,
    )
    assert plain.params["thresholds"]["title_max_chars"] == 60  # another project: untouched


async def test_patterns_keep_the_crawler_off_urls_and_parameters_make_one_page(
    audit_services: Services,
) -> None:
    services = audit_services
    user = services.accounts.create_user("alice").user
    project = services.accounts.create_project(user, "site").id
    rules = {
        "exclude_patterns": ["/private/*"],
        "ignore_params": ["utm_*"],
        "sort_params": True,
    }
    services.audits.set_project_settings(user, project, AuditSettings.model_validate(rules))
    site = Site()
    with serve(site.app()) as base:
        start = {"start_url": f"{base}/", "include_sitemaps": False}
        summary, _issues = await _audit(services, user, project, start)
        counted = site.paths()
        queries = {query for (path, query), _n in site.hits.items() if path == "/a"}
        only = Site()
    assert counted["/private/secret"] == 0  # never requested
    # Two links with utm_* parameters in another order: one URL, fetched once.
    assert queries == {"", "b=2&z=1"}
    assert site.hits[("/a", "b=2&z=1")] == 1
    assert summary["pages_crawled"] == 4  # /, /a, /a?b=2&z=1, /notitle

    # Only what include_patterns match is crawled (the start URL always is).
    with serve(only.app()) as base:
        start = {"start_url": f"{base}/", "include_sitemaps": False, "include_patterns": ["/a*"]}
        summary, _issues = await _audit(services, user, project, start)
    assert {path for path, _q in only.hits} == {"/", "/a", "/robots.txt"}
    assert summary["pages_crawled"] == 3


@pytest.mark.stores("sqlite")
async def test_a_crawl_time_budget_ends_the_crawl_and_the_audit_completes(
    audit_services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEOJOBS_SITE_AUDIT_CONCURRENCY", "1")
    services = audit_services
    user = services.accounts.create_user("alice").user
    project = services.accounts.create_project(user, "site").id
    site = AuditSite(generated=200, delay=0.2, sitemaps=False)
    with site.running() as base:
        params = {"start_url": f"{base}/g/0", "crawl_seconds": 1}
        summary, _issues = await _audit(services, user, project, params)
    assert summary["crawl_budget_hit"] is True
    assert 1 <= summary["pages_crawled"] < 200
    assert (
        sum(n for path, n in site.hits.items() if path.startswith("/g/"))
        == summary["pages_crawled"]
    )


# -- the API ------------------------------------------------------------------------------------


def test_settings_are_read_and_replaced_through_the_api(idle: Api) -> None:
    account = idle.account()
    client = idle.client(account, in_process=True)
    project = client.post("/v1/projects", json={"name": "audited"}).json()["data"]["id"]
    url = f"/v1/projects/{project}/audit-settings"
    empty = client.get(url)
    assert empty.status_code == 200, empty.text
    assert empty.json()["set"] == []
    assert empty.json()["data"]["thresholds"]["title_max_chars"] == 60
    body = {
        "severities": {"title_missing": "notice"},
        "disabled_checks": ["h2_missing"],
        "thresholds": {"title_max_chars": 50},
        "exclude_patterns": ["/tag/*"],
        "ignore_params": ["utm_*"],
        "sort_params": True,
        "crawl_seconds": 600,
    }
    put = client.put(url, json=body)
    assert put.status_code == 200, put.text
    again = client.get(url).json()
    assert again == put.json()
    assert set(again["set"]) == set(body)
    assert again["data"]["severities"] == {"title_missing": "notice"}
    assert again["data"]["thresholds"]["title_max_chars"] == 50
    assert again["data"]["thresholds"]["title_min_chars"] == 20
    # A project's audits get them: the audit's params say so.
    started = client.post(
        f"/v1/projects/{project}/audits",
        json={"start_url": "https://example.com/", "thresholds": {"max_links": 7}},
    )
    assert started.status_code == 202, started.text
    job = idle.services.jobs.get(account.user, started.json()["data"]["id"])
    assert job.params["severities"] == {"title_missing": "notice"}
    assert job.params["thresholds"]["title_max_chars"] == 50
    assert job.params["thresholds"]["max_links"] == 7
    assert job.params["exclude_patterns"] == ["/tag/*"]
    # {} resets them.
    reset = client.put(url, json={})
    assert reset.status_code == 200
    assert reset.json()["set"] == []


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"severities": {"no_such_check": "error"}}, "severities"),
        ({"severities": {"title_missing": "fatal"}}, "severities.title_missing"),
        ({"disabled_checks": ["no_such_check"]}, "disabled_checks"),
        ({"thresholds": {"title_max_chars": 0}}, "thresholds.title_max_chars"),
        ({"thresholds": {"no_such": 1}}, "thresholds.no_such"),
        ({"crawl_seconds": 0}, "crawl_seconds"),
        ({"ignore_params": ["a=b"]}, "ignore_params[0]"),
        ({"exclude_patterns": ["x" * 301]}, "exclude_patterns[0]"),
        ({"unknown": 1}, "unknown"),
    ],
)
def test_bad_settings_are_named_by_field(idle: Api, body: dict[str, Any], field: str) -> None:
    client = idle.client(idle.account(), in_process=True)
    project = client.post("/v1/projects", json={"name": "audited"}).json()["data"]["id"]
    answer = client.put(f"/v1/projects/{project}/audit-settings", json=body)
    assert any(f.endswith(field) for f in error_fields(answer)), answer.text
    # Nothing stored.
    assert client.get(f"/v1/projects/{project}/audit-settings").json()["set"] == []


def test_another_users_project_settings_are_not_found(idle: Api) -> None:
    owner = idle.client(idle.account(), in_process=True)
    project = owner.post("/v1/projects", json={"name": "audited"}).json()["data"]["id"]
    stranger = idle.client(idle.account(), in_process=True)
    url = f"/v1/projects/{project}/audit-settings"
    assert_problem(stranger.get(url), 404)
    assert_problem(stranger.put(url, json={"sort_params": True}), 404)
    assert owner.get(url).json()["set"] == []
