"""The overview in a real Chromium: sign in, watch a running job reach completed without a
reload, sign out."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from tests.browser.conftest import Site, screenshots, sign_in


def test_overview_shows_live_progress_until_completed(page: Page, site: Site) -> None:
    user, key = site.user()
    urls = [f"https://example.com/{n}" for n in range(6)]
    job, _ = site.services.create_job(user, "test_items", {"urls": urls, "item_delay": 0.6})

    sign_in(page, site, key)
    expect(page.get_by_role("heading", name="Overview")).to_be_visible()
    row = page.locator(f"[data-job='{job.id}']")
    expect(row).to_be_visible()
    done = row.locator("[data-field='items_done']")
    first = int(done.inner_text())
    assert first < len(urls)
    # The counters move while the job runs, then the row says completed: no reload happened
    # (the navigation count stays one).
    navigations: list[str] = []
    page.on("framenavigated", lambda frame: navigations.append(frame.url))
    expect(done).not_to_have_text(str(first), timeout=30_000)
    expect(row.locator("[data-field='status']")).to_have_text("completed", timeout=30_000)
    expect(done).to_have_text(str(len(urls)))
    expect(row.locator("progress")).to_have_attribute("value", "100")
    assert navigations == []
    screenshots(page, "overview")

    page.get_by_role("button", name="Sign out").click()
    expect(page).to_have_url(re.compile(r"/dashboard/login$"))
