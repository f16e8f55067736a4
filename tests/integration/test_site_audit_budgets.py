"""One audit's share of the outside world and of time (issue 25.4a, 4b), on both stores: a page
linking thousands of other URLs gets a bounded number of them checked, per audit and not only
per host; thousands of distinct hosts (names the test's resolver maps to loopback) cost a
bounded number of robots.txt and HEAD requests; an audit over its time limit fails ``timeout``.
Everything is served on loopback and counted there."""

from __future__ import annotations

import threading
from collections import Counter

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response
from starlette.routing import Route

from seojobs.fetch import Fetcher
from seojobs.kinds.site_audit.external import CHECKED, OVER_BUDGET, ExternalLinks
from seojobs.services import Services
from tests.conftest import make_settings
from tests.fakes.audit_site import AuditSite
from tests.fakes.server import serve
from tests.waiting import run_until_final

LINKS = 3000


class Counted:
    """A loopback server that counts every request by method, host name and path."""

    def __init__(self) -> None:
        self.hits: Counter[tuple[str, str, str]] = Counter()
        self._lock = threading.Lock()

    def app(self, page: str = "") -> Starlette:
        def any_path(request: Request) -> Response:
            with self._lock:
                key = (request.method, request.url.hostname or "", request.url.path)
                self.hits[key] += 1
            if request.url.path == "/robots.txt":
                return PlainTextResponse("User-agent: *\nAllow: /\n")
            if request.url.path == "/" and page:
                return HTMLResponse(page)
            return PlainTextResponse("ok")

        return Starlette(routes=[Route("/{path:path}", any_path, methods=["GET", "HEAD"])])

    def total(self, path_prefix: str = "/") -> int:
        return sum(n for (_m, _h, p), n in self.hits.items() if p.startswith(path_prefix))


async def test_one_page_linking_thousands_of_urls_checks_the_audits_budget_only(
    audit_services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The per-host cap out of the way: the per-audit budget alone must bound the checks.
    monkeypatch.setenv("SEOJOBS_SITE_AUDIT_EXTERNAL_LINKS_PER_HOST", "100000")
    monkeypatch.setenv("SEOJOBS_SITE_AUDIT_EXTERNAL_LINKS_PER_PAGE", "7")
    services = audit_services
    user = services.accounts.create_user("alice").user
    other = Counted()
    with serve(other.app()) as elsewhere:
        links = "".join(f'<a href="{elsewhere}/e/{i}">{i}</a>' for i in range(LINKS))
        page = f"<html><head><title>Many links here</title></head><body>{links}</body></html>"
        site = Counted()
        with serve(site.app(page)) as base:
            job, _ = services.jobs.create(
                user, "site_audit", {"start_url": f"{base}/", "max_pages": 1}
            )
            done = await run_until_final(services, user, job)
    assert done.state == "completed", done.error
    # max_pages 1 x 7 per page: 7 URLs checked, each a HEAD (robots.txt once for the host).
    assert other.total("/e/") == 7
    assert other.total("/robots.txt") == 1
    [item] = services.jobs.items(user, job.id)
    states = Counter(o["state"] for o in (item.result or {})["external"])
    assert states == {CHECKED: 7, OVER_BUDGET: LINKS - 7}


async def test_thousands_of_distinct_hosts_cost_a_bounded_number_of_requests(
    store_url: str,
) -> None:
    settings = make_settings(store_url, allow_private_networks=True)
    names: list[str] = []

    async def loopback(host: str) -> list[str]:
        names.append(host)
        return ["127.0.0.1"]  # every name of the test is this loopback server

    other = Counted()
    with serve(other.app()) as base:
        port = base.rsplit(":", 1)[1]
        urls = [f"http://h{i}.example.test:{port}/x" for i in range(LINKS)]
        async with Fetcher(settings, resolver=loopback) as fetcher:
            checks = ExternalLinks(fetcher, per_host=20, budget=25)
            outcomes = await checks.outcomes(urls)
    states = Counter(o["state"] for o in outcomes)
    assert states == {CHECKED: 25, OVER_BUDGET: LINKS - 25}
    # One robots.txt and one HEAD per host checked: 25 hosts, never 3,000.
    assert other.total("/robots.txt") == 25
    assert other.total("/x") == 25
    assert len({host for _m, host, _p in other.hits}) == 25


async def test_an_audit_past_its_time_limit_fails_with_timeout(
    audit_services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEOJOBS_SITE_AUDIT_MAX_SECONDS", "1")
    monkeypatch.setenv("SEOJOBS_SITE_AUDIT_CONCURRENCY", "1")
    services = audit_services
    user = services.accounts.create_user("alice").user
    # 400 pages of 0.5 s each, one at a time: far longer than the limit.
    site = AuditSite(generated=400, delay=0.5, sitemaps=False)
    with site.running() as base:
        job, _ = services.jobs.create(user, "site_audit", {"start_url": f"{base}/g/0"})
        done = await run_until_final(services, user, job)
    assert (done.state, done.error_code) == ("failed", "timeout")
    assert "SEOJOBS_SITE_AUDIT_MAX_SECONDS" in (done.error_message or "")
    assert done.items_done < 400
