"""The jobs pages in a real Chromium: a job started through the API appears in the list and
reaches completed without a reload; its page shows its results and the CSV downloads; a
check starts from the form."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import Site, screenshots, sign_in, watch_until_completed
from tests.conftest import subprocess_env
from tests.e2e.helpers import Spawner, free_port, open_services, wait_http_ok
from tests.fakes.serp import FakeSerper
from tests.fakes.server import serve

SERPER_KEY = "serper-key"


@pytest.fixture
def checking_site(spawn: Spawner, sqlite_url: str) -> Iterator[Site]:
    """`seojobs serve` whose index checks ask a local fake of Serper."""
    serper = FakeSerper(key=SERPER_KEY)
    with serve(serper.app) as serper_base:
        port = free_port()
        env = subprocess_env(
            sqlite_url, SEOJOBS_SERPER_KEY=SERPER_KEY, SEOJOBS_SERPER_BASE_URL=serper_base
        )
        proc = spawn("serve", "--host", "127.0.0.1", "--port", str(port), env=env, name="serve")
        base = f"http://127.0.0.1:{port}"
        wait_http_ok(proc, f"{base}/readyz")
        with open_services(sqlite_url) as services:
            yield Site(base, services)


def test_a_job_moves_in_the_list_and_its_page_gives_results_and_csv(
    page: Page, site: Site, tmp_path: Path
) -> None:
    user, key = site.user()
    urls = [f"https://example.com/{n}" for n in range(6)]
    release = tmp_path / "release"
    params = {"urls": urls, "item_delay": 0.6, "wait_for_file": str(release)}
    started = httpx.post(
        site.url(f"/v1/projects/{user.default_project_id}/jobs"),
        headers={"Authorization": key},
        json={"type": "test_items", "params": params},
        timeout=60,
    )
    assert started.status_code == 202, started.text
    job_id = started.json()["data"]["id"]

    sign_in(page, site, key)
    page.get_by_role("link", name="Jobs", exact=True).click()
    expect(page.get_by_role("heading", name="Jobs", exact=True)).to_be_visible()
    row = page.locator(f"tr[data-job='{job_id}']")
    expect(row).to_be_visible()
    watch_until_completed(page, row, len(urls), release)
    screenshots(page, "jobs")

    row.get_by_role("link", name=f"#{job_id}").click()
    expect(page.get_by_role("heading", name=f"Job #{job_id}")).to_be_visible()
    for url in urls:
        expect(page.get_by_role("rowheader", name=url, exact=True)).to_be_visible()
    screenshots(page, "job")
    with page.expect_download() as downloading:
        page.get_by_role("link", name="Download CSV").click()
    download = downloading.value
    assert download.suggested_filename == f"job-{job_id}-items.csv"
    text = Path(download.path()).read_text(encoding="utf-8")
    assert all(url in text for url in urls) and text.startswith("seq,input,status")


def test_start_a_check_from_the_form(page: Page, checking_site: Site) -> None:
    site = checking_site
    _user, key = site.user()
    sign_in(page, site, key)
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Start work").click()
    page.get_by_label("Index check").check()
    page.get_by_label("URLs, one per line").fill("https://example.com/a\nnot a url\n")
    page.get_by_role("button", name="Start").click()
    expect(page.get_by_text("urls: line 2")).to_be_visible()
    expect(page.get_by_label("URLs, one per line")).to_have_value(
        "https://example.com/a\nnot a url\n"
    )
    page.get_by_label("URLs, one per line").fill("https://example.com/a\nhttps://example.com/b")
    page.get_by_role("button", name="Start").click()
    expect(page).to_have_url(re.compile(r"/dashboard/jobs/\d+$"))
    expect(page.get_by_text("index_check").first).to_be_visible()
    expect(page.get_by_role("rowheader", name="https://example.com/b", exact=True)).to_be_visible()


def test_a_job_page_follows_its_job_and_drops_cancel_when_it_ends(
    page: Page, site: Site, tmp_path: Path
) -> None:
    user, key = site.user()
    urls = [f"https://example.com/{n}" for n in range(4)]
    release = tmp_path / "release"  # the job waits until its page shows it running
    params = {"urls": urls, "item_delay": 0.5, "wait_for_file": str(release)}
    job, _ = site.services.jobs.create(user, "test_items", params)
    sign_in(page, site, key)
    page.goto(site.url(f"/dashboard/jobs/{job.id}"))
    cancel = page.get_by_role("button", name="Cancel job")
    expect(cancel).to_be_visible()
    release.touch()
    status = page.locator(f"[data-job='{job.id}'] [data-field='status']").first
    expect(status).to_have_text("completed", timeout=30_000)
    expect(cancel).to_be_hidden()
