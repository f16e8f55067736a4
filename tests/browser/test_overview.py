"""The overview in a real Chromium: sign in, watch a running job reach completed without a
reload, sign out."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from tests.browser.conftest import Site, screenshots, sign_in, watch_until_completed


def test_overview_shows_live_progress_until_completed(page: Page, site: Site) -> None:
    user, key = site.user()
    urls = [f"https://example.com/{n}" for n in range(6)]
    job, _ = site.services.create_job(user, "test_items", {"urls": urls, "item_delay": 0.6})

    sign_in(page, site, key)
    expect(page.get_by_role("heading", name="Overview")).to_be_visible()
    row = page.locator(f"[data-job='{job.id}']")
    expect(row).to_be_visible()
    watch_until_completed(page, row, len(urls))
    screenshots(page, "overview")

    page.get_by_role("button", name="Sign out").click()
    expect(page).to_have_url(re.compile(r"/dashboard/login$"))
