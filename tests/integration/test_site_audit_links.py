"""Links and structure (issue 30.3) on both stores: each audit page's internal link score is
stored (PageRank over the crawled graph, 0-100) and the pages read sorts by it, every page
once across the cursor's pages, JSON and CSV alike; a sort it does not know is named."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response
from starlette.routing import Route

from seojobs.kinds.site_audit.linkscore import link_scores
from tests.api_helpers import Api, api, error_fields
from tests.conftest import make_settings
from tests.fakes.server import serve
from tests.waiting import run_until_final

# A known graph: the hub and /b are linked most, /d by one page only.
GRAPH = {
    "/": ["/a", "/b", "/c"],
    "/a": ["/b"],
    "/b": ["/"],
    "/c": ["/b", "/d"],
    "/d": [],
}


def _app() -> Starlette:
    def any_path(request: Request) -> Response:
        path = request.url.path
        if path == "/robots.txt":
            return PlainTextResponse("User-agent: *\nAllow: /\n")
        if path not in GRAPH:
            return PlainTextResponse("none", status_code=404)
        links = "".join(f'<a href="{href}">to {href}</a>' for href in GRAPH[path])
        return HTMLResponse(f"<html><head><title>Page {path}</title></head><body>{links}</body>")

    return Starlette(routes=[Route("/{path:path}", any_path)])


@pytest.fixture
def running(store_url: str) -> Iterator[Api]:
    with api(make_settings(store_url, allow_private_networks=True)) as made:
        yield made


async def test_link_scores_are_stored_and_the_pages_sort_by_them(running: Api) -> None:
    account = running.account()
    client = running.client(account, in_process=True)
    with serve(_app()) as base:
        started = client.post(
            f"/v1/projects/{account.user.default_project_id}/audits",
            json={"start_url": f"{base}/", "include_sitemaps": False},
        )
        assert started.status_code == 202, started.text
        job = running.services.jobs.get(account.user, started.json()["data"]["id"])
        done = await run_until_final(running.services, account.user, job)
    assert done.state == "completed", done.error
    url = f"/v1/projects/{done.project_id}/audits/{done.id}/pages"
    expected = link_scores(
        (base + path, [base + t for t in links]) for path, links in GRAPH.items()
    )
    pages = client.get(url).json()["data"]
    assert {p["url"]: p["link_score"] for p in pages} == expected
    # Highest first, ties in the order found; two pages at a time, each page once.
    seen, cursor = [], None
    while True:
        params = {"sort": "-link_score", "limit": 2, **({"cursor": cursor} if cursor else {})}
        answer = client.get(url, params=params).json()
        seen += [(p["link_score"], p["seq"], p["url"]) for p in answer["data"]]
        cursor = answer["next_cursor"]
        if cursor is None:
            break
    assert seen == sorted(seen, key=lambda s: (-s[0], s[1]))
    assert [s[2] for s in seen][-1] == f"{base}/d"  # one in-link, from a page of three links
    assert len(seen) == len(GRAPH)
    ascending = client.get(url, params={"sort": "link_score"}).json()["data"]
    assert ascending[0]["url"] == f"{base}/d"
    # The CSV in the same order.
    text = client.get(url, params={"sort": "-link_score"}, headers={"Accept": "text/csv"}).text
    rows = list(csv.DictReader(io.StringIO(text)))
    assert [r["url"] for r in rows] == [s[2] for s in seen]
    assert [int(r["link_score"]) for r in rows] == [s[0] for s in seen]
    assert error_fields(client.get(url, params={"sort": "title"})) == ["sort"]
