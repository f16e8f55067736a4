"""Dashboard project pages: create, rename, delete after a confirmation step, schedules
enabled and disabled, collected data as a table and an SVG chart; other users get 404 and
forms without their CSRF token are refused."""

from __future__ import annotations

import httpx
import pytest

from tests.api_helpers import Api
from tests.dashboard_helpers import collected_job, csrf_of, post_form, sign_in


@pytest.fixture
def app(own_idle: Api) -> Api:
    """One app per store for the module (``shared_idle``): each test as its own users, from
    its own loopback address."""
    return own_idle


def _create(client: httpx.Client, name: str) -> int:
    made = post_form(client, "/dashboard/projects", "/dashboard/projects", {"name": name})
    assert made.status_code == 303, made.text
    location = made.headers["location"]
    assert location.startswith("/dashboard/projects/")
    return int(location.rsplit("/", 1)[1])


def test_create_rename_and_delete_with_confirmation(app: Api) -> None:
    client = sign_in(app, app.account("alice").key)
    listed = client.get("/dashboard/projects")
    assert listed.status_code == 200 and 'href="/dashboard/projects"' in listed.text
    pid = _create(client, "Shop")
    shown = client.get(f"/dashboard/projects/{pid}")
    assert shown.status_code == 200 and "<h1>Shop</h1>" in shown.text
    assert f'href="/dashboard/jobs?project={pid}"' in shown.text
    assert "Shop" in client.get("/dashboard/projects").text

    page = f"/dashboard/projects/{pid}"
    renamed = post_form(client, page, f"{page}/rename", {"name": "  Shop EU "})
    assert renamed.status_code == 303 and renamed.headers["location"] == page
    assert "<h1>Shop EU</h1>" in client.get(page).text

    # A refused name is shown on the form, naming the field, with what was typed kept.
    _create(client, "Blog")
    taken = post_form(client, page, f"{page}/rename", {"name": "Blog"})
    assert taken.status_code == 422 and "name:" in taken.text and 'value="Blog"' in taken.text
    blank = post_form(client, "/dashboard/projects", "/dashboard/projects", {"name": "  "})
    assert blank.status_code == 422 and "name:" in blank.text

    confirm = client.get(f"{page}/delete")
    assert confirm.status_code == 200 and "Delete for good" in confirm.text
    assert "Shop EU" in client.get(page).text  # asking deletes nothing
    gone = client.post(f"{page}/delete", data={"csrf_token": csrf_of(confirm.text)})
    assert gone.status_code == 303 and gone.headers["location"] == "/dashboard/projects"
    assert client.get(page).status_code == 404
    assert "Shop EU" not in client.get("/dashboard/projects").text


def test_the_default_project_is_not_deleted(app: Api) -> None:
    alice = app.account("alice")
    client = sign_in(app, alice.key)
    page = f"/dashboard/projects/{alice.user.default_project_id}"
    refused = post_form(client, page, f"{page}/delete", {})
    assert refused.status_code == 409 and "default project" in refused.text
    assert client.get(page).status_code == 200


def test_schedules_are_disabled_and_enabled(app: Api) -> None:
    alice = app.account("alice")
    client = sign_in(app, alice.key)
    pid = _create(client, "Shop")
    made = app.client(alice).post(
        f"/v1/projects/{pid}/schedules",
        json={"name": "nightly", "type": "test_noop", "every_seconds": 3600},
    )
    assert made.status_code == 201, made.text
    sid = made.json()["data"]["id"]
    page = f"/dashboard/projects/{pid}"
    action = f"{page}/schedules/{sid}"
    assert "nightly" in client.get(page).text
    off = post_form(client, page, action, {"enabled": "false"})
    assert off.status_code == 303
    assert app.services.schedules.get(alice.user, pid, sid).enabled is False
    assert ">Enable<" in client.get(page).text
    on = post_form(client, page, action, {"enabled": "true"})
    assert on.status_code == 303
    assert app.services.schedules.get(alice.user, pid, sid).enabled is True
    bad = post_form(client, page, action, {"enabled": "maybe"})
    assert bad.status_code == 422 and "enabled" in bad.text


def test_collected_data_shows_as_a_table_and_its_findings_as_an_svg_chart(app: Api) -> None:
    alice = app.account("alice")
    client = sign_in(app, alice.key)
    pid = _create(client, "Shop")
    data = {"pages": 12, "scores": {"speed": 0.75}, "server": "nginx"}
    found = [("missing_title", "warning"), ("broken_link", "error"), ("slow", "warning")]
    job = collected_job(app.services, alice.user, pid, data, found)
    shown = client.get(f"/dashboard/projects/{pid}")
    assert shown.status_code == 200
    text = shown.text
    assert "test_crawl: latest results" in text
    assert "shop.test" in text and "scores.speed" in text and "nginx" in text
    # No chart of every number in the data (issue 28: max_pages beside pages_crawled): a
    # kind without a declared summary chart gets its findings' chart only.
    assert 'aria-label="test_crawl shop.test' not in text and "pages: 12," not in text
    assert f'href="/dashboard/jobs/{job.id}"' in text
    severity = f'aria-label="test_crawl findings by severity (job {job.id}): error: 1, warning: 2"'
    assert severity in text


def test_another_user_gets_404_and_forms_need_their_token(app: Api) -> None:
    alice = app.account("alice")
    client = sign_in(app, alice.key)
    pid = _create(client, "Shop")
    page = f"/dashboard/projects/{pid}"
    made = app.client(alice).post(
        f"/v1/projects/{pid}/schedules",
        json={"name": "nightly", "type": "test_noop", "every_seconds": 3600},
    )
    sid = made.json()["data"]["id"]

    bob = sign_in(app, app.account("bob").key)
    assert "Shop" not in bob.get("/dashboard/projects").text
    token = csrf_of(bob.get("/dashboard/projects").text)
    for path in (page, f"{page}/delete"):
        assert bob.get(path).status_code == 404, path
    for path, data in (
        (f"{page}/rename", {"name": "Mine"}),
        (f"{page}/delete", {}),
        (f"{page}/schedules/{sid}", {"enabled": "false"}),
    ):
        answer = bob.post(path, data={"csrf_token": token, **data})
        assert answer.status_code == 404, path
        assert "not yours" in answer.text
    assert client.get(page).status_code == 200 and "Shop" in client.get(page).text

    # Alice's own forms, posted without (or with someone else's) CSRF token, are refused.
    for data in ({"name": "X"}, {"name": "X", "csrf_token": token}):
        refused = client.post(f"{page}/rename", data=data)
        assert refused.status_code == 403, data
    assert client.post(f"{page}/delete", data={}).status_code == 403
    assert client.post("/dashboard/projects", data={"name": "Y"}).status_code == 403
    assert client.post(f"{page}/schedules/{sid}", data={"enabled": "false"}).status_code == 403
    assert client.get(page).status_code == 200
    assert app.services.schedules.get(alice.user, pid, sid).enabled is True


def test_every_registered_type_has_a_form_and_a_job_starts_from_one(app: Api) -> None:
    alice = app.account("alice")
    client = sign_in(app, alice.key)
    pid = _create(client, "Shop")
    new = f"/dashboard/projects/{pid}/new"
    kinds = app.services.registry.names()
    listed = client.get(new)
    assert listed.status_code == 200
    for kind in kinds:
        assert f'href="{new}?type={kind}"' in listed.text, kind
        form = client.get(new, params={"type": kind})
        assert form.status_code == 200, (kind, form.text)
        assert f'name="type" value="{kind}"' in form.text
    items = client.get(new, params={"type": "test_items"}).text
    assert '<textarea id="f-urls" name="p_urls"' in items  # an array of strings
    assert 'type="number" id="f-concurrency" name="p_concurrency" value="1" step="1" min="1"' in (
        items
    )
    assert 'type="checkbox" id="f-crash"' in client.get(new, params={"type": "test_fail"}).text

    started = post_form(
        client,
        f"{new}?type=test_items",
        new,
        {"type": "test_items", "p_urls": "a\n\n b \n", "p_concurrency": "2", "p_item_delay": ""},
    )
    assert started.status_code == 303, started.text
    job_id = int(started.headers["location"].rsplit("/", 1)[1])
    assert started.headers["location"] == f"/dashboard/jobs/{job_id}"
    job = app.services.jobs.get(alice.user, job_id)
    assert job.project_id == pid and job.kind == "test_items"
    assert job.params["urls"] == ["a", "b"] and job.params["concurrency"] == 2


def test_a_refused_job_form_names_the_field_and_keeps_the_input(app: Api) -> None:
    alice = app.account("alice")
    client = sign_in(app, alice.key)
    pid = _create(client, "Shop")
    new = f"/dashboard/projects/{pid}/new"
    before = app.services.jobs.page(alice.user, project_id=pid)
    too_long = post_form(
        client, f"{new}?type=test_sleep", new, {"type": "test_sleep", "p_seconds": "700"}
    )
    assert too_long.status_code == 422
    assert "seconds:" in too_long.text and 'value="700"' in too_long.text
    assert 'aria-invalid="true"' in too_long.text
    unreadable = post_form(
        client,
        f"{new}?type=test_items",
        new,
        {"type": "test_items", "p_urls": "x\ny", "p_concurrency": "two"},
    )
    assert unreadable.status_code == 422
    assert "concurrency: must be a whole number" in unreadable.text
    assert "x\ny</textarea>" in unreadable.text and 'value="two"' in unreadable.text
    missing = post_form(client, f"{new}?type=test_items", new, {"type": "test_items", "p_urls": ""})
    assert missing.status_code == 422 and "urls:" in missing.text
    unknown = post_form(client, new, new, {"type": "no_such_type"})
    assert unknown.status_code == 422 and "no_such_type" in unknown.text
    assert app.services.jobs.page(alice.user, project_id=pid) == before

    bob = sign_in(app, app.account("bob").key)
    assert bob.get(new, params={"type": "test_noop"}).status_code == 404
    token = csrf_of(bob.get("/dashboard/projects").text)
    taken = bob.post(new, data={"csrf_token": token, "type": "test_noop"})
    assert taken.status_code == 404
    assert client.post(new, data={"type": "test_noop"}).status_code == 403
    assert app.services.jobs.page(alice.user, project_id=pid) == before


def test_a_job_form_creates_a_schedule_with_the_same_params(app: Api) -> None:
    alice = app.account("alice")
    client = sign_in(app, alice.key)
    pid = _create(client, "Shop")
    new = f"/dashboard/projects/{pid}/new"
    form = client.get(new, params={"type": "test_items"}).text
    assert 'name="action" value="schedule"' in form and 'name="s_every_days"' in form
    assert "Can run on a schedule." in client.get(new).text
    assert f'href="{new}"' in client.get(f"/dashboard/projects/{pid}").text  # "New schedule"

    fields = {"type": "test_items", "p_urls": "a\nb", "p_concurrency": "2"}
    daily = post_form(
        client,
        f"{new}?type=test_items",
        new,
        {**fields, "action": "schedule", "s_name": " nightly ", "s_every_days": "1"},
    )
    assert daily.status_code == 303, daily.text
    assert daily.headers["location"] == f"/dashboard/projects/{pid}#schedules"
    weekly = post_form(
        client,
        f"{new}?type=test_items",
        new,
        {**fields, "action": "schedule", "s_name": "mondays", "s_cron": " 0 6 * * 1 "},
    )
    assert weekly.status_code == 303, weekly.text
    made = {s.name: s for s in app.services.schedules.in_project(alice.user, pid)}
    assert set(made) == {"nightly", "mondays"}
    assert made["nightly"].kind == "test_items" and made["nightly"].params["urls"] == ["a", "b"]
    assert made["nightly"].interval_seconds == app.services.settings.day_seconds
    assert made["nightly"].cron is None
    assert made["mondays"].cron == "0 6 * * 1" and made["mondays"].interval_seconds is None
    page = client.get(f"/dashboard/projects/{pid}").text
    assert "nightly" in page and "mondays" in page
    assert app.services.jobs.page(alice.user, project_id=pid) == []  # no job was started


def test_a_refused_schedule_names_the_field_and_keeps_the_input(app: Api) -> None:
    alice = app.account("alice")
    client = sign_in(app, alice.key)
    pid = _create(client, "Shop")
    new = f"/dashboard/projects/{pid}/new"
    fields = {"type": "test_items", "p_urls": "a", "action": "schedule", "s_name": "nightly"}

    def post(**sent: str) -> httpx.Response:
        answer = post_form(client, f"{new}?type=test_items", new, {**fields, **sent})
        assert answer.status_code == 422, answer.text
        assert "The schedule was not created:" in answer.text
        return answer

    assert "schedule: give every N days or a cron expression" in post().text
    both = post(s_every_days="1", s_cron="0 6 * * 1").text
    assert "not both" in both and 'value="0 6 * * 1"' in both
    unreadable = post(s_every_days="often").text
    assert "every_days: must be a number" in unreadable and 'value="often"' in unreadable
    assert 'id="s-every_days" name="s_every_days" value="often"' in unreadable
    assert 'aria-describedby="s-every_days-hint s-every_days-error" aria-invalid="true"' in (
        unreadable
    )
    assert "every_days: the interval must be from" in post(s_every_days="0").text
    assert "cron:" in post(s_cron="61 * * * *").text
    assert "name:" in post(s_name="  ", s_every_days="1").text
    # A params refusal still lands on its params field.
    param = post(p_urls="", s_every_days="1").text
    assert "urls:" in param and 'aria-invalid="true"' in param
    assert app.services.schedules.in_project(alice.user, pid) == []

    made = post_form(client, f"{new}?type=test_items", new, {**fields, "s_every_days": "1"})
    assert made.status_code == 303
    taken = post(s_every_days="2").text
    assert "name: this project already has a schedule named &#39;nightly&#39;" in taken
    assert 'id="s-name-error"' in taken
    assert len(app.services.schedules.in_project(alice.user, pid)) == 1


def test_a_type_that_is_only_started_offers_no_schedule(app: Api) -> None:
    alice = app.account("alice")
    client = sign_in(app, alice.key)
    pid = _create(client, "Shop")
    new = f"/dashboard/projects/{pid}/new"
    assert not app.services.kind("domain_lookup").schedulable
    form = client.get(new, params={"type": "domain_lookup"}).text
    assert 'name="action" value="job"' in form
    assert 'value="schedule"' not in form and "s_every_days" not in form
    # Posted anyway (an old page, a hand-made request): refused by the services.
    sent = {"type": "domain_lookup", "p_domain": "example.com", "action": "schedule"}
    sent |= {"s_name": "n", "s_every_days": "1"}
    refused = post_form(client, f"{new}?type=domain_lookup", new, sent)
    assert refused.status_code == 422
    assert "type: domain_lookup jobs cannot be scheduled" in refused.text
    assert app.services.schedules.in_project(alice.user, pid) == []
