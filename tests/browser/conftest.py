"""Browser tests: a real `seojobs serve` on loopback, driven by Debian's chromium through
Playwright (never a downloaded browser), kept off the network by a resolver rule. The tests
check each page at 390 px wide (no horizontal scrolling) and save full-page screenshots, desktop
and 390 px wide, under the test output folder: of the pages the documentation pictures, and of
every page with SEOJOBS_TEST_SCREENSHOTS=all (see ``screenshots``)."""

from __future__ import annotations

import contextlib
import os
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Locator, Page, Playwright, expect, sync_playwright
from playwright.sync_api import Error as PlaywrightError

from seojobs.records import UserRecord
from seojobs.services import Services
from tests.conftest import ROOT, migrated_sqlite, subprocess_env
from tests.e2e.conftest import spawn  # noqa: F401  (the fixture, for this folder's tests)
from tests.e2e.helpers import Spawner, free_port, open_services, wait_http_ok

CHROMIUM = os.environ.get("SEOJOBS_TEST_CHROMIUM", "/usr/bin/chromium")
# Chromium looks up Google's hosts at start even with background networking off: map every
# name but loopback to "not found" (../shared/reference/browser_feasibility.md).
RESOLVER_RULES = "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost"
QUIET_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
CHROMIUM_ARGS = [*QUIET_ARGS, f"--host-resolver-rules={RESOLVER_RULES}"]
# Where screenshots go; CI keeps this folder.
OUTPUT = Path(os.environ.get("SEOJOBS_TEST_OUTPUT", ROOT / "test-output")) / "screenshots"
DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}


# Module scope, never session: Playwright's sync API keeps an event loop running in this thread
# while it is started, so any later test in the same process that calls asyncio.run() would fail.
@pytest.fixture(scope="module")
def playwright() -> Iterator[Playwright]:
    _chromium_installed()
    with sync_playwright() as driver:
        yield driver


def _chromium_installed() -> None:
    if not Path(CHROMIUM).exists():
        pytest.fail(f"no Chromium at {CHROMIUM}: apt-get install -y chromium (scripts/test does)")


def _launch(driver: Playwright) -> Browser:
    return driver.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)


@pytest.fixture(scope="module")
def browser(playwright: Playwright) -> Iterator[Browser]:
    launched = _launch(playwright)
    try:
        yield launched
    finally:
        launched.close()


@dataclass
class Site:
    """A running server and the service facade over its database (to start jobs and users)."""

    base: str
    services: Services

    def url(self, path: str) -> str:
        return self.base + path

    def user(self, name: str | None = None) -> tuple[UserRecord, str]:
        """A new user and their API key (user names are unique: by default a new one, as a
        module's tests share its server)."""
        made = self.services.accounts.create_user(name or f"browser-{uuid.uuid4().hex[:8]}")
        return made.user, made.api_key


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    """`seojobs serve` with its in-process worker and the test kinds, on a SQLite file: one per
    module, its tests each signed in as a user of their own (the dashboard shows a user only
    their own projects and jobs), as the API is multi-tenant."""
    workdir = tmp_path_factory.mktemp("site")
    sqlite_url = migrated_sqlite(workdir)
    spawner = Spawner(workdir)
    try:
        port = free_port()
        proc = spawner(
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            env=subprocess_env(sqlite_url),
            name="serve",
        )
        base = f"http://127.0.0.1:{port}"
        wait_http_ok(proc, f"{base}/readyz")
        with open_services(sqlite_url) as services:
            yield Site(base, services)
    finally:
        spawner.stop_all()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport=DESKTOP)
    try:
        yield context.new_page()
    finally:
        context.close()


@contextlib.contextmanager
def one_page() -> Iterator[Page]:
    """Playwright, Chromium and a desktop-sized page for one test of another folder (this
    folder's fixtures keep them for a module): all stopped when the test ends, so no later test
    of its module runs beside Playwright's event loop (see ``playwright``)."""
    _chromium_installed()
    with sync_playwright() as driver:
        launched = _launch(driver)
        try:
            yield launched.new_context(viewport=DESKTOP).new_page()
        finally:
            launched.close()


def sign_in(page: Page, site: Site, api_key: str) -> None:
    """Sign in through the login form, as a person would."""
    page.goto(site.url("/dashboard/login"))
    page.get_by_label("API key").fill(api_key)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(re.compile(r".*/dashboard(\?.*)?$|.*/dashboard/.*"))


# Two frames drawn after a resize: Chromium answered "Unable to capture screenshot" to a full
# page capture asked for straight after set_viewport_size (once in a CI-style run, with
# Lighthouse auditing another page of the same browser).
_FRAMES = "() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))"


def _capture(page: Page, path: Path) -> None:
    """A full-page screenshot once the page has drawn at its new size; asked again once if
    Chromium still has no frame to give."""
    page.evaluate(_FRAMES)
    try:
        page.screenshot(path=str(path), full_page=True)
    except PlaywrightError as exc:
        if "Unable to capture screenshot" not in str(exc):
            raise
        page.evaluate(_FRAMES)
        page.screenshot(path=str(path), full_page=True)


# A full-page capture costs Chromium and Playwright about 0.4 CPU-s (the page laid out at its
# full height, encoded as PNG, sent to Python; 18 of them: 10.2-11.3 CPU-s -> 16.9-18.0): the
# pages the documentation pictures (docs/img) are saved on every run, the others only with
# SEOJOBS_TEST_SCREENSHOTS=all. The 390 px check runs on every page either way.
EVERY_SCREENSHOT = os.environ.get("SEOJOBS_TEST_SCREENSHOTS") == "all"


def screenshots(page: Page, name: str, *, pictured: bool = True) -> list[Path]:
    """Save the page full-length at desktop width and at 390 px, and check that the phone
    width needs no horizontal scrolling. ``pictured``: the documentation shows the page
    (docs/img); a page it does not is saved only with ``SEOJOBS_TEST_SCREENSHOTS=all``, its
    390 px width checked all the same. Returns the files written."""
    OUTPUT.mkdir(parents=True, exist_ok=True)
    written = []
    original = page.viewport_size or DESKTOP
    for label, size in (("desktop", DESKTOP), ("phone", PHONE)):
        page.set_viewport_size(size)
        if pictured or EVERY_SCREENSHOT:
            path = OUTPUT / f"{name}-{label}.png"
            _capture(page, path)
            written.append(path)
        if label == "phone":
            # Reading the widths lays the page out at its new size first.
            overflow = page.evaluate(
                "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"
            )
            assert overflow <= 0, f"{name}: {overflow}px of horizontal scrolling at 390 px"
    page.set_viewport_size(original)
    return written


def watch_until_completed(page: Page, row: Locator, items: int, release: Path) -> None:
    """``row``'s counters move while its job runs, then it says completed, its bar full: all
    without a reload (no navigation happens while watching). The job's items wait for
    ``release`` (its ``wait_for_file``), created once the first counters are read: on a loaded
    machine, signing in once took longer than a job of timed items ran."""
    done = row.locator("[data-field='items_done']")
    first = int(done.inner_text())
    assert first < items
    release.touch()
    navigations: list[str] = []
    page.on("framenavigated", lambda frame: navigations.append(frame.url))
    expect(done).not_to_have_text(str(first), timeout=30_000)
    expect(row.locator("[data-field='status']")).to_have_text("completed", timeout=30_000)
    expect(done).to_have_text(str(items))
    expect(row.locator("progress")).to_have_attribute("value", "100")
    assert navigations == []
