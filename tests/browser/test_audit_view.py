"""The site audit's view in a real Chromium, over a real audit of the fixture site: from the
audit's job page to its health score, to one issue, to the pages it affects, to one page's
issues; each step checked at 390 px wide (no horizontal scrolling) and saved as screenshots,
desktop and 390 px wide (the page explorer's, not in the docs, with SEOJOBS_TEST_SCREENSHOTS=all);
then Lighthouse on the view's pages (accessibility and best practices at least 95)."""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import OUTPUT, Site, screenshots, sign_in
from tests.browser.test_lighthouse import (
    FLOOR,
    LIGHTHOUSE,
    failing,
    session_cookie,
    start_audit,
)
from tests.conftest import subprocess_env
from tests.e2e.helpers import Spawner, free_port, open_services, wait_http_ok
from tests.fakes.audit_site import PAGES, AuditSite, html
from tests.waiting import wait_until


@pytest.fixture
def auditing_site(spawn: Spawner, sqlite_url: str) -> Iterator[Site]:
    """`seojobs serve` allowed to crawl the fixture site on loopback."""
    port = free_port()
    env = subprocess_env(sqlite_url, SEOJOBS_ALLOW_PRIVATE_NETWORKS="true")
    # The installed console script (the folder's other servers are forked: tests/clifork.py).
    args = ("serve", "--host", "127.0.0.1", "--port", str(port))
    proc = spawn(*args, env=env, name="serve", console_script=True)
    base = f"http://127.0.0.1:{port}"
    wait_http_ok(proc, f"{base}/readyz")
    with open_services(sqlite_url) as services:
        yield Site(base, services)


def _audit(site: Site, key: str, project: int, start_url: str) -> int:
    started = httpx.post(
        site.url(f"/v1/projects/{project}/audits"),
        headers={"Authorization": key},
        json={"start_url": start_url, "thresholds": {"slow_response_ms": 600_000}},
        timeout=60,
    )
    assert started.status_code == 202, started.text
    job_id = int(started.json()["data"]["id"])

    def done() -> str | None:
        answer = httpx.get(
            site.url(f"/v1/jobs/{job_id}"), headers={"Authorization": key}, timeout=60
        )
        status = str(answer.json()["data"]["status"])
        return status if status in ("completed", "failed", "cancelled") else None

    assert wait_until(done, timeout=120) == "completed"
    return job_id


# Two real audits, the walk and two Lighthouse runs: more than the default 120 s on a busy
# machine.
@pytest.mark.timeout(300)
def test_health_score_to_issue_to_pages_to_one_pages_issues(
    page: Page, auditing_site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = auditing_site
    user, key = site.user()
    project = site.services.accounts.create_project(user, "Garden shop")
    with AuditSite().running() as base:
        first = _audit(site, key, project.id, f"{base}/")
        # Between the audits the site fixes its missing title: a trend, and a fixed issue.
        monkeypatch.setitem(PAGES, "/no-title", html("no-title"))
        job_id = _audit(site, key, project.id, f"{base}/")

    # Lighthouse on each of the audit's views, signed in, as on the other pages, in its own
    # Chromium while this one walks them (the walk changes nothing they show).
    if not LIGHTHOUSE.exists():
        pytest.fail(f"no Lighthouse at {LIGHTHOUSE}: (cd lighthouse && npm ci) (scripts/test does)")
    cookie = session_cookie(site, key)
    folder = OUTPUT.parent / "lighthouse"
    view = f"/dashboard/jobs/{job_id}/view"
    categories = ("accessibility", "best-practices")
    # The walk's third page: the issue's first affected page, read as its link's target.
    issue = httpx.get(
        site.url(f"{view}/issues/title_duplicate"), headers={"Cookie": cookie}, timeout=60
    )
    one_page = re.findall(r'<th scope="row" data-label="Page"><a href="([^"]+)"', issue.text)[0]
    pages = {
        "audit": view,
        "audit-issue": f"{view}/issues/title_duplicate",
        "audit-pages": f"{view}/pages",  # the page explorer
        "audit-page": one_page,
        "audit-changes": f"{view}/changes",
    }
    with start_audit(site, pages, cookie, folder, categories) as lighthouse:
        sign_in(page, site, key)
        page.goto(site.url(f"/dashboard/jobs/{job_id}"))
        page.get_by_role("link", name="Open the results").click()
        expect(page.get_by_role("heading", name="Health score")).to_be_visible()
        expect(page.locator(".score-value")).to_have_text(re.compile(r"^\d+$"))
        expect(page.get_by_role("heading", name=re.compile(r"^Errors: \d+$"))).to_be_visible()
        expect(
            page.get_by_role("img", name=re.compile("^Health score of the last 2 audits"))
        ).to_be_visible()
        expect(page.get_by_role("link", name="Fixed issues")).to_be_visible()
        since = page.get_by_role("region", name="Since the previous audit")
        expect(since.get_by_role("link", name=f"#{first}")).to_be_visible()
        screenshots(page, "audit")

        page.get_by_role("link", name="title_duplicate", exact=True).click()
        expect(page.get_by_role("heading", level=1)).to_have_text("title_duplicate")
        affected = page.get_by_role("table").get_by_role("rowheader")
        expect(affected).to_have_count(2)
        expect(page.get_by_role("table")).to_contain_text("The same title on two pages of it")
        expect(page.get_by_role("link", name="Download CSV")).to_be_visible()
        screenshots(page, "audit-issue")

        affected.first.get_by_role("link").click()
        expect(page.get_by_role("heading", level=1)).to_have_text(
            re.compile(r"^Page .*/dup-title-")
        )
        expect(page.get_by_role("rowheader", name="title_duplicate")).to_be_visible()
        assert page.url == site.url(one_page)  # the page Lighthouse audits
        screenshots(page, "audit-page")

        page.get_by_role("link", name="Site audit", exact=True).click()
        page.get_by_role("link", name="Every page of the audit").click()
        expect(page.get_by_role("heading", level=1)).to_have_text(f"Pages of audit #{job_id}")
        screenshots(page, "audit-pages", pictured=False)  # not in the docs

        results = lighthouse.scores()
    for name in pages:
        for category in categories:
            assert results[name][category] >= FLOOR, (
                name,
                category,
                failing(folder / f"{name}.json", category),
            )
