"""The dashboard's jobs pages on both stores: the list (filters, pages both ways), a job's
page (its items, the CSV the API gives, cancelling with CSRF), another user's jobs answering
404, and the form that starts an index submission or check."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

import httpx
import pytest

from seojobs.records import JobRecord, UserRecord
from tests.api_helpers import Api, api
from tests.conftest import make_settings
from tests.dashboard_helpers import csrf_of, post_form, sign_in

URLS = [f"https://a.example/p{i}" for i in range(5)]
FAILING = [URLS[1], URLS[3]]
_JOB_LINK = re.compile(r'href="/dashboard/jobs/(\d+)"')


@pytest.fixture
def app(store_url: str) -> Iterator[Api]:
    """No worker: jobs stay pending."""
    with api(make_settings(store_url)) as running:
        yield running


@pytest.fixture
def working(store_url: str) -> Iterator[Api]:
    with api(make_settings(store_url), run_worker=True) as running:
        yield running


def listed(html: str) -> list[int]:
    """The job ids a list page links to, in order."""
    return [int(n) for n in dict.fromkeys(_JOB_LINK.findall(html))]


def item_rows(html: str) -> list[str]:
    """The inputs of the items table's rows."""
    return re.findall(r'<th scope="row" data-label="Input">([^<]*)</th>', html)


def wait_final(app: Api, user: UserRecord, job_id: int) -> JobRecord:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        job = app.services.jobs.get(user, job_id)
        if job.is_final:
            return job
        time.sleep(0.1)
    raise AssertionError(f"job {job_id} did not finish")


def pager(html: str, rel: str) -> str | None:
    found = re.search(rf'<a href="([^"]+)" rel="{rel}"', html)
    return found.group(1).replace("&amp;", "&") if found else None


def test_the_list_filters_and_pages_both_ways(app: Api) -> None:
    alice = app.account("alice")
    svc = app.services
    other = svc.accounts.create_project(alice.user, "other")
    # 55 noop jobs in the default project (more than a page of 50), 3 in "other".
    made = [svc.jobs.create(alice.user, "test_sleep", {"seconds": 30})[0].id for _ in range(55)]
    in_other = [
        svc.jobs.create(alice.user, "test_noop", {}, project_id=other.id)[0].id for _ in range(3)
    ]
    client = sign_in(app, alice.key)

    first = client.get("/dashboard/jobs", params={"type": "test_sleep"})
    assert first.status_code == 200
    newest_first = sorted(made, reverse=True)
    assert listed(first.text) == newest_first[:50]
    assert pager(first.text, "prev") is None
    older = pager(first.text, "next")
    assert older is not None and "type=test_sleep" in older
    second = client.get(older)
    assert listed(second.text) == newest_first[50:]
    assert pager(second.text, "next") is None
    newer = pager(second.text, "prev")
    assert newer is not None
    back = client.get(newer)
    assert listed(back.text) == newest_first[:50]

    by_project = client.get("/dashboard/jobs", params={"project": str(other.id)})
    assert listed(by_project.text) == sorted(in_other, reverse=True)
    by_type = client.get("/dashboard/jobs", params={"type": "test_noop"})
    assert listed(by_type.text) == sorted(in_other, reverse=True)
    none_failed = client.get("/dashboard/jobs", params={"status": "failed"})
    assert listed(none_failed.text) == []
    pending = client.get("/dashboard/jobs", params={"status": "pending", "project": other.id})
    assert listed(pending.text) == sorted(in_other, reverse=True)
    today = svc.clock().date()
    since = client.get("/dashboard/jobs", params={"since": today.isoformat(), "type": "test_noop"})
    assert listed(since.text) == sorted(in_other, reverse=True)
    until = client.get("/dashboard/jobs", params={"until": "2001-01-01"})
    assert listed(until.text) == []

    for field, value in (
        ("status", "done-ish"),
        ("type", "nothing_like_it"),
        ("since", "yesterday"),
        ("project", "x1"),
        ("before", "-3"),
    ):
        refused = client.get("/dashboard/jobs", params={field: value})
        assert refused.status_code == 422, field
        assert "text/html" in refused.headers["content-type"]
        assert f"{field}:" in refused.text


def test_a_job_page_shows_items_and_gives_the_apis_csv(working: Api) -> None:
    app = working
    alice = app.account("alice")
    job, _ = app.services.jobs.create(
        alice.user, "test_items", {"urls": URLS, "fail_items": FAILING}
    )
    wait_final(app, alice.user, job.id)
    client = sign_in(app, alice.key)

    shown = client.get(f"/dashboard/jobs/{job.id}")
    assert shown.status_code == 200
    assert item_rows(shown.text) == URLS
    assert "Cancel job" not in shown.text  # final: nothing to cancel
    assert "Started" in shown.text and "Attempts" in shown.text

    ok_only = client.get(f"/dashboard/jobs/{job.id}", params={"outcome": "ok"})
    assert item_rows(ok_only.text) == [u for u in URLS if u not in FAILING]

    csv = client.get(f"/dashboard/jobs/{job.id}/items.csv")
    assert csv.status_code == 200 and csv.headers["content-type"].startswith("text/csv")
    assert "attachment" in csv.headers["content-disposition"]
    from_api = app.client(alice).get(f"/v1/jobs/{job.id}/items", headers={"Accept": "text/csv"})
    assert from_api.status_code == 200
    assert csv.content == from_api.content
    assert csv.text.count("\n") == len(URLS) + 1


def test_an_index_submission_shows_its_follow_up_check(app: Api) -> None:
    alice = app.account("alice")
    job, _ = app.services.jobs.create(alice.user, "index_submit", {"urls": URLS[:2], "checker": 2})
    client = sign_in(app, alice.key)
    shown = client.get(f"/dashboard/jobs/{job.id}")
    assert shown.status_code == 200
    assert "scheduled_check_days" in shown.text and "scheduled_check_at" in shown.text
    (check,) = app.services.jobs.children([job])
    assert f'href="/dashboard/jobs/{check.id}"' in shown.text


def test_cancel_from_the_page_needs_its_csrf_token(app: Api) -> None:
    alice = app.account("alice")
    job, _ = app.services.jobs.create(alice.user, "test_sleep", {"seconds": 30})
    client = sign_in(app, alice.key)
    action = f"/dashboard/jobs/{job.id}/cancel"
    refused = client.post(action, data={})
    assert refused.status_code == 403
    assert not app.services.jobs.get(alice.user, job.id).is_final
    done = post_form(client, f"/dashboard/jobs/{job.id}", action, {})
    assert done.status_code == 303 and done.headers["location"] == f"/dashboard/jobs/{job.id}"
    cancelled = app.services.jobs.get(alice.user, job.id)
    assert cancelled.state == "failed" and cancelled.error_code == "cancelled"
    page = client.get(f"/dashboard/jobs/{job.id}")
    assert "cancelled" in page.text and "Cancel job" not in page.text


def test_another_users_job_is_not_found_on_every_page(app: Api) -> None:
    alice, bob = app.account("alice"), app.account("bob")
    job, _ = app.services.jobs.create(alice.user, "test_sleep", {"seconds": 30})
    as_bob = sign_in(app, bob.key)
    missing = as_bob.get("/dashboard/jobs/999999")
    for path in (f"/dashboard/jobs/{job.id}", f"/dashboard/jobs/{job.id}/items.csv"):
        answer = as_bob.get(path)
        assert answer.status_code == 404, path
        assert answer.text == missing.text
    token = csrf_of(as_bob.get("/dashboard/jobs").text)
    cancel = as_bob.post(f"/dashboard/jobs/{job.id}/cancel", data={"csrf_token": token})
    assert cancel.status_code == 404
    assert not app.services.jobs.get(alice.user, job.id).is_final
    assert job.id not in listed(as_bob.get("/dashboard/jobs").text)


def test_the_new_job_form_keeps_input_on_errors_and_starts_a_check(app: Api) -> None:
    alice = app.account("alice")
    client = sign_in(app, alice.key)
    form = client.get("/dashboard/new")
    assert form.status_code == 200
    token = csrf_of(form.text)
    project = str(alice.user.default_project_id)
    typed = "https://a.example/ok\nnot a url at all\n"
    bad = client.post(
        "/dashboard/new",
        data={"csrf_token": token, "kind": "index_check", "project": project, "urls": typed},
    )
    assert bad.status_code == 422
    assert "urls: line 2" in bad.text
    assert "not a url at all" in bad.text  # what was typed is still there
    empty = client.post(
        "/dashboard/new",
        data={"csrf_token": token, "kind": "index_check", "project": project, "urls": ""},
    )
    assert empty.status_code == 422 and "urls:" in empty.text
    no_project = client.post(
        "/dashboard/new",
        data={"csrf_token": token, "kind": "index_check", "project": "999999", "urls": typed},
    )
    assert no_project.status_code == 422 and "project:" in no_project.text
    assert "not a url at all" in no_project.text
    no_csrf = client.post("/dashboard/new", data={"kind": "index_check", "urls": URLS[0]})
    assert no_csrf.status_code == 403

    urls = "\n".join(URLS[:3]) + "\n"
    made = client.post(
        "/dashboard/new",
        data={"csrf_token": token, "kind": "index_check", "project": project, "urls": urls},
    )
    assert made.status_code == 303
    job_id = int(made.headers["location"].rsplit("/", 1)[1])
    job = app.services.jobs.get(alice.user, job_id)
    assert job.kind == "index_check" and job.project_id == alice.user.default_project_id
    items = app.services.jobs.items(alice.user, job_id)
    assert [i.input for i in items] == URLS[:3]
    assert isinstance(client.get(made.headers["location"]), httpx.Response)


def test_over_quota_or_rate_limit_the_form_answers_as_the_api_does(store_url: str) -> None:
    with api(make_settings(store_url, quota_check_daily=2)) as app:
        alice = app.account("alice", rate_limit="2/minute")
        client = sign_in(app, alice.key)
        token = csrf_of(client.get("/dashboard/new").text)
        form = {"csrf_token": token, "kind": "index_check"}
        form["project"] = str(alice.user.default_project_id)
        # Over the quota the job exists, failed with quota_exceeded (the API's 202 body says
        # the same): its page shows why.
        over = client.post("/dashboard/new", data={**form, "urls": "\n".join(URLS[:3])})
        assert over.status_code == 303
        job = app.services.jobs.get(alice.user, int(over.headers["location"].rsplit("/", 1)[1]))
        assert job.state == "failed" and job.error_code == "quota_exceeded"
        shown = client.get(over.headers["location"])
        assert "quota_exceeded" in shown.text
        # The second start spends the user's request budget; the third is refused with 429.
        assert client.post("/dashboard/new", data={**form, "urls": URLS[0]}).status_code == 303
        limited = client.post("/dashboard/new", data={**form, "urls": URLS[1]})
        assert limited.status_code == 429 and int(limited.headers["retry-after"]) >= 1
        # Charged before the form is read, as every dashboard form is (issue 25.4d).
        assert "too many requests" in limited.text and "nothing was changed" in limited.text
