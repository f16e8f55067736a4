"""``site_audit`` end to end on both stores: a real worker crawls a fixture site on loopback
with planted issues next to clean pages; the failures it ends with; the max_pages cap."""

from __future__ import annotations

import asyncio
import socket
import threading
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from sqlalchemy import func, select
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response
from starlette.routing import Route

from seojobs.engine.worker import Worker
from seojobs.kinds import load_registry
from seojobs.kinds.site_audit.crawler import BACKLOG
from seojobs.kinds.site_audit.pagetable import PAGE_TABLE
from seojobs.records import UserRecord
from seojobs.services import NotFound, Services
from seojobs.settings import Settings
from seojobs.store import kindrows
from seojobs.store.db import Database
from seojobs.store.tables import collections, findings, job_items
from tests.conftest import make_settings
from tests.fakes.audit_site import PLANTED, REACHED, AuditSite
from tests.fakes.server import serve
from tests.procs import Procs
from tests.waiting import await_until, run_until_final, wait_until

# No check may depend on how fast the machine is today.
RELAXED = {"thresholds": {"slow_response_ms": 600_000}}

audit_pages = kindrows.declare(PAGE_TABLE)


def _settings(store_url: str) -> Settings:
    return make_settings(store_url, allow_private_networks=True, fetch_host_concurrency=4)


def _path(url: str) -> str:
    return urlsplit(url).path


def _all_findings(services: Services, user: UserRecord, job_id: int) -> list[Any]:
    return services.jobs.findings(user, job_id, limit=10_000)


@pytest.fixture
def audit_services(store_url: str) -> Any:
    settings = _settings(store_url)
    services = Services(Database(store_url), settings, load_registry(settings))
    yield services
    services.db.dispose()


async def test_an_audit_reports_each_planted_issue_on_its_page_and_nothing_on_clean_ones(
    audit_services: Services,
) -> None:
    services = audit_services
    user = services.accounts.create_user("alice").user
    project = services.accounts.create_project(user, "site")
    site = AuditSite()
    with site.running() as base:
        job, _ = services.jobs.create(
            user, "site_audit", {"start_url": f"{base}/", **RELAXED}, project_id=project.id
        )
        with pytest.raises(NotFound):  # nothing collected before an audit completes
            services.collections.latest(user, project.id, "site_audit")
        done = await run_until_final(services, user, job)
    assert done.state == "completed", done.error
    found = _all_findings(services, user, job.id)
    assert {(f.code, _path(f.data["url"])) for f in found} == PLANTED
    assert len(found) == len(PLANTED)  # each once
    items = services.jobs.items(user, job.id, limit=1000)
    assert {_path(i.data["url"]) for i in items if i.data} == REACHED
    # Every page fetched once, but for a redirect loop's (each hop is a page of its own); a
    # redirect's target once, as the last hop of /hop1 (its item carries that answer); the
    # page robots.txt disallows never.
    twice = {path for path, n in site.hits.items() if n > 1}
    assert twice == {"/loop-a", "/loop-b"}
    assert site.hits["/redirect-target"] == 1
    records = {_path(i.data["url"]): i.result for i in items if i.data and i.result}
    target = records["/redirect-target"]  # audited from /hop1's final answer, as its own page
    # Home -> /links-redirect -> /hop1 -> its target.
    assert (target["status"], target["depth"], target["redirects"]) == (200, 3, 0)
    assert (target["indexable"], target["title"]) == (
        True,
        "Fixture page redirect-target on garden care",
    )
    assert "/private/secret" not in site.hits
    # Links to the other site: each checked once, HEAD first, GET where HEAD is refused.
    assert site.elsewhere == {
        "GET /robots.txt": 1,
        "HEAD /ext/ok": 1,
        "HEAD /ext/get": 1,
        "GET /ext/get": 1,
        "HEAD /ext/gone": 1,
    }
    # Each page keeps the outcome of its external links (a resumed audit starts from them).
    outcomes = {
        path: {(_path(o["url"]), o["state"], o["status"]) for o in records[path]["external"]}
        for path in ("/clean/3", "/links-external-broken", "/clean/1")
    }
    assert outcomes == {
        "/clean/3": {("/ext/ok", "checked", 200), ("/ext/get", "checked", 200)},
        "/links-external-broken": {("/ext/gone", "checked", 404)},
        "/clean/1": set(),
    }
    latest = services.collections.latest(user, project.id, "site_audit")
    summary = latest.data
    assert latest.job_id == job.id
    assert summary["pages_crawled"] == len(REACHED) - 1
    assert summary["pages_blocked_by_robots"] == 1
    assert summary["max_pages_hit"] is False
    assert summary["issues"] == len(PLANTED)
    assert sum(summary["issues_by_severity"].values()) == len(PLANTED)
    assert summary["issues_by_code"]["title_duplicate"] == 2
    assert 0 < summary["health_score"] < 100
    # What a page record holds.
    [clean] = [i.result for i in items if i.data and _path(i.data["url"]) == "/clean/1"]
    assert clean is not None
    assert (clean["status"], clean["depth"], clean["indexable"]) == (200, 1, True)
    assert clean["title"] == "Fixture page clean-1 on garden care"
    assert clean["canonical"] == f"{base}/clean/1" and clean["issues"] == []
    assert clean["words"] > 200 and clean["out_links"] == 1 and clean["content_hash"]


async def test_a_crawl_that_reaches_max_pages_completes_and_says_so(
    audit_services: Services,
) -> None:
    services = audit_services
    user = services.accounts.create_user("alice").user
    site = AuditSite(generated=50, sitemaps=False)
    with site.running() as base:
        job, _ = services.jobs.create(
            user, "site_audit", {"start_url": f"{base}/g/0", "max_pages": 7, **RELAXED}
        )
        done = await run_until_final(services, user, job)
    assert done.state == "completed", done.error
    assert done.items_total == done.items_done == 7
    assert done.result is not None and done.result["max_pages_hit"] is True
    assert len([p for p in site.hits if p.startswith("/g/")]) == 7


async def test_max_depth_bounds_the_clicks_followed(audit_services: Services) -> None:
    services = audit_services
    user = services.accounts.create_user("alice").user
    site = AuditSite(generated=50, sitemaps=False)
    with site.running() as base:
        job, _ = services.jobs.create(
            user, "site_audit", {"start_url": f"{base}/g/0", "max_depth": 2, **RELAXED}
        )
        done = await run_until_final(services, user, job)
    assert done.state == "completed", done.error
    # Depth 0: /g/0; 1: /g/1-2; 2: /g/3-6.
    assert {p for p in site.hits if p.startswith("/g/")} == {f"/g/{n}" for n in range(7)}


async def test_a_site_without_robots_txt_or_sitemaps_is_told_so(audit_services: Services) -> None:
    """The two site-file checks the fixture site cannot plant next to its sitemaps: reported
    once each, on robots.txt and on the start URL, and nothing on the (clean) pages."""
    services = audit_services
    user = services.accounts.create_user("alice").user
    site = AuditSite(robots="", generated=3, sitemaps=False)
    with site.running() as base:
        job, _ = services.jobs.create(user, "site_audit", {"start_url": f"{base}/g/0", **RELAXED})
        done = await run_until_final(services, user, job)
        # Not looked for: not reported.
        unread, _ = services.jobs.create(
            user,
            "site_audit",
            {"start_url": f"{base}/g/0", "include_sitemaps": False, **RELAXED},
        )
        unread_done = await run_until_final(services, user, unread)
    assert done.state == unread_done.state == "completed", (done.error, unread_done.error)
    found = {(f.code, _path(f.data["url"])) for f in _all_findings(services, user, job.id)}
    assert found == {("robots_txt_missing", "/robots.txt"), ("sitemap_missing", "/g/0")}
    found = {(f.code, _path(f.data["url"])) for f in _all_findings(services, user, unread.id)}
    assert found == {("robots_txt_missing", "/robots.txt")}


@pytest.mark.parametrize(
    ("robots", "says"),
    [("User-agent: *\nDisallow: /\n", "disallows"), (None, "answered 503")],
)
async def test_a_start_url_disallowed_by_robots_fails_the_audit(
    audit_services: Services, robots: str | None, says: str
) -> None:
    """Disallowed, or robots.txt answering 5xx (crawlers then take everything as
    disallowed): the audit fails without fetching a page."""
    services = audit_services
    user = services.accounts.create_user("alice").user
    site = AuditSite(robots=robots)
    with site.running() as base:
        job, _ = services.jobs.create(user, "site_audit", {"start_url": f"{base}/"})
        done = await run_until_final(services, user, job)
    assert (done.state, done.error_code) == ("failed", "blocked_by_robots")
    assert done.error is not None and says in str(done.error)
    assert set(site.hits) == {"/robots.txt"}


async def test_a_start_url_that_does_not_answer_fails_the_audit(
    audit_services: Services,
) -> None:
    services = audit_services
    user = services.accounts.create_user("alice").user
    with socket.socket() as closed:  # a port nothing listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    job, _ = services.jobs.create(user, "site_audit", {"start_url": f"http://127.0.0.1:{port}/"})
    done = await run_until_final(services, user, job)
    assert (done.state, done.error_code) == ("failed", "target_unreachable")


@pytest.mark.stores("sqlite")  # what the crawl records of a silent page; not the store
async def test_a_page_that_does_not_answer_in_time_is_recorded_with_its_error(
    sqlite_url: str,
) -> None:
    """A page whose fetch times out is a page of the audit (no answer: page_unreachable), never
    left out; the pages it would have linked are not known, the others are crawled."""
    released = threading.Event()

    async def any_path(request: Request) -> Response:
        path = request.url.path
        if path == "/robots.txt":
            return PlainTextResponse("User-agent: *\nAllow: /\n")
        if path == "/silent":  # answers nothing before the test ends
            await asyncio.to_thread(released.wait, 60)
        links = {"/": '<a href="/silent">s</a><a href="/ok">o</a>', "/silent": '<a href="/x">x</a>'}
        return HTMLResponse(f"<title>{path}</title>{links.get(path, '')}")

    # Long enough for a loaded machine's answers, short for the test: the silent page costs it.
    settings = make_settings(sqlite_url, allow_private_networks=True, fetch_timeout=2.0)
    services = Services(Database(sqlite_url), settings, load_registry(settings))
    user = services.accounts.create_user("alice").user
    try:
        with serve(Starlette(routes=[Route("/{path:path}", any_path)])) as base:
            job, _ = services.jobs.create(user, "site_audit", {"start_url": f"{base}/", **RELAXED})
            done = await run_until_final(services, user, job)
            released.set()
    finally:
        released.set()
        services.db.dispose()
    assert done.state == "completed", done.error
    pages = {_path(i.data["url"]): i for i in services.jobs.items(user, job.id)}
    assert set(pages) == {"/", "/ok", "/silent"}
    silent = pages["/silent"]
    assert (silent.state, silent.outcome) == ("done", "crawled")
    assert silent.result is not None
    assert (silent.result["status"], silent.result["error_kind"]) == (None, "timeout")
    assert silent.result["issues"] == ["page_unreachable"]
    found = {(f.code, _path(f.data["url"])) for f in _all_findings(services, user, job.id)}
    assert {path for code, path in found if code == "page_unreachable"} == {"/silent"}


def test_an_audit_over_its_page_quota_is_stored_failed(audit_services: Services) -> None:
    services = audit_services
    user = services.accounts.create_user("alice").user
    user = services.quotas.set_limits(user, {"audit_pages_daily": 100})
    first, _ = services.jobs.create(
        user, "site_audit", {"start_url": "http://127.0.0.1:9/", "max_pages": 60}
    )
    second, _ = services.jobs.create(
        user, "site_audit", {"start_url": "http://127.0.0.1:9/", "max_pages": 60}
    )
    assert first.state == "pending"
    assert (second.state, second.error_code) == ("failed", "quota_exceeded")
    usage = services.quotas.usage(user)
    assert (usage["audit_pages"].used, usage["audit_pages_month"].used) == (60, 60)


@pytest.mark.slow
def test_a_1000_page_audit_resumes_after_its_worker_is_sigkilled(
    audit_services: Services, store_url: str, tmp_path: Path
) -> None:
    """The frontier is the job's items: the worker that resumes the audit fetches only the
    pages not yet recorded (those in flight at the kill again: at most its concurrency, and
    ``BACKLOG`` times as many whose results waited for their write),
    and loses none that were discovered. External links checked before the kill are stored
    with the pages that link to them, and not checked again."""
    services = audit_services
    pages, concurrency = 1000, 4
    procs = Procs(store_url, tmp_path)
    user = services.accounts.create_user("alice").user
    env = {
        "SEOJOBS_LEASE_SECONDS": "1.5",
        "SEOJOBS_ALLOW_PRIVATE_NETWORKS": "true",
        "SEOJOBS_SITE_AUDIT_CONCURRENCY": str(concurrency),
    }
    site = AuditSite(generated=pages, delay=0.005, sitemaps=False, external=True)
    try:
        with site.running() as base:
            job, _ = services.jobs.create(user, "site_audit", {"start_url": f"{base}/g/0"})
            victim = procs.worker(**env)
            wait_until(lambda: services.jobs.get(user, job.id).items_done >= 200, timeout=60)
            procs.replace(victim, **env)
            killed_at = services.jobs.get(user, job.id).items_done
            wait_until(lambda: services.jobs.get(user, job.id).is_final, timeout=120)
    finally:
        procs.stop_all()
    done = services.jobs.get(user, job.id)
    assert done.state == "completed", (done.error, procs.exits())
    assert killed_at < pages  # killed mid-audit
    assert done.items_total == done.items_done == pages
    urls = [i.data["url"] for i in services.jobs.items(user, job.id, limit=pages + 1) if i.data]
    assert sorted(map(_path, urls)) == sorted(f"/g/{n}" for n in range(pages))
    fetched = {path: n for path, n in site.hits.items() if path.startswith("/g/")}
    assert len(fetched) == pages
    # Those in flight at each claim lost (the kill's; under load, maybe one whose heartbeats
    # came too late for the 1.5 s lease) fetched again.
    lost = done.rescue_count
    again = sum(n - 1 for n in fetched.values())
    assert lost >= 1 and again <= (1 + BACKLOG) * concurrency * lost, (lost, fetched)
    assert max(fetched.values()) <= 1 + lost, (lost, fetched)
    assert done.result is not None and done.result["pages_crawled"] == pages
    # Checked by the first worker (the first page links to them), once: again only by a claim
    # that lost the first one's before its page was written (under load, late heartbeats).
    assert set(site.elsewhere) == {
        "GET /robots.txt",
        "HEAD /ext/ok",
        "HEAD /ext/get",
        "GET /ext/get",
    }
    assert all(n <= lost for n in site.elsewhere.values()), (lost, site.elsewhere)
    # The pages table, written once the crawl was complete: every page once, with in-links.
    _job, stored = services.audits.pages(user, done.project_id, job.id, limit=pages + 1)
    assert sorted(_path(p.url) for p in stored) == sorted(f"/g/{n}" for n in range(pages))
    assert {_path(p.url): p.in_links for p in stored}["/g/0"] == pages - 1  # all link home


async def test_deleting_a_project_stops_its_audit_and_deletes_its_pages_and_findings(
    audit_services: Services,
) -> None:
    services = audit_services
    user = services.accounts.create_user("alice").user
    doomed = services.accounts.create_project(user, "doomed")
    kept = services.accounts.create_project(user, "kept")
    site = AuditSite(generated=200, delay=0.2, sitemaps=False)
    worker = Worker(services.db, services.settings, services.registry)
    running = asyncio.create_task(worker.run())
    try:
        with site.running() as base:
            job, _ = services.jobs.create(
                user, "site_audit", {"start_url": f"{base}/g/0"}, project_id=doomed.id
            )

            async def crawling() -> bool:
                return (await asyncio.to_thread(services.jobs.get, user, job.id)).items_done >= 5

            await await_until(crawling, timeout=60)
            await asyncio.to_thread(services.accounts.delete_project, user, doomed.id)
            # The worker lets the audit go at its next write; had it crawled on, it would
            # only have let go once every page was fetched.

            async def dropped() -> bool:
                return job.id not in worker.running

            await await_until(dropped, timeout=60)
            fetched = len([p for p in site.hits if p.startswith("/g/")])
            # The same worker goes on with other work: a small audit in another project.
            with AuditSite(generated=3, sitemaps=False).running() as small:
                other, _ = services.jobs.create(
                    user, "site_audit", {"start_url": f"{small}/g/0"}, project_id=kept.id
                )

                async def other_done() -> bool:
                    return (await asyncio.to_thread(services.jobs.get, user, other.id)).is_final

                await await_until(other_done, timeout=60)
    finally:
        worker.stop()
        await running
    with pytest.raises(NotFound):
        services.jobs.get(user, job.id)
    assert services.jobs.get(user, other.id).state == "completed"
    with services.db.read() as conn:
        for table in (job_items, findings, collections, audit_pages):
            rows = conn.execute(select(func.count()).where(table.c.job_id == job.id))
            assert rows.scalar_one() == 0, table.name
    assert fetched < 200


def _hostile_site() -> Starlette:
    """Pages whose text holds NUL (issue 25.1) and JSON-LD nested 5,000 deep (issue 25.2)."""
    ld = '{"@context": "https://schema.org", "@type": "Thing", "name": "a\\u0000b\\ud800"}'
    home = (
        "<!doctype html><html><head><title>Home\x00 page of a fixture site on soil</title>"
        '<meta name="description" content="About soil\x00 and water\x00 for the garden.">'
        f'<script type="application/ld+json">{ld}</script></head>'
        "<body><h1>Soil\x00 heading</h1>"
        '<a href="/deep-array">deep\x00 array</a> <a href="/deep-object">deep object\x00</a>'
        "</body></html>"
    )
    nested = {
        "/deep-array": "[" * 5000 + "]" * 5000,
        "/deep-object": '{"a":' * 5000 + "1" + "}" * 5000,
    }

    def page(request: Request) -> HTMLResponse:
        path = request.url.path
        if path == "/":
            return HTMLResponse(home)
        return HTMLResponse(
            f"<html><head><title>Deep {path}</title>"
            f'<script type="application/ld+json">{nested[path]}</script></head>'
            "<body><h1>Deep</h1></body></html>"
        )

    def robots(_request: Request) -> PlainTextResponse:
        return PlainTextResponse("User-agent: *\nAllow: /\n")

    return Starlette(
        routes=[
            Route("/robots.txt", robots),
            Route("/", page),
            Route("/deep-array", page),
            Route("/deep-object", page),
        ]
    )


async def test_an_audit_of_pages_with_nul_and_deep_json_ld_completes_on_either_store(
    audit_services: Services,
) -> None:
    """Issue 25.1, 25.2: text with NUL is stored with U+FFFD on both stores; JSON-LD nested
    past the depth bound is reported as invalid structured data on its page, nothing more."""
    services = audit_services
    user = services.accounts.create_user("alice").user
    project = services.accounts.create_project(user, "site")
    with serve(_hostile_site()) as base:
        job, _ = services.jobs.create(
            user, "site_audit", {"start_url": f"{base}/", **RELAXED}, project_id=project.id
        )
        done = await run_until_final(services, user, job)
    assert done.state == "completed", done.error
    with services.db.read() as conn:
        rows = conn.execute(select(audit_pages).where(audit_pages.c.job_id == job.id)).all()
    pages = {_path(r.url): r for r in rows}
    assert set(pages) == {"/", "/deep-array", "/deep-object"}
    home = pages["/"]
    assert home.title == "Home\ufffd page of a fixture site on soil"
    assert home.description == "About soil\ufffd and water\ufffd for the garden."
    # As a browser reads them (WHATWG parsing): NUL is U+FFFD in a title and an attribute
    # value, and dropped from the body's text.
    assert home.h1 == "Soil heading"
    found = _all_findings(services, user, job.id)
    invalid = {_path(f.data["url"]) for f in found if f.code == "structured_data_invalid"}
    assert invalid == {"/deep-array", "/deep-object"}
    for finding in found:  # what the findings quote of the pages is storable too
        assert "\x00" not in repr(finding.data)
