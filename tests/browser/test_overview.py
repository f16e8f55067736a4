"""The overview in a real Chromium: sign in, watch a running job reach completed without a
reload, sign out."""

from __future__ import annotations

import re
from pathlib import Path

from playwright.sync_api import Page, expect

from tests.browser.conftest import Site, screenshots, sign_in, watch_until_completed


def test_overview_shows_live_progress_until_completed(
    page: Page, site: Site, tmp_path: Path
) -> None:
    user, key = site.user()
    urls = [f"https://example.com/{n}" for n in range(6)]
    release = tmp_path / "release"
    params = {"urls": urls, "item_delay": 0.6, "wait_for_file": str(release)}
    job, _ = site.services.jobs.create(user, "test_items", params)

    sign_in(page, site, key)
    expect(page.get_by_role("heading", name="Overview")).to_be_visible()
    row = page.locator(f"[data-job='{job.id}']")
    expect(row).to_be_visible()
    watch_until_completed(page, row, len(urls), release)
    screenshots(page, "overview")

    page.get_by_role("button", name="Sign out").click()
    expect(page).to_have_url(re.compile(r"/dashboard/login$"))


HIDE = """hidden => {
    Object.defineProperty(document, "hidden", { configurable: true, get: () => hidden });
    document.dispatchEvent(new Event("visibilitychange"));
}"""


def test_progress_polling_stops_while_the_tab_is_hidden(page: Page, site: Site) -> None:
    """The page's timers run on Playwright's clock, so minutes pass at once: hidden, the page
    asks nothing however long it waits; shown again, it asks at once."""
    user, key = site.user()
    urls = [f"https://example.com/{n}" for n in range(50)]
    site.services.jobs.create(user, "test_items", {"urls": urls, "item_delay": 5})
    sign_in(page, site, key)
    asked: list[str] = []
    page.on("request", lambda request: asked.append(request.url))
    page.clock.install()
    page.goto(site.url("/dashboard"))
    with page.expect_request("**/dashboard/live?ids=*"):
        page.clock.run_for(2_000)  # the first poll is due after a second
    page.wait_for_load_state("networkidle")

    page.evaluate(HIDE, True)
    before = len(asked)
    page.clock.run_for(120_000)  # a dozen polls' worth at the back-off's ceiling
    page.wait_for_load_state("networkidle")
    assert asked[before:] == []

    with page.expect_request("**/dashboard/live?ids=*"):
        page.evaluate(HIDE, False)
