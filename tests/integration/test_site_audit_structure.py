"""Orphans and page weight (issue 30.3) on both stores: a page the project's previous audit
crawled that no link reaches now is fetched again and reported while it answers; another
project's audits are not its previous ones; a page heavier than the threshold, counting the
subresources of the site the crawl fetched, is reported with what was and was not known."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response
from starlette.routing import Route

from seojobs.kinds import load_registry
from seojobs.records import UserRecord
from seojobs.services import Services
from seojobs.store.db import Database
from tests.conftest import make_settings
from tests.fakes.server import serve
from tests.waiting import run_until_final

PICTURE = b"\x89PNG" + b"\0" * 6000  # 6 kB: /b with it weighs more than 4 kB
PARAMS = {"include_sitemaps": False, "check_external_links": False}


class Site:
    def __init__(self) -> None:
        self.graph: dict[str, list[str]] = {"/": ["/a", "/b"], "/a": [], "/b": ["/pic"]}
        self.requests: Counter[str] = Counter()

    def app(self) -> Starlette:
        def any_path(request: Request) -> Response:
            path = request.url.path
            self.requests[path] += 1
            if path == "/robots.txt":
                return PlainTextResponse("User-agent: *\nAllow: /\n")
            if path == "/pic":
                return Response(PICTURE, media_type="image/png")
            if path not in self.graph:
                return PlainTextResponse("none", status_code=404)
            links = "".join(f'<a href="{href}">to {href}</a>' for href in self.graph[path])
            picture = (
                '<img src="/pic" alt="A picture" width="9" height="9">' if path == "/b" else ""
            )
            return HTMLResponse(
                f"<html><head><title>Page {path}</title></head><body>{links}{picture}</body>"
            )

        return Starlette(routes=[Route("/{path:path}", any_path)])


@pytest.fixture
def services(store_url: str) -> Iterator[Services]:
    settings = make_settings(store_url, allow_private_networks=True)
    made = Services(Database(store_url), settings, load_registry(settings))
    yield made
    made.db.dispose()


async def _audit(services: Services, user: UserRecord, project: int, params: dict[str, Any]) -> Any:
    job, _ = services.jobs.create(user, "site_audit", params, project_id=project)
    done = await run_until_final(services, user, job)
    assert done.state == "completed", done.error
    return {
        (f.code, urlsplit(f.data["url"]).path): f.data["evidence"]
        for f in services.jobs.findings(user, job.id, limit=1000)
        if f.code in ("orphan_page", "page_weight_high")
    }


async def test_orphans_of_the_previous_audit_and_heavy_pages(services: Services) -> None:
    user = services.accounts.create_user("orphans").user
    project = services.accounts.create_project(user, "site").id
    other = services.accounts.create_project(user, "other").id
    site = Site()
    with serve(site.app()) as base:
        params = {"start_url": f"{base}/", **PARAMS, "thresholds": {"page_max_kb": 4}}
        first = await _audit(services, user, project, params)
        # /b's HTML and the picture it shows (linked, so crawled): over 4 kB; no orphans yet.
        assert set(first) == {("page_weight_high", "/b")}
        weight = first[("page_weight_high", "/b")]
        assert weight["bytes"] == weight["html_bytes"] + len(PICTURE)
        assert (weight["subresources_known"], weight["subresources_unknown"]) == (1, 0)
        # The home page stops linking to /a: the next audit fetches it all the same.
        site.graph["/"] = ["/b"]
        site.requests.clear()
        second = await _audit(services, user, project, {**params, "thresholds": {}})
        assert set(second) == {("orphan_page", "/a")}
        assert second[("orphan_page", "/a")] == {"in_previous_audit": True, "linked": False}
        assert site.requests["/a"] == 1
        # Another project's audit of the same site has no previous audit of its own.
        site.requests.clear()
        assert await _audit(services, user, other, params) == {("page_weight_high", "/b"): weight}
        assert site.requests["/a"] == 0
        # Once /a is gone, it is no orphan: it does not answer.
        site.graph.pop("/a")
        assert await _audit(services, user, project, {**params, "thresholds": {}}) == {}
