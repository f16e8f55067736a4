"""One validation path (issue 25.5): whichever door a value comes through (the API, the
dashboard's forms, the services every door calls), the same rule refuses it before anything is
stored or charged. Members: a job's title (the dashboard took control characters the API
refused), a schedule's cron expression (the dashboard took a tab or a C1 character inside it),
a site audit's ``user_agent`` (CR, LF, DEL, NUL, blank: the audit used to be charged and then
fail ``internal_error``), project names at the services. On SQLite (every refusal comes before
the store); a value that is taken is stored on both stores."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from seojobs.records import UserRecord
from seojobs.services import Invalid
from tests.api_helpers import Api, error_fields, owned, shared_api
from tests.conftest import STORES
from tests.dashboard_helpers import csrf_of, post_form, sign_in

# Store-agnostic: each value is refused before anything is stored; the stores' own behaviour
# is tested on both elsewhere (test_store_contract, test_api_text keeps text as sent).
pytestmark = pytest.mark.stores("sqlite")

URL = "https://a.example/page"
TITLES = {
    "escape": "\x1b[31mred",
    "CR inside": "a\rb",
    "LF inside": "a\nb",
    "DEL": "a\x7fb",
    "NEL (C1)": "a\x85b",
    "CRLF at the end": "title\r\n",
}
AGENTS = {
    "CRLF": "bot/1.0\r\nX-Injected: 1",
    "LF": "bot/1.0\nx",
    "DEL": "bot/1.0\x7f",
    "NUL": "bot\x00",
    "tab": "bot\t1.0",
    "C1": "bot\x9b1",
    "blank": "   ",
}


@pytest.fixture(scope="module")
def shared_app(module_store: str, request: pytest.FixtureRequest) -> Iterator[Api]:
    """One app per store for the module: every test works as its own new users, from its
    own loopback address."""
    with shared_api(module_store, request) as made:
        yield made


@pytest.fixture
def app(shared_app: Api) -> Iterator[Api]:
    yield from owned(shared_app)


def _audit_pages_used(app: Api, user: UserRecord) -> int:
    usage = app.services.quotas.usage(user)
    return sum(use.used for name, use in usage.items() if name.startswith("audit_pages"))


@pytest.mark.parametrize("title", TITLES.values(), ids=TITLES.keys())
def test_the_dashboard_refuses_a_title_the_api_refuses(app: Api, title: str) -> None:
    alice = app.account("alice")
    api_answer = app.client(alice).post(
        "/api/v1/index-check/jobs", json={"urls": [URL], "title": title}
    )
    assert api_answer.status_code == 422 and "title" in error_fields(api_answer)
    client = sign_in(app, alice.key)
    form = {"kind": "index_check", "project": str(alice.user.default_project_id), "urls": URL}
    answer = post_form(client, "/dashboard/new", "/dashboard/new", {**form, "title": title})
    assert answer.status_code == 422, answer.text
    assert 'id="title-error"' in answer.text and "control character" in answer.text
    assert app.services.jobs.page(alice.user) == []


def test_every_caller_of_the_services_meets_the_same_rules(app: Api) -> None:
    services = app.services
    alice = app.account("alice").user
    with pytest.raises(Invalid) as refused:
        services.jobs.create(alice, "test_noop", {}, title="a\x1bb")
    assert refused.value.errors[0].path == ("title",)
    with pytest.raises(Invalid) as refused:
        services.jobs.create(alice, "test_noop", {}, title="t" * 501)
    assert refused.value.errors[0].path == ("title",)
    for name in ("a\nb", "\x85", "   "):
        with pytest.raises(Invalid):
            services.accounts.create_project(alice, name)
    project = services.accounts.create_project(alice, "  site  ")
    assert project.name == "site"  # trimmed, as the API's model trims it
    with pytest.raises(Invalid):
        services.accounts.rename_project(alice, project.id, "x\ty")
    with pytest.raises(Invalid) as refused:
        services.schedules.create(
            alice, name="n", kind="test_noop", params={}, cron="0 3 * * *\x85"
        )
    assert refused.value.errors[0].path == ("cron",)
    assert services.jobs.page(alice) == []


@pytest.mark.parametrize("cron", ["0 3 *\t* *", "0 3 *\x85* *", "0\x0b3 * * *"])
def test_the_dashboards_schedule_form_refuses_a_cron_the_api_refuses(app: Api, cron: str) -> None:
    alice = app.account("alice")
    project = alice.user.default_project_id
    schedule = {"name": "nightly", "type": "test_noop", "cron": cron}
    api_answer = app.client(alice).post(f"/v1/projects/{project}/schedules", json=schedule)
    assert api_answer.status_code == 422 and "cron" in error_fields(api_answer)
    client = sign_in(app, alice.key)
    page = f"/dashboard/projects/{project}/new?type=test_noop"
    form = {"type": "test_noop", "action": "schedule", "s_name": "nightly", "s_cron": cron}
    answer = post_form(client, page, f"/dashboard/projects/{project}/new", form)
    assert answer.status_code == 422, answer.text
    assert "cron" in answer.text
    assert app.services.schedules.in_project(alice.user, project) == []


@pytest.mark.parametrize("agent", AGENTS.values(), ids=AGENTS.keys())
def test_a_site_audits_user_agent_is_refused_at_submission_through_every_door(
    app: Api, agent: str
) -> None:
    alice = app.account("alice")
    project = alice.user.default_project_id
    params = {"start_url": URL, "max_pages": 5, "user_agent": agent}
    client = app.client(alice)
    for answer in (
        client.post(f"/v1/projects/{project}/jobs", json={"type": "site_audit", "params": params}),
        client.post(f"/v1/projects/{project}/audits", json=params),
    ):
        assert answer.status_code == 422, answer.text
        assert any(f.endswith("user_agent") for f in error_fields(answer)), answer.text
    browser = sign_in(app, alice.key)
    page = f"/dashboard/projects/{project}/new?type=site_audit"
    token = csrf_of(browser.get(page).text)
    form = {"csrf_token": token, "type": "site_audit", "start_url": URL, "user_agent": agent}
    answer = browser.post(f"/dashboard/projects/{project}/new", data=form)
    if "\x00" in agent:  # no dashboard form takes a NUL at all
        assert answer.status_code == 400, answer.text
    else:
        assert answer.status_code == 422, answer.text
        assert "user_agent" in answer.text
    # Nothing stored, nothing charged.
    assert app.services.jobs.page(alice.user) == []
    assert _audit_pages_used(app, alice.user) == 0


@pytest.mark.stores(*STORES)  # taken: stored on each store
def test_a_plain_user_agent_is_taken(app: Api) -> None:
    alice = app.account("alice")
    params = {"start_url": URL, "max_pages": 5, "user_agent": "SiteBot/2.0 (+https://a.example)"}
    answer = app.client(alice).post(
        f"/v1/projects/{alice.user.default_project_id}/jobs",
        json={"type": "site_audit", "params": params},
    )
    assert answer.status_code == 202, answer.text
