"""Project pages in a real Chromium: sign in, create a project, rename it, start a job from
the form built from its type's params schema; screenshots of the project page (with collected
data as a table and its findings as a chart) and of the form, desktop and 390 px wide."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from tests.browser.conftest import Site, screenshots, sign_in
from tests.dashboard_helpers import collected_job


def test_create_rename_and_start_a_job_from_the_schema_form(page: Page, site: Site) -> None:
    user, key = site.user()
    sign_in(page, site, key)
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Projects").click()
    expect(page.get_by_role("heading", name="Projects", exact=True)).to_be_visible()
    page.get_by_label("Name").fill("Shop")
    page.get_by_role("button", name="Create project").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Shop")
    project_id = int(page.url.rsplit("/", 1)[1])

    page.get_by_label("New name").fill("Shop EU")
    page.get_by_role("button", name="Rename").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Shop EU")

    data = {"pages": 12, "scores": {"speed": 0.75}}
    collected_job(site.services, user, project_id, data, [("missing_title", "warning")])
    page.reload()
    chart = page.get_by_role("img", name=re.compile("findings by severity"))
    expect(chart).to_be_visible()
    expect(page.get_by_role("table").last).to_contain_text("shop.test")
    screenshots(page, "project")

    page.get_by_role("link", name="Start a job").click()
    page.get_by_role("link", name="test_items", exact=True).click()
    expect(page.get_by_role("heading", level=1)).to_contain_text("New test_items job")
    page.get_by_label("Urls (required)").fill("https://example.com/a\nhttps://example.com/b")
    page.get_by_label("Concurrency").fill("2")
    screenshots(page, "project-new-job")
    page.get_by_role("button", name="Start job").click()
    page.wait_for_url(re.compile(r".*/dashboard/jobs/[0-9]+$"))
    job_id = int(page.url.rsplit("/", 1)[1])
    job = site.services.jobs.get(user, job_id)
    assert job.project_id == project_id and job.kind == "test_items"
    assert job.params["urls"] == ["https://example.com/a", "https://example.com/b"]

    # The same form creates a schedule instead: its own button, a name and how often.
    page.go_back()
    expect(page.get_by_role("heading", level=1)).to_contain_text("New test_items job")
    page.get_by_label("Urls (required)").fill("https://example.com/a")
    page.get_by_label("Schedule name").fill("nightly")
    page.get_by_label("Every N days").fill("1")
    page.get_by_role("button", name="Create schedule").click()
    page.wait_for_url(re.compile(rf".*/dashboard/projects/{project_id}#schedules$"))
    expect(page.get_by_role("table").first).to_contain_text("nightly")
    (schedule,) = site.services.schedules.in_project(user, project_id)
    assert schedule.kind == "test_items" and schedule.params["urls"] == ["https://example.com/a"]
