"""Who sees what, in a real Chromium: a second user sees none of the first user's projects or
jobs and gets 404 pages on their addresses; a form without its CSRF token is refused; a
cookie kept from a signed-out session opens nothing; sign-in works from the keyboard alone,
with the focus visible."""

from __future__ import annotations

import re

from playwright.sync_api import Browser, Page, expect

from tests.browser.conftest import DESKTOP, Site, sign_in


def test_a_second_user_sees_nothing_of_the_first(browser: Browser, site: Site) -> None:
    alice, _alice_key = site.user("alice")
    bob, bob_key = site.user("bob")
    project = site.services.accounts.create_project(alice, "Alice's shop")
    job, _ = site.services.jobs.create(
        alice, "test_items", {"urls": ["https://example.com/a"]}, project_id=project.id
    )
    mine, _ = site.services.jobs.create(bob, "test_items", {"urls": ["https://example.com/b"]})
    context = browser.new_context(viewport=DESKTOP)
    try:
        page = context.new_page()
        sign_in(page, site, bob_key)
        page.goto(site.url("/dashboard/jobs"))
        expect(page.locator(f"tr[data-job='{mine.id}']")).to_be_visible()
        expect(page.locator(f"[data-job='{job.id}']")).to_have_count(0)
        page.goto(site.url("/dashboard/projects"))
        expect(page.get_by_role("main")).not_to_contain_text("Alice's shop")
        for path in (
            f"/dashboard/jobs/{job.id}",
            f"/dashboard/jobs/{job.id}/items.csv",
            f"/dashboard/projects/{project.id}",
            f"/dashboard/jobs?project={project.id}",
        ):
            answer = page.goto(site.url(path))
            assert answer is not None and answer.status == 404, path
            expect(page.get_by_role("heading", level=1)).to_have_text("Not found")
            expect(page.locator("body")).not_to_contain_text("Alice's shop")
    finally:
        context.close()


def test_a_form_without_its_token_is_refused(page: Page, site: Site) -> None:
    user, key = site.user()
    project = site.services.accounts.create_project(user, "Shop")
    sign_in(page, site, key)
    page.goto(site.url(f"/dashboard/projects/{project.id}"))
    form = page.locator("form", has=page.get_by_role("button", name="Rename"))
    form.locator("input[name='csrf_token']").evaluate("input => input.remove()")
    page.get_by_label("New name").fill("Taken over")
    with page.expect_response(re.compile(r"/dashboard/projects/\d+")) as sent:
        page.get_by_role("button", name="Rename").click()
    assert sent.value.status == 403
    expect(page.get_by_role("heading", level=1)).to_have_text("Form expired")
    assert [p.name for p in site.services.projects(user) if p.id == project.id] == ["Shop"]


def test_a_signed_out_cookie_opens_nothing(browser: Browser, site: Site) -> None:
    _user, key = site.user()
    context = browser.new_context(viewport=DESKTOP)
    try:
        page = context.new_page()
        sign_in(page, site, key)
        kept = [c for c in context.cookies() if c["name"] == "seojobs_session"]
        assert kept
        page.get_by_role("button", name="Sign out").click()
        expect(page).to_have_url(re.compile(r"/dashboard/login$"))
        context.add_cookies(kept)  # the cookie as it was before signing out
        page.goto(site.url("/dashboard/jobs"))
        expect(page).to_have_url(re.compile(r"/dashboard/login\?next="))
        expect(page.get_by_label("API key")).to_be_visible()
    finally:
        context.close()


def test_sign_in_from_the_keyboard_with_the_focus_visible(page: Page, site: Site) -> None:
    _user, key = site.user()
    page.goto(site.url("/dashboard/login"))
    field = page.get_by_label("API key")
    for _ in range(10):  # Tab through the page until the key field has the focus
        if field.evaluate("el => el === document.activeElement"):
            break
        page.keyboard.press("Tab")
    assert field.evaluate("el => el === document.activeElement")
    outline = field.evaluate("el => getComputedStyle(el).outlineStyle")
    assert outline not in ("none", ""), outline
    page.keyboard.type(key)
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", name="Overview")).to_be_visible()
