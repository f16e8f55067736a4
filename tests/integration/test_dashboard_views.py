"""A kind's dashboard view (``Kind.view``) titles its section of the project page and picks its
columns: the plug-in kind (tests/acme) declares one with no change in seojobs; a kind without
one keeps the generic section (every column its data has, up to the page's cap)."""

from __future__ import annotations

import re
from typing import Any

import httpx

from tests.api_helpers import api
from tests.conftest import make_settings
from tests.dashboard_helpers import collected_job, sign_in
from tests.waiting import wait_until

PARAMS = {"site": "acme.example", "pages": {"/": 1000, "/thin": 50}}


def _section(html: str, heading: str) -> str:
    """The project page's section under ``heading``, up to the next section."""
    start = html.index(f">{heading}</h2>")
    return html[start : html.find("</section>", start)]


def _header(section: str) -> list[str]:
    return re.findall(r'<th scope="col">([^<]*)</th>', section)


def test_a_kinds_view_titles_its_section_and_picks_its_columns(sqlite_url: str) -> None:
    settings = make_settings(sqlite_url, plugins=["tests.kinds", "tests.acme"])
    with api(settings, run_worker=True) as app:
        alice = app.account()
        http = app.client(alice)
        project = http.post("/v1/projects", json={"name": "acme"}).json()["data"]["id"]
        started = http.post(
            f"/v1/projects/{project}/jobs", json={"type": "acme_audit", "params": PARAMS}
        ).json()["data"]

        def finished() -> dict[str, Any] | None:
            job: dict[str, Any] = http.get(f"/v1/jobs/{started['id']}").json()["data"]
            return job if job["status"] in ("completed", "failed") else None

        assert wait_until(finished, timeout=60)["status"] == "completed"
        collected_job(app.services, alice.user, project, {"pages": 3, "server": "nginx"})
        browser: httpx.Client = sign_in(app, alice.key)
        page = browser.get(f"/dashboard/projects/{project}")
        assert page.status_code == 200
        acme = _section(page.text, "Acme word counts")  # the view's title
        assert _header(acme) == ["Subject", "Collected", "words", "Job"]  # its one column
        assert "acme.example" in acme and ">1050<" in acme
        generic = _section(page.text, "test_crawl: latest results")  # no view declared
        assert _header(generic) == ["Subject", "Collected", "pages", "server", "Job"]
