"""Dashboard sign-in: a signed session cookie per sign-in kept in the database, CSRF tokens on
every form, sign-out that ends the session for good, and wrong keys limited like the API's.

One app per store for the module (the tests keep to their own users), each test with its own
loopback address, so the failed sign-ins it counts are its own."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.api_helpers import V1, Api, api, app_routes, owned, shared_api, stored
from tests.conftest import STORES, make_settings
from tests.dashboard_helpers import browser, csrf_of, post_form, post_login, sign_in

# Store-agnostic (redirects, cookie flags, CSRF, the per-address limiter, the input gate): SQLite
# only. The tests that write, read and end the sessions the database keeps run on both stores.
pytestmark = pytest.mark.stores("sqlite")

FAILURE_LIMIT = 3


@pytest.fixture(scope="module")
def shared_app(module_store: str, request: pytest.FixtureRequest) -> Iterator[Api]:
    with shared_api(module_store, request, auth_failure_limit=f"{FAILURE_LIMIT}/minute") as made:
        yield made


@pytest.fixture
def app(shared_app: Api) -> Iterator[Api]:
    yield from owned(shared_app)


def test_root_and_pages_send_a_visitor_to_sign_in(app: Api) -> None:
    client = browser(app)
    root = client.get("/")
    assert root.status_code == 307 and root.headers["location"] == "/dashboard"
    page = client.get("/dashboard?view=all")
    assert page.status_code == 303
    assert page.headers["location"] == "/dashboard/login?next=/dashboard%3Fview%3Dall"
    live = client.get("/dashboard/live?ids=1")  # scripts get 401, not a sign-in page
    assert live.status_code == 401


@pytest.mark.stores(*STORES)  # sessions kept in the database
def test_a_key_signs_in_with_a_signed_http_only_lax_cookie(app: Api) -> None:
    alice = app.account("alice")
    client = browser(app)
    answer = post_login(client, alice.key, next_path="/dashboard/jobs")
    assert answer.status_code == 303 and answer.headers["location"] == "/dashboard/jobs"
    cookie = answer.headers["set-cookie"].lower()
    assert "seojobs_session=" in cookie and "httponly" in cookie and "samesite=lax" in cookie
    assert "secure" not in cookie  # plain HTTP here: a Secure cookie would never come back
    assert alice.key not in answer.headers["set-cookie"]  # the key never sits in a cookie
    overview = client.get("/dashboard")
    assert overview.status_code == 200 and alice.user.name in overview.text
    assert "default-src 'self'" in overview.headers["content-security-policy"]
    assert overview.headers["cache-control"] == "no-store"


def test_sign_in_goes_only_to_dashboard_paths(app: Api) -> None:
    alice = app.account("alice")
    for target in ("https://evil.example/", "//evil.example/x", "/dashboard//evil.example"):
        answer = post_login(browser(app), alice.key, next_path=target)
        assert answer.headers["location"] == "/dashboard", target


def test_a_tampered_or_unknown_cookie_is_no_session(app: Api) -> None:
    alice = app.account("alice")
    client = sign_in(app, alice.key)
    value = client.cookies["seojobs_session"]
    token, mac = value.split(".")
    for forged in (f"{token}x.{mac}", f"{token}.{mac[:-2]}AA", token, "a.b.c", ""):
        other = browser(app)
        other.cookies.set("seojobs_session", forged)
        assert other.get("/dashboard").status_code == 303, forged


def test_a_wrong_key_is_refused_and_limited_per_address_like_the_api(app: Api) -> None:
    alice = app.account("alice")
    client = browser(app)
    for _ in range(FAILURE_LIMIT):
        refused = post_login(client, "sk_wrong")
        assert refused.status_code == 401 and "not valid" in refused.text
        assert "seojobs_session" not in refused.headers.get("set-cookie", "")
    limited = post_login(client, alice.key)  # even the right key, from this address, for now
    assert limited.status_code == 429
    assert "failed authentications" in limited.text
    # The API shares the budget: it is one address's failures, whatever the surface.
    api_answer = client.get(f"{V1}/usage", headers={"Authorization": "sk_wrong"})
    assert api_answer.status_code == 429


def test_every_form_needs_its_csrf_token(app: Api) -> None:
    alice = app.account("alice")
    login_page = browser(app).get("/dashboard/login")
    client = browser(app)  # a form token from another visit is not this visitor's
    refused = client.post(
        "/dashboard/login", data={"csrf_token": csrf_of(login_page.text), "api_key": alice.key}
    )
    assert refused.status_code == 403
    signed = sign_in(app, alice.key)
    for data in ({}, {"csrf_token": ""}, {"csrf_token": "forged"}):
        assert signed.post("/dashboard/logout", data=data).status_code == 403
    assert signed.get("/dashboard").status_code == 200  # still signed in


@pytest.mark.stores(*STORES)  # sessions kept in the database
def test_sign_out_ends_the_session_for_good(app: Api) -> None:
    alice = app.account("alice")
    client = sign_in(app, alice.key)
    kept = client.cookies["seojobs_session"]
    out = post_form(client, "/dashboard", "/dashboard/logout", {})
    assert out.status_code == 303 and out.headers["location"] == "/dashboard/login"
    assert 'seojobs_session=""' in out.headers["set-cookie"] or "max-age=0" in (
        out.headers["set-cookie"].lower()
    )
    replay = browser(app)
    replay.cookies.set("seojobs_session", kept)  # the cookie as it was before signing out
    assert replay.get("/dashboard").status_code == 303
    assert replay.get("/dashboard/live?ids=1").status_code == 401


@pytest.mark.stores(*STORES)  # sessions kept in the database
def test_rotating_the_key_or_disabling_the_user_ends_their_sessions(app: Api) -> None:
    alice, bob = app.account("alice"), app.account("bob")
    alice_client, bob_client = sign_in(app, alice.key), sign_in(app, bob.key)
    app.services.accounts.rotate_key(alice.user.name)
    app.services.accounts.disable_user(bob.user.name)
    assert alice_client.get("/dashboard").status_code == 303
    assert bob_client.get("/dashboard").status_code == 303


@pytest.mark.stores(*STORES)  # sessions kept in the database
def test_sessions_are_the_users_own(app: Api) -> None:
    alice, bob = app.account("alice"), app.account("bob")
    made = app.client(alice).post(
        f"{V1}/index-check/jobs", json={"urls": ["https://example.com/a"]}
    )
    assert made.status_code in (200, 201, 202), made.text
    job_id = made.json()["job_id"]
    mine = sign_in(app, alice.key).get(f"/dashboard/live?ids={job_id}")
    assert [j["id"] for j in mine.json()["jobs"]] == [job_id]
    theirs = sign_in(app, bob.key).get(f"/dashboard/live?ids={job_id}")
    assert theirs.json() == {"jobs": []}


def test_cookies_are_secure_over_https(store_url: str) -> None:
    settings = make_settings(store_url, trusted_proxies=["127.0.0.1"])
    with api(settings) as running:
        alice = running.account("alice")
        client = httpx.Client(
            base_url=running.base, headers={"X-Forwarded-Proto": "https"}, timeout=60.0
        )
        running.clients.append(client)
        form = client.get("/dashboard/login")
        assert "; secure" in form.headers["set-cookie"].lower()
        # httpx keeps Secure cookies for https URLs only: send the form's cookie by hand.
        token = form.headers["set-cookie"].split(";")[0]
        answer = client.post(
            "/dashboard/login",
            data={"csrf_token": csrf_of(form.text), "api_key": alice.key},
            headers={"Cookie": token},
        )
        assert answer.status_code == 303, answer.text
        assert "; secure" in answer.headers["set-cookie"].lower()


# The parts of page addresses other than ids: a static file, a job view's issue, page and table.
OTHER_PARTS = {"name": "app.css", "code": "title_missing", "seq": 0, "number": 1}
PAGE_IDS = ("job_id", "project_id", "schedule_id", "webhook_id", "delivery_id")


def test_nul_in_a_query_string_is_an_error_page_naming_it_on_every_page(app: Api) -> None:
    """The API's input gate covers the pages too; they answer with a page, not problem+json."""
    alice = app.account("alice")
    client = sign_in(app, alice.key)
    before = stored(app)
    routes = app_routes(app.app, pages=True)
    assert len(routes) >= 6  # the walk finds the pages
    for method, path, _route in routes:
        url = path.format(**OTHER_PARTS, **dict.fromkeys(PAGE_IDS, 1))
        answer = client.request(method, f"{url}?note=a%00b")
        assert answer.status_code == 422, (method, path, answer.status_code)
        if url.startswith("/dashboard") and not url.startswith("/dashboard/live"):
            assert answer.headers["content-type"].startswith("text/html"), (method, path)
            assert "note" in answer.text, (method, path)
    assert stored(app) == before


@pytest.mark.parametrize("odd", ["+1", "1_0", "%20 1", "%D9%A3", "0", "9223372036854775808"])
def test_odd_ids_in_a_page_address_are_an_error_page_naming_them(app: Api, odd: str) -> None:
    """Ids in a page's address follow the API's rule (ASCII digits, 1 to 2^63-1), on every
    page with an id in its path; nothing is read or written under a lax reading of them."""
    alice = app.account("alice")
    client = sign_in(app, alice.key)
    before = stored(app)
    walked = 0
    for method, path, _route in app_routes(app.app, pages=True):
        ids = [name for name in PAGE_IDS if f"{{{name}}}" in path]
        for name in ids:
            values = {other: "1" for other in ids} | {name: odd}
            answer = client.request(method, path.format(**OTHER_PARTS, **values))
            assert answer.status_code == 422, (method, path, name, answer.status_code)
            assert answer.headers["content-type"].startswith("text/html"), (method, path)
            assert name in answer.text, (method, path, name)
            walked += 1
    assert walked >= 16  # the jobs', the projects' and the webhooks' pages
    assert stored(app) == before
