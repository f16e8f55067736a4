"""The views of the other kinds (issue 28) in a real Chromium, over data collected by real jobs
against the test fakes (``views_world``, with the web vitals job's own Lighthouse run): from
the project page to a rank check's view (moves in words, the chart and its table), sorting the
keyword research, the backlinks' lost and new links, the domain's countdowns, the GEO view, and
the tech stack's, web vitals' and local rankings' views;
screenshots of each, desktop and 390 px wide (no horizontal scrolling); Lighthouse on every
kind's view (accessibility and best practices at least 0.95)."""

from __future__ import annotations

import contextlib
import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import DESKTOP, OUTPUT, PHONE, Site, screenshots, sign_in
from tests.browser.test_lighthouse import (
    FLOOR,
    LIGHTHOUSE,
    failing,
    session_cookie,
    start_audit,
)
from tests.builtin import REGISTRY
from tests.integration.views_world import views_world

# Every kind with a view in the world (web vitals' needs its own Lighthouse run: vitals=True).
VIEWED = (
    "rank_check",
    "keyword_research",
    "backlink_refresh",
    "backlink_analysis",
    "domain_lookup",
    "geo_lookup",
    "tech_stack",
    "web_vitals",
    "local_rank_check",
)
CATEGORIES = ("accessibility", "best-practices")


def test_every_kind_with_a_view_is_viewed() -> None:
    """A new kind's job view joins the Lighthouse walk below (the site audit's views have
    their own, in test_audit_view)."""
    viewed = {kind.name for kind in REGISTRY.kinds() if kind.view.job is not None}
    assert viewed - {"site_audit"} == set(VIEWED), "add the new kind's view to VIEWED"


@pytest.mark.timeout(600)
def test_the_kinds_views_walked_at_desktop_and_phone_width(
    page: Page, sqlite_url: str, tmp_path: Path
) -> None:
    with contextlib.ExitStack() as stack:
        world = stack.enter_context(views_world(sqlite_url, tmp_path))
        site = Site(world.app.base, world.app.services)
        sign_in(page, site, world.owner.key)
        if not LIGHTHOUSE.exists():
            pytest.fail(f"no Lighthouse at {LIGHTHOUSE}: (cd lighthouse && npm ci)")
        cookie = session_cookie(site, world.owner.key)
        folder = OUTPUT.parent / "lighthouse"
        # Every kind's view (issue 28: each >= 0.95); the rank check's has a chart and moves,
        # the keyword research's the sort form. Lighthouse audits them in its own Chromium
        # while this one walks them (the walk changes nothing they show).
        views = {f"view-{kind}": f"/dashboard/jobs/{world.last(kind)}/view" for kind in VIEWED}
        lighthouse = stack.enter_context(start_audit(site, views, cookie, folder, CATEGORIES))
        page.goto(site.url(f"/dashboard/projects/{world.project}"))
        expect(page.get_by_role("img", name=re.compile("^Keywords by position"))).to_be_visible()
        rank = world.last("rank_check")
        page.get_by_role("link", name=f"#{rank} rank_check").click()
        page.get_by_role("link", name="Open the results").click()
        positions = page.get_by_role("region", name="Positions")
        expect(positions.get_by_role("cell", name="▲ up 1")).to_be_visible()
        expect(positions.get_by_role("cell", name="dropped out")).to_be_visible()
        chart = page.get_by_role("img", name=re.compile("^Position of “garden hose”"))
        expect(chart).to_be_visible()
        screenshots(page, "view-rank-check")
        positions.screenshot(path=str(OUTPUT / "view-rank-check-positions.png"))  # for the docs
        positions.get_by_role("link", name="Keyword", exact=True).click()
        expect(page.get_by_role("link", name="Keyword (ascending)")).to_be_visible()

        page.goto(site.url(f"/dashboard/jobs/{world.last('keyword_research')}/view"))
        page.get_by_role("link", name="CPC", exact=True).click()
        page.get_by_role("link", name="CPC (ascending)").click()
        expect(page.get_by_role("link", name="CPC (descending)")).to_be_visible()
        expect(page.get_by_role("link", name="Download as CSV")).to_be_visible()
        # At 390 px the headings are hidden (a card per row): the sort form does it there.
        page.set_viewport_size(PHONE)
        page.get_by_label("Sort by").select_option(label="Monthly searches")
        page.get_by_label("Order").select_option("asc")
        page.get_by_role("button", name="Sort").click()
        first = page.get_by_role("region", name="Keywords").get_by_role("rowheader").first
        expect(first).to_have_text("hose reel")  # the fewer searches first
        page.set_viewport_size(DESKTOP)
        screenshots(page, "view-keywords")

        page.goto(site.url(f"/dashboard/jobs/{world.last('backlink_refresh')}/view"))
        changes = page.get_by_role("region", name="Lost and new since the previous refresh")
        expect(changes.get_by_role("rowheader", name="lost")).to_be_visible()
        expect(changes.get_by_role("rowheader", name="new")).to_be_visible()
        screenshots(page, "view-backlinks")

        page.goto(site.url(f"/dashboard/jobs/{world.last('backlink_analysis')}/view"))
        index_changes = page.get_by_role("region", name="New and lost since the previous analysis")
        expect(index_changes.get_by_role("rowheader", name="lost")).to_be_visible()
        expect(index_changes.get_by_role("rowheader", name="new")).to_be_visible()
        screenshots(page, "view-backlink-analysis")

        page.goto(site.url(f"/dashboard/jobs/{world.last('domain_lookup')}/view"))
        expect(page.get_by_role("cell", name=re.compile(r"^in (89|90) days$"))).to_be_visible()
        screenshots(page, "view-domain")

        for kind, heading in (
            ("tech_stack", "Technologies by category"),
            ("web_vitals", "Metrics against their thresholds"),
            ("local_rank_check", "Local positions"),
        ):
            page.goto(site.url(f"/dashboard/jobs/{world.last(kind)}/view"))
            expect(page.get_by_role("heading", name=heading)).to_be_visible()
            screenshots(page, f"view-{kind.replace('_', '-')}")

        page.goto(site.url(f"/dashboard/jobs/{world.last('geo_lookup')}/view"))
        expect(page.get_by_role("cell", name="▲ up 100")).to_be_visible()
        screenshots(page, "view-geo")
        assert (OUTPUT / "view-geo-phone.png").exists()

        results = lighthouse.scores()
        for kind in VIEWED:
            scores, out = results[f"view-{kind}"], folder / f"view-{kind}.json"
            for category in CATEGORIES:
                assert scores[category] >= FLOOR, (kind, category, failing(out, category))
