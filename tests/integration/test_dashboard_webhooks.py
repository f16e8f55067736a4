"""Dashboard webhooks page (issue 27.7) through the dashboard's HTTP on both stores: add an
endpoint (its secret shown once, on the answer to the form), pause, resume and delete it, list
its deliveries and replay one; bad input named by field; other users get 404; forms need
their CSRF token and spend the request budget."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.api_helpers import Account, Api
from tests.dashboard_helpers import csrf_of, post_form, sign_in

PAGE = "/dashboard/webhooks"
HOOK = "https://hooks.example.com/seojobs"  # registering looks nothing up: nothing is dialled


@pytest.fixture
def idle(own_idle: Api) -> Api:
    """One server per store for the module (no worker: deliveries stay pending), each test
    with its own users."""
    return own_idle


def add(client: httpx.Client, **fields: str) -> httpx.Response:
    return post_form(client, PAGE, PAGE, {"url": HOOK, **fields})


def hooks_of(app: Api, account: Account) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = app.client(account).get("/v1/webhooks").json()["data"]
    return found


def test_add_pause_resume_and_delete_with_the_secret_shown_once(idle: Api) -> None:
    alice = idle.account("alice")
    client = sign_in(idle, alice.key)
    listed = client.get(PAGE)
    assert listed.status_code == 200 and "No endpoints yet" in listed.text
    assert f'href="{PAGE}"' in client.get("/dashboard").text  # in the navigation

    made = add(client, description="orders", **{"event:job.failed": "on"})
    assert made.status_code == 201, made.text
    [hook] = hooks_of(idle, alice)
    assert hook["url"] == HOOK and hook["events"] == ["job.failed"]
    assert hook["description"] == "orders" and hook["enabled"] is True
    secret = idle.services.webhooks.get(alice.user, hook["id"]).secret
    assert secret.startswith("whsec_") and f'value="{secret}"' in made.text
    assert made.headers["cache-control"] == "no-store"
    # Shown once: no page shows it again.
    for path in (PAGE, f"{PAGE}/{hook['id']}"):
        shown = client.get(path)
        assert shown.status_code == 200 and HOOK in shown.text and secret not in shown.text

    # Every event when none is ticked.
    assert add(client).status_code == 201
    assert hooks_of(idle, alice)[1]["events"] == "*"

    paused = post_form(client, PAGE, f"{PAGE}/{hook['id']}/enabled", {"enabled": "false"})
    assert paused.status_code == 303 and paused.headers["location"] == PAGE
    assert hooks_of(idle, alice)[0]["enabled"] is False
    assert "paused" in client.get(PAGE).text
    resumed = post_form(client, PAGE, f"{PAGE}/{hook['id']}/enabled", {"enabled": "true"})
    assert resumed.status_code == 303 and hooks_of(idle, alice)[0]["enabled"] is True
    odd = post_form(client, PAGE, f"{PAGE}/{hook['id']}/enabled", {"enabled": "maybe"})
    assert odd.status_code == 422 and "enabled:" in odd.text

    gone = post_form(client, PAGE, f"{PAGE}/{hook['id']}/delete", {})
    assert gone.status_code == 303 and gone.headers["location"] == PAGE
    assert [h["id"] for h in hooks_of(idle, alice)] != [hook["id"]]
    assert client.get(f"{PAGE}/{hook['id']}").status_code == 404


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"url": "http://127.0.0.1:8080/hook"}, "url:"),  # the address policy
        ({"url": "ftp://hooks.example.com/"}, "url:"),
        ({"url": ""}, "url:"),
        ({"description": "two\nlines"}, "description:"),
        ({"description": "x" * 501}, "description:"),
    ],
)
def test_bad_input_is_refused_naming_the_field(
    idle: Api, fields: dict[str, str], named: str
) -> None:
    alice = idle.account("alice")
    client = sign_in(idle, alice.key)
    refused = add(client, **fields)
    assert refused.status_code == 422 and named in refused.text, refused.text
    assert 'role="alert"' in refused.text and "whsec_" not in refused.text
    assert hooks_of(idle, alice) == []


def test_deliveries_are_listed_and_replayed(idle: Api) -> None:
    alice = idle.account("alice")
    client = sign_in(idle, alice.key)
    assert add(client).status_code == 201
    [hook] = hooks_of(idle, alice)
    api = idle.client(alice)
    project = api.post("/v1/projects", json={"name": "hooked"}).json()["data"]["id"]
    job = api.post(f"/v1/projects/{project}/jobs", json={"type": "test_noop"}).json()["data"]
    assert api.post(f"/v1/jobs/{job['id']}/cancel").status_code == 200  # job.failed, queued
    [delivery] = api.get(f"/v1/webhooks/{hook['id']}/deliveries").json()["data"]

    page = f"{PAGE}/{hook['id']}"
    shown = client.get(page)
    assert shown.status_code == 200 and "job.failed" in shown.text
    assert f'href="/dashboard/jobs/{job["id"]}"' in shown.text
    assert delivery["status"] == "pending" and "none yet" in shown.text  # no worker here
    replay = f"{page}/deliveries/{delivery['id']}/replay"
    replayed = post_form(client, page, replay, {})
    assert replayed.status_code == 303 and replayed.headers["location"] == page
    # Not a delivery of this endpoint: 404.
    other = post_form(client, page, f"{page}/deliveries/{delivery['id'] + 1000}/replay", {})
    assert other.status_code == 404


def test_other_users_get_404_and_forms_need_their_csrf_token(idle: Api) -> None:
    alice, bob = idle.account("alice"), idle.account("bob")
    client = sign_in(idle, alice.key)
    assert add(client).status_code == 201
    [hook] = hooks_of(idle, alice)
    page = f"{PAGE}/{hook['id']}"

    intruder = sign_in(idle, bob.key)
    assert intruder.get(page).status_code == 404
    assert HOOK not in intruder.get(PAGE).text
    token = csrf_of(intruder.get(PAGE).text)
    for action, data in (
        (f"{page}/enabled", {"enabled": "false"}),
        (f"{page}/delete", {}),
        (f"{page}/deliveries/1/replay", {}),
    ):
        answer = intruder.post(action, data={"csrf_token": token, **data})
        assert answer.status_code == 404, action
    # Without the session's token: refused before anything is looked at.
    for action, data in (
        (PAGE, {"url": HOOK}),
        (f"{page}/enabled", {"enabled": "false"}),
        (f"{page}/delete", {}),
        (f"{page}/deliveries/1/replay", {}),
    ):
        assert client.post(action, data=data).status_code == 403, action
        assert client.post(action, data={"csrf_token": token, **data}).status_code == 403
    assert hooks_of(idle, alice) == [hook]  # all as it was


def test_the_forms_spend_the_users_request_budget(idle: Api) -> None:
    alice = idle.account("alice", rate_limit="2/minute")
    client = sign_in(idle, alice.key)
    assert add(client).status_code == 201
    [hook] = hooks_of(idle, alice)  # the API's read spends the second request
    token = csrf_of(client.get(PAGE).text)
    for action, data in (
        (PAGE, {"url": HOOK}),
        (f"{PAGE}/{hook['id']}/enabled", {"enabled": "false"}),
        (f"{PAGE}/{hook['id']}/delete", {}),
    ):
        limited = client.post(action, data={"csrf_token": token, **data})
        assert limited.status_code == 429, (action, limited.text)
    assert [h.id for h in idle.services.webhooks.of(alice.user)] == [hook["id"]]
    assert idle.services.webhooks.get(alice.user, hook["id"]).enabled
