"""Seed 001's projects API over real HTTP on both stores: projects, jobs of any type through a
project, ``GET /v1/jobs/{id}`` in every state, tenant isolation, deletion with the project,
validation naming fields, idempotency, pagination, job types and collection schedules."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from tests.api_helpers import (
    TERMINAL,
    V1,
    Api,
    Providers,
    api,
    app_routes,
    assert_problem,
    error_fields,
    owned,
    retry_after,
    shared_idle_per_test,  # noqa: F401  (this module's ``idle``: one app per store)
    when,
)
from tests.conftest import make_settings
from tests.waiting import wait_until

JOB_FIELDS = {
    "id",
    "project_id",
    "type",
    "status",
    "title",
    "created_at",
    "run_at",
    "started_at",
    "updated_at",
    "completed_at",
    "progress_percent",
    "items_total",
    "items_done",
    "items_failed",
    "counters",
    "error",
    "result",
    "schedule_id",
}
SCHEDULE_FIELDS = {
    "id",
    "collection",
    "project_id",
    "name",
    "type",
    "params",
    "every_seconds",
    "cron",
    "start_at",
    "next_run_at",
    "enabled",
    "created_at",
}


@pytest.fixture
def working(shared_working: Api) -> Iterator[Api]:
    """The module's app with its worker and the module's fakes (one per store), as this
    test's own users."""
    yield from owned(shared_working)


@pytest.fixture
def fakes(shared_fakes: Providers) -> Providers:
    """The module's fakes, with no request recorded, no reply scripted and nothing indexed."""
    shared_fakes.serper.forget()
    return shared_fakes


def new_project(client: httpx.Client, name: str = "site-a") -> dict[str, Any]:
    answer = client.post("/v1/projects", json={"name": name})
    assert answer.status_code == 201, answer.text
    data: dict[str, Any] = answer.json()["data"]
    return data


def start(
    client: httpx.Client,
    project_id: int,
    kind: str,
    params: dict[str, Any] | None = None,
    **kw: Any,
) -> httpx.Response:
    body = {"type": kind, "params": params or {}, **kw}
    return client.post(f"/v1/projects/{project_id}/jobs", json=body)


def started(client: httpx.Client, project_id: int, kind: str, **params: Any) -> dict[str, Any]:
    answer = start(client, project_id, kind, params)
    assert answer.status_code == 202, answer.text
    data: dict[str, Any] = answer.json()["data"]
    return data


def job(client: httpx.Client, job_id: int) -> dict[str, Any]:
    answer = client.get(f"/v1/jobs/{job_id}")
    assert answer.status_code == 200, answer.text
    data: dict[str, Any] = answer.json()["data"]
    return data


def finished(client: httpx.Client, job_id: int) -> dict[str, Any]:
    return wait_until(lambda: (d := job(client, job_id))["status"] in TERMINAL and d)


def schedule(client: httpx.Client, project_id: int, **body: Any) -> httpx.Response:
    payload = {"name": "daily", "type": "test_noop", "params": {}} | body
    return client.post(f"/v1/projects/{project_id}/schedules", json=payload)


# -- projects -----------------------------------------------------------------------------------


def test_projects_crud(idle: Api) -> None:
    alice = idle.account()
    client = idle.client(alice, form="x-api-key")  # seed 001's header
    listed = client.get("/v1/projects")
    assert listed.status_code == 200
    assert listed.json()["next_cursor"] is None
    [default] = listed.json()["data"]
    assert default["id"] == alice.user.default_project_id and default["is_default"] is True

    created = client.post("/v1/projects", json={"name": "  example.com  "})
    assert created.status_code == 201, created.text
    project = created.json()["data"]
    assert set(project) == {"id", "name", "is_default", "created_at", "domain", "brand_names",
                            "competitors"}  # fmt: skip
    assert (project["domain"], project["brand_names"], project["competitors"]) == (None, [], [])
    assert project["name"] == "example.com" and project["is_default"] is False
    when(project["created_at"])
    assert created.headers["location"] == f"/v1/projects/{project['id']}"
    assert client.get(created.headers["location"]).json() == {"data": project}
    assert [p["id"] for p in client.get("/v1/projects").json()["data"]] == [
        default["id"],
        project["id"],
    ]

    deleted = client.delete(f"/v1/projects/{project['id']}")
    assert deleted.status_code == 204 and deleted.content == b""
    assert_problem(client.get(f"/v1/projects/{project['id']}"), 404)
    assert_problem(client.delete(f"/v1/projects/{project['id']}"), 404)
    assert [p["id"] for p in client.get("/v1/projects").json()["data"]] == [default["id"]]


@pytest.mark.parametrize(
    "body",
    [{}, {"name": ""}, {"name": "   "}, {"name": "x" * 201}, {"name": 5}, {"name": "a\x00b"}],
)
def test_project_name_is_validated_by_field(idle: Api, body: dict[str, Any]) -> None:
    client = idle.client(idle.account())
    assert error_fields(client.post("/v1/projects", json=body)) == ["name"]


def test_a_taken_project_name_is_409(idle: Api) -> None:
    client = idle.client(idle.account())
    new_project(client, "shop")
    problem = assert_problem(client.post("/v1/projects", json={"name": " shop "}), 409)
    assert problem["type"].endswith("name_taken") and "shop" in problem["detail"]
    # Names are per user: someone else may use it.
    assert idle.client(idle.account("bob")).post("/v1/projects", json={"name": "shop"}).is_success


def test_the_default_project_cannot_be_deleted(idle: Api) -> None:
    alice = idle.account()
    client = idle.client(alice)
    default_id = alice.user.default_project_id
    problem = assert_problem(client.delete(f"/v1/projects/{default_id}"), 409)
    assert problem["type"].endswith("default_project")
    assert "default project" in problem["detail"] and "cannot be deleted" in problem["detail"]
    assert client.get(f"/v1/projects/{default_id}").status_code == 200


def test_projects_page_by_cursor(idle: Api) -> None:
    client = idle.client(idle.account())
    made = [new_project(client, f"p{i}")["id"] for i in range(4)]
    seen: list[int] = []
    cursor = None
    while True:
        params: dict[str, Any] = {"limit": 2} | ({"cursor": cursor} if cursor else {})
        page = client.get("/v1/projects", params=params).json()
        seen += [p["id"] for p in page["data"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen[1:] == made and len(seen) == 5


def test_every_route_needs_a_key(idle: Api) -> None:
    anonymous = idle.client()
    for method, path in [
        ("GET", "/v1/projects"),
        ("POST", "/v1/projects"),
        ("GET", "/v1/job-types"),
        ("GET", "/v1/jobs/1"),
        ("GET", "/v1/projects/1/schedules"),
    ]:
        assert_problem(anonymous.request(method, path, json={"name": "x"}), 401)


# -- tenant isolation and deletion ----------------------------------------------------------------


def test_other_users_projects_jobs_and_schedules_are_404_everywhere(idle: Api) -> None:
    alice_client = idle.client(idle.account("alice"))
    bob = idle.client(idle.account("bob"))
    project = new_project(alice_client)["id"]
    job_id = started(alice_client, project, "test_noop")["id"]
    made = schedule(alice_client, project, every_seconds=3600)
    assert made.status_code == 201, made.text
    schedule_id = made.json()["data"]["id"]
    base = f"/v1/projects/{project}"
    routes: list[tuple[str, str, dict[str, Any] | None]] = [
        ("GET", base, None),
        ("DELETE", base, None),
        ("GET", f"{base}/jobs", None),
        ("POST", f"{base}/jobs", {"type": "test_noop", "params": {}}),
        ("GET", f"/v1/jobs/{job_id}", None),
        ("POST", f"/v1/jobs/{job_id}/cancel", None),
        ("GET", f"{base}/schedules", None),
        ("POST", f"{base}/schedules", {"name": "x", "type": "test_noop", "every_days": 1}),
        ("GET", f"{base}/schedules/{schedule_id}", None),
        ("DELETE", f"{base}/schedules/{schedule_id}", None),
    ]
    for method, path, body in routes:
        problem = assert_problem(bob.request(method, path, json=body), 404)
        assert problem["type"].endswith("not_found"), (method, path)
    # A schedule id under one of Bob's own projects is just as unknown.
    bobs_default = bob.get("/v1/projects").json()["data"][0]["id"]
    assert_problem(bob.get(f"/v1/projects/{bobs_default}/schedules/{schedule_id}"), 404)
    assert_problem(bob.delete(f"/v1/projects/{bobs_default}/schedules/{schedule_id}"), 404)
    # Nothing of Alice's was touched.
    assert job(alice_client, job_id)["status"] == "pending"
    assert [s["id"] for s in alice_client.get(f"{base}/schedules").json()["data"]] == [schedule_id]
    assert [p["id"] for p in bob.get("/v1/projects").json()["data"]] == [bobs_default]


def test_deleting_a_project_deletes_its_jobs_and_schedules(idle: Api) -> None:
    alice = idle.account()
    client = idle.client(alice)
    doomed = new_project(client, "doomed")["id"]
    kept = new_project(client, "kept")["id"]
    gone = [started(client, doomed, "test_items", urls=["a", "b"])["id"] for _ in range(2)]
    stays = started(client, kept, "test_noop")["id"]
    assert schedule(client, doomed, every_days=1).status_code == 201
    kept_schedule = schedule(client, kept, every_days=1).json()["data"]["id"]

    assert client.delete(f"/v1/projects/{doomed}").status_code == 204
    for job_id in gone:
        assert_problem(client.get(f"/v1/jobs/{job_id}"), 404)
        assert_problem(client.post(f"/v1/jobs/{job_id}/cancel"), 404)
    assert_problem(client.get(f"/v1/projects/{doomed}/jobs"), 404)
    assert_problem(client.get(f"/v1/projects/{doomed}/schedules"), 404)
    # The store holds no schedule of the deleted project any more (not just hidden).
    with idle.services.db.read() as conn:
        from seojobs.store import schedules as schedule_sql

        assert schedule_sql.list_for_project(conn, doomed) == []
    assert job(client, stays)["status"] == "pending"
    kept_list = client.get(f"/v1/projects/{kept}/schedules").json()["data"]
    assert [s["id"] for s in kept_list] == [kept_schedule]


# -- jobs ---------------------------------------------------------------------------------------


def test_starting_a_job_answers_202_with_location_and_retry_after(idle: Api) -> None:
    client = idle.client(idle.account(), form="bearer")
    project = new_project(client)["id"]
    before = datetime.now(UTC)
    answer = start(client, project, "test_items", {"urls": ["a", "b", "c"]}, title="first crawl")
    assert answer.status_code == 202, answer.text
    data = answer.json()["data"]
    assert set(data) == JOB_FIELDS
    assert data["project_id"] == project and data["type"] == "test_items"
    assert data["status"] == "pending" and data["title"] == "first crawl"
    assert (data["items_total"], data["items_done"], data["items_failed"]) == (3, 0, 0)
    assert data["progress_percent"] == 0 and data["counters"] == {}
    assert data["error"] is None and data["result"] is None and data["schedule_id"] is None
    assert data["started_at"] is None and data["completed_at"] is None
    assert when(data["created_at"]) >= before - timedelta(seconds=5)
    when(data["updated_at"])
    when(data["run_at"])
    assert retry_after(answer) >= 1
    assert answer.headers["location"] == f"/v1/jobs/{data['id']}"
    polled = client.get(answer.headers["location"])
    assert polled.status_code == 200 and retry_after(polled) >= 1
    assert polled.json() == {"data": data}
    assert "urls" not in polled.text  # params are never echoed


def test_jobs_of_the_indexing_api_are_readable_here(idle: Api) -> None:
    alice = idle.account()
    client = idle.client(alice)
    made = client.post(f"{V1}/index-check/jobs", json={"urls": ["https://a.example/"]})
    assert made.status_code == 202
    data = job(client, made.json()["job_id"])
    assert data["type"] == "index_check" and data["project_id"] == alice.user.default_project_id
    assert data["items_total"] == 1


def test_index_jobs_started_in_a_project_keep_quotas_and_follow_up_checks(idle: Api) -> None:
    alice = idle.account()
    idle.services.quotas.set_limits(alice.user, {"submit_daily": 2})
    client = idle.client(alice)
    project = new_project(client)["id"]
    urls = ["https://a.example/1", "https://a.example/2"]
    first = started(client, project, "index_submit", urls=urls, engine="bing", checker=2)
    assert first["status"] == "pending"
    listed = client.get(f"/v1/projects/{project}/jobs", params={"type": "index_check"}).json()
    [follow_up] = listed["data"]
    assert follow_up["status"] == "pending"
    assert when(follow_up["run_at"]) > when(first["created_at"])
    over = started(client, project, "index_submit", urls=["https://a.example/3"], engine="bing")
    assert over["status"] == "failed" and over["error"]["code"] == "quota_exceeded"
    assert "quota" in over["error"]["message"]


@pytest.mark.parametrize("kind", ["index_check", "index_submit"])
def test_the_dedupe_count_is_not_client_settable(idle: Api, kind: str) -> None:
    """``params.duplicates_removed`` is the server's count (``readOnly`` in the type's
    schema): setting it is a 422 naming it; without it the server counts as before."""
    client = idle.client(idle.account())
    project = new_project(client)["id"]
    urls = ["https://a.example/1", "https://a.example/2", "https://a.example/1"]
    for value in (0, 7, -1, "3", None, [1]):
        answer = start(client, project, kind, {"urls": urls, "duplicates_removed": value})
        assert error_fields(answer) == ["params.duplicates_removed"], answer.text
    assert client.get(f"/v1/projects/{project}/jobs").json()["data"] == []
    types = {t["name"]: t for t in client.get("/v1/job-types").json()["data"]}
    assert types[kind]["params_schema"]["properties"]["duplicates_removed"]["readOnly"] is True
    assert started(client, project, kind, urls=urls)["items_total"] == 2
    path = "index-check" if kind == "index_check" else "index-submit"
    made = client.post(f"{V1}/{path}/jobs", json={"urls": urls, "duplicates_removed": 9})
    assert error_fields(made) == ["duplicates_removed"]  # not a field of v1's request


def test_a_job_in_every_state(working: Api, fakes: Providers) -> None:
    client = working.client(working.account())
    project = new_project(client)["id"]

    sleeping = started(client, project, "test_sleep", seconds=60)["id"]
    running = wait_until(lambda: (d := job(client, sleeping))["status"] == "processing" and d)
    assert running["started_at"] is not None and running["completed_at"] is None
    assert retry_after(client.get(f"/v1/jobs/{sleeping}")) >= 1
    cancelled = client.post(f"/v1/jobs/{sleeping}/cancel")
    assert cancelled.status_code == 200
    assert cancelled.json()["data"]["status"] == "failed"
    assert cancelled.json()["data"]["error"]["code"] == "cancelled"
    assert "retry-after" not in cancelled.headers
    again = client.post(f"/v1/jobs/{sleeping}/cancel")  # a retried cancel is harmless
    assert again.status_code == 200 and again.json()["data"] == cancelled.json()["data"]

    failing = started(client, project, "test_fail", code="upstream_down", message="it broke")["id"]
    failed = finished(client, failing)
    assert failed["status"] == "failed"
    assert failed["error"] == {"code": "upstream_down", "message": "it broke"}
    assert when(failed["completed_at"]) >= when(failed["created_at"])
    answer = client.get(f"/v1/jobs/{failing}")
    assert answer.status_code == 200 and "retry-after" not in answer.headers

    items = started(client, project, "test_items", urls=["a", "bb", "zz"], fail_items=["zz"])["id"]
    done = finished(client, items)
    assert done["status"] == "completed" and done["error"] is None
    assert done["result"] == {"seen": 2} and done["progress_percent"] == 100
    assert (done["items_total"], done["items_done"], done["items_failed"]) == (3, 3, 1)
    assert done["counters"]["ok"] == 2

    fakes.serper.index("google", f"{fakes.site_base}/ok")
    checked = started(
        client, project, "index_check", urls=[f"{fakes.site_base}/ok", f"{fakes.site_base}/plain"]
    )["id"]
    check = finished(client, checked)
    assert check["status"] == "completed" and check["type"] == "index_check"
    assert check["counters"] == {"indexed": 1, "not_indexed": 1}

    # Cancelling a finished job is refused with its state, and changes nothing.
    refused = assert_problem(client.post(f"/v1/jobs/{items}/cancel"), 409)
    assert (refused["job_status"], refused["error_code"]) == ("completed", None)
    assert client.get(f"/v1/jobs/{items}").json()["data"] == done
    statuses = client.get(f"/v1/projects/{project}/jobs").json()["data"]
    assert [j["status"] for j in statuses] == ["completed", "completed", "failed", "failed"]


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({"params": {}}, ["type"]),
        ({"type": "no_such_type", "params": {}}, ["type"]),
        ({"type": "test_items", "params": {}}, ["params.urls"]),
        ({"type": "test_items", "params": {"urls": ["a", 5]}}, ["params.urls[1]"]),
        ({"type": "test_sleep", "params": {"seconds": -1}}, ["params.seconds"]),
        ({"type": "test_noop", "params": [1]}, ["params"]),
        ({"type": "test_noop", "title": "t" * 501}, ["title"]),
        ({"type": "index_check", "params": {"urls": ["ftp://x"]}}, ["params.urls[0]"]),
        (
            {"type": "index_check", "params": {"urls": ["http://a.test/", "http://u:p@a.test/"]}},
            ["params.urls[1]"],
        ),
        ({"type": "index_submit", "params": {"urls": ["http://a.test:0/"]}}, ["params.urls[0]"]),
    ],
)
def test_job_validation_names_the_field(idle: Api, body: dict[str, Any], fields: list[str]) -> None:
    client = idle.client(idle.account())
    project = new_project(client)["id"]
    answer = client.post(f"/v1/projects/{project}/jobs", json=body)
    assert error_fields(answer) == fields
    assert client.get(f"/v1/projects/{project}/jobs").json()["data"] == []


def test_an_unknown_type_lists_the_known_ones(idle: Api) -> None:
    alice = idle.account()
    answer = start(idle.client(alice), alice.user.default_project_id, "nope")
    problem = assert_problem(answer, 422)
    assert problem["type"].endswith("unknown_kind")
    assert "index_check" in problem["detail"] and "index_submit" in problem["detail"]


def test_the_same_idempotency_key_answers_with_the_same_job(idle: Api) -> None:
    client = idle.client(idle.account())
    project = new_project(client)["id"]
    key = str(uuid.uuid4())
    body = {"type": "test_items", "params": {"urls": ["a"]}, "title": "once"}
    path = f"/v1/projects/{project}/jobs"
    first = client.post(path, json=body, headers={"Idempotency-Key": key})
    assert first.status_code == 202 and "idempotent-replayed" not in first.headers
    second = client.post(path, json=body, headers={"Idempotency-Key": key})
    assert second.status_code == 202
    assert second.headers["idempotent-replayed"] == "true"
    assert second.json() == first.json()
    assert second.headers["location"] == first.headers["location"]
    other = client.post(path, json={**body, "title": "twice"}, headers={"Idempotency-Key": key})
    assert assert_problem(other, 422)["type"].endswith("idempotency_key_reused")
    assert len(client.get(path).json()["data"]) == 1
    # Project creation replays too, instead of answering 409 for the name it just took.
    created = [
        client.post("/v1/projects", json={"name": "p"}, headers={"Idempotency-Key": key + "p"})
        for _ in range(2)
    ]
    assert [c.status_code for c in created] == [201, 201]
    assert created[0].json() == created[1].json()


def test_project_jobs_page_and_filter(idle: Api) -> None:
    client = idle.client(idle.account())
    project = new_project(client)["id"]
    other = new_project(client, "other")["id"]
    made = [started(client, project, "test_noop")["id"] for _ in range(5)]
    started(client, other, "test_noop")
    fails = started(client, project, "test_fail")["id"]
    client.post(f"/v1/jobs/{fails}/cancel")
    path = f"/v1/projects/{project}/jobs"

    seen: list[int] = []
    cursor = None
    while True:
        params: dict[str, Any] = {"limit": 2} | ({"cursor": cursor} if cursor else {})
        page = client.get(path, params=params).json()
        assert len(page["data"]) <= 2
        seen += [j["id"] for j in page["data"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == [fails, *reversed(made)]  # newest first, only this project's

    failed = client.get(path, params={"status": "failed"}).json()["data"]
    assert [j["id"] for j in failed] == [fails]
    both = client.get(path, params=[("status", "failed"), ("status", "pending")]).json()["data"]
    assert len(both) == 6
    noop = client.get(path, params={"type": "test_noop"}).json()["data"]
    assert [j["id"] for j in noop] == list(reversed(made))
    assert client.get(path, params={"type": "index_check"}).json()["data"] == []
    assert error_fields(client.get(path, params={"status": "done"})) == ["status[0]"]
    assert error_fields(client.get(path, params={"cursor": "abc"})) == ["cursor"]
    assert error_fields(client.get(path, params={"limit": 0})) == ["limit"]


def test_job_types_list_what_can_be_started(idle: Api) -> None:
    client = idle.client(idle.account())
    answer = client.get("/v1/job-types")
    assert answer.status_code == 200
    types = {t["name"]: t for t in answer.json()["data"]}
    assert {"index_submit", "index_check", "test_noop"} <= set(types)
    check = types["index_check"]
    assert check["description"] and "urls" in check["params_schema"]["properties"]
    assert "urls" in check["params_schema"]["required"]
    assert set(check) == {"name", "description", "params_schema", "poll_hint"}
    assert check["poll_hint"] == {
        "first_seconds": 15.0,
        "ceiling_seconds": 300.0,
        "deadline_seconds": 86400.0,
    }


# -- schedules ----------------------------------------------------------------------------------


def test_schedules_create_list_get_delete(idle: Api) -> None:
    client = idle.client(idle.account())
    project = new_project(client)["id"]
    path = f"/v1/projects/{project}/schedules"
    start_at = (datetime.now(UTC) + timedelta(hours=1)).replace(microsecond=0)
    made = schedule(
        client,
        project,
        name="  weekly check ",
        type="test_items",
        params={"urls": ["https://a.example/"]},
        every_days=7,
        start_at=start_at.isoformat(),
    )
    assert made.status_code == 201, made.text
    data = made.json()["data"]
    assert set(data) == SCHEDULE_FIELDS
    assert data["name"] == "weekly check" and data["type"] == "test_items"
    assert data["project_id"] == project and data["enabled"] is True
    assert data["every_seconds"] == 7 * idle.settings.day_seconds and data["cron"] is None
    assert when(data["next_run_at"]) == start_at == when(data["start_at"])
    assert data["params"]["urls"] == ["https://a.example/"]
    assert made.headers["location"] == f"{path}/{data['id']}"
    assert client.get(made.headers["location"]).json() == {"data": data}

    cron = schedule(client, project, name="nightly", cron="30 2 * * *")
    assert cron.status_code == 201, cron.text
    nightly = cron.json()["data"]
    assert nightly["cron"] == "30 2 * * *" and nightly["every_seconds"] is None
    next_run = when(nightly["next_run_at"])
    assert (next_run.hour, next_run.minute) == (2, 30) and next_run > datetime.now(UTC)

    listed = client.get(path).json()
    assert [s["id"] for s in listed["data"]] == [data["id"], nightly["id"]]
    assert listed["next_cursor"] is None
    first_page = client.get(path, params={"limit": 1}).json()
    assert [s["id"] for s in first_page["data"]] == [data["id"]]
    second = client.get(path, params={"limit": 1, "cursor": first_page["next_cursor"]}).json()
    assert [s["id"] for s in second["data"]] == [nightly["id"]]
    assert second["next_cursor"] is None

    assert assert_problem(schedule(client, project, name="nightly", every_days=1), 409)
    assert client.delete(f"{path}/{data['id']}").status_code == 204
    assert_problem(client.get(f"{path}/{data['id']}"), 404)
    assert_problem(client.delete(f"{path}/{data['id']}"), 404)
    assert [s["id"] for s in client.get(path).json()["data"]] == [nightly["id"]]


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({"cron": "not a cron"}, ["cron"]),
        ({"cron": "61 * * * *"}, ["cron"]),
        ({"cron": "0 0 30 2 *"}, ["cron"]),  # valid, but February has no 30th
        ({"every_seconds": 0}, ["every_seconds"]),
        ({"every_days": -1}, ["every_days"]),
        ({"every_days": 1e9}, ["every_days"]),
        ({}, ["every_days", "every_seconds", "cron"]),
        ({"every_days": 1, "cron": "0 * * * *"}, ["every_days", "cron"]),
        ({"every_days": 1, "start_at": "1999-01-01T00:00:00Z"}, ["start_at"]),
        ({"every_days": 1, "start_at": "9999-12-31T23:00:00Z"}, ["start_at"]),
        ({"every_days": 1, "name": ""}, ["name"]),
        ({"every_days": 1, "type": "nope"}, ["type"]),
        ({"every_days": 1, "type": "test_items", "params": {"urls": "a"}}, ["params.urls"]),
    ],
)
def test_schedule_validation_names_the_field(
    idle: Api, body: dict[str, Any], fields: list[str]
) -> None:
    client = idle.client(idle.account())
    project = new_project(client)["id"]
    assert error_fields(schedule(client, project, **body)) == fields
    assert client.get(f"/v1/projects/{project}/schedules").json()["data"] == []


@pytest.mark.parametrize("kind", ["index_check", "index_submit"])
def test_quota_counted_kinds_can_be_scheduled_within_their_quota(idle: Api, kind: str) -> None:
    """A schedule fires its jobs through the same creation path as a POST, which charges the
    quota; a schedule whose every job needs more than the whole quota is refused."""
    alice = idle.account()
    quota = "check_daily" if kind == "index_check" else "submit_daily"
    idle.services.quotas.set_limits(alice.user, {quota: 2})
    client = idle.client(alice)
    project = new_project(client)["id"]
    small = {"urls": ["https://a.example/1", "https://a.example/2"]}
    made = schedule(client, project, type=kind, params=small, every_days=1)
    assert made.status_code == 201, made.text
    big = {"urls": [f"https://a.example/{i}" for i in range(3)]}
    refused = schedule(client, project, name="big", type=kind, params=big, every_days=1)
    assert_problem(refused, 422)
    assert refused.json()["type"].endswith("/quota_exceeded")
    assert error_fields(refused) == ["params"]
    names = [s["name"] for s in client.get(f"/v1/projects/{project}/schedules").json()["data"]]
    assert names == ["daily"]


def test_a_schedule_starts_jobs_in_its_project(working: Api) -> None:
    client = working.client(working.account())
    project = new_project(client)["id"]
    made = schedule(client, project, name="often", every_seconds=3600).json()["data"]
    fired = wait_until(
        lambda: client.get(f"/v1/projects/{project}/jobs").json()["data"], timeout=30
    )
    assert fired[0]["schedule_id"] == made["id"] and fired[0]["type"] == "test_noop"
    assert finished(client, fired[0]["id"])["status"] == "completed"
    later = client.get(f"/v1/projects/{project}/schedules/{made['id']}").json()["data"]
    assert when(later["next_run_at"]) > when(made["next_run_at"])


@pytest.mark.stores("sqlite")  # the document: nothing of the store's
def test_every_operation_documents_its_problem_json_errors(idle: Api) -> None:
    document = httpx.get(f"{idle.base}/openapi.json", timeout=60).json()
    served = [path for _m, path, _r in app_routes(idle.app) if path.startswith("/v1/")]
    declared = {r.operation_id for k in idle.services.registry.kinds() for r in k.reads}
    missing = []
    operations = 0
    ids = set()
    for path, item in document["paths"].items():
        if not path.startswith("/v1/"):
            continue
        for method, operation in item.items():
            operations += 1
            ids.add(operation["operationId"])
            wanted = {"401", "422", "429"} | ({"404"} if "{" in path else set())
            conflicts = ("create_project", "rename_project", "delete_project", "create_schedule")
            if operation["operationId"] in conflicts:
                wanted.add("409")
            for code in sorted(wanted):
                content = operation["responses"].get(code, {}).get("content", {})
                if "application/problem+json" not in content:
                    missing.append(f"{method.upper()} {path} {code}")
    # Every /v1 operation the app serves is documented (the kinds' declared reads among them),
    # each with its problem+json errors.
    assert operations == len(served) and declared <= ids and missing == []
    patches = {p for p, item in document["paths"].items() if "patch" in item}
    assert patches == {
        "/v1/projects/{project_id}",
        "/v1/projects/{project_id}/schedules/{schedule_id}",
        "/v1/webhooks/{webhook_id}",
    }
    # Answers are documented by their models, so generated clients know the shapes.
    job = document["components"]["schemas"]["Job"]["properties"]
    assert {"id", "type", "status", "error", "result"} <= set(job)


def test_a_project_is_renamed_by_patch(idle: Api) -> None:
    client = idle.client(idle.account())
    first = client.post("/v1/projects", json={"name": "one"}).json()["data"]
    client.post("/v1/projects", json={"name": "two"})
    renamed = client.patch(f"/v1/projects/{first['id']}", json={"name": "  uno  "})
    assert renamed.status_code == 200, renamed.text
    assert renamed.json()["data"] == first | {"name": "uno"}
    assert client.get(f"/v1/projects/{first['id']}").json()["data"]["name"] == "uno"
    assert_problem(client.patch(f"/v1/projects/{first['id']}", json={"name": "two"}), 409)
    assert error_fields(client.patch(f"/v1/projects/{first['id']}", json={"name": " "})) == ["name"]
    bob = idle.client(idle.account())
    assert_problem(bob.patch(f"/v1/projects/{first['id']}", json={"name": "mine"}), 404)
    assert client.get(f"/v1/projects/{first['id']}").json()["data"]["name"] == "uno"


TRACKED = {
    "domain": "Example.COM",
    "brand_names": ["Acme", " Acme Tools ", "acme"],
    "competitors": [
        {"domain": "rival.com", "names": ["Rival"]},
        {"domain": "other.co.uk"},
        {"domain": "RIVAL.com", "names": ["twice"]},
    ],
}


def test_a_project_knows_what_it_tracks(idle: Api) -> None:
    """domain, brand_names and competitors: set on POST, changed field by field on PATCH
    (null clears one), and the defaults of a rank check's params (params given win)."""
    client = idle.client(idle.account())
    made = client.post("/v1/projects", json={"name": "tracked"} | TRACKED)
    assert made.status_code == 201, made.text
    project = made.json()["data"]
    assert (project["domain"], project["brand_names"]) == ("example.com", ["Acme", "Acme Tools"])
    assert project["competitors"] == [{"domain": "rival.com", "names": ["Rival"]},
                                      {"domain": "other.co.uk", "names": []}]  # fmt: skip
    assert client.get(f"/v1/projects/{project['id']}").json()["data"] == project
    url = f"/v1/projects/{project['id']}"
    changed = client.patch(url, json={"brand_names": ["Acme"], "domain": None})
    assert changed.status_code == 200, changed.text
    assert changed.json()["data"] == project | {"brand_names": ["Acme"], "domain": None}
    assert client.patch(url, json={"domain": "www.example.com"}).json()["data"]["domain"] == (
        "www.example.com"
    )
    # A rank check takes the project's domain and competitors; params given on the job win.
    taken = started(client, project["id"], "rank_check", keywords=["hose"])["id"]
    own = started(client, project["id"], "rank_check", keywords=["hose"], target="mine.com",
                  competitors=[])["id"]  # fmt: skip
    with idle.services.db.read() as conn:
        from seojobs.store import jobs as job_sql

        params = [job_sql.get(conn, job_id).params for job_id in (taken, own)]  # type: ignore[union-attr]
    assert [(p["target"], p["competitors"]) for p in params] == [
        ("www.example.com", ["rival.com", "other.co.uk"]), ("mine.com", [])]  # fmt: skip
    made = schedule(client, project["id"], type="rank_check", params={"keywords": ["hose"]},
                    every_days=1)  # fmt: skip
    assert made.status_code == 201, made.text
    assert made.json()["data"]["params"]["target"] == "www.example.com"
    bare = new_project(client, "untracked")
    missing = start(client, bare["id"], "rank_check", {"keywords": ["hose"]})
    assert error_fields(missing) == ["params.target"]


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({"domain": "not a domain"}, ["domain"]),
        ({"domain": "https://example.com/"}, ["domain"]),
        ({"brand_names": ["ok", ""]}, ["brand_names[1]"]),
        ({"brand_names": ["b"] * 11}, ["brand_names"]),
        ({"competitors": [{"domain": "rival.com"}, {"names": ["x"]}]}, ["competitors[1].domain"]),
        ({"competitors": [{"domain": "rival.com", "extra": 1}]}, ["competitors[0].extra"]),
        ({"competitors": "rival.com"}, ["competitors"]),
    ],
)
def test_tracked_fields_are_validated_by_field(
    idle: Api, body: dict[str, Any], fields: list[str]
) -> None:
    alice = idle.account()
    client = idle.client(alice)
    assert error_fields(client.post("/v1/projects", json={"name": "p"} | body)) == fields
    project = new_project(client, "q")
    assert error_fields(client.patch(f"/v1/projects/{project['id']}", json=body)) == fields
    # The services refuse the same for the dashboard and the CLI, naming the field.
    from seojobs.services import Invalid

    with pytest.raises(Invalid) as refused:
        idle.services.accounts.update_project(alice.user, project["id"], body)
    assert [".".join(map(str, e.path)) for e in refused.value.errors] == [
        f.replace("[", ".").replace("]", "") for f in fields
    ]


def test_deleting_a_project_deletes_what_it_tracks(store_url: str) -> None:
    """On both stores: the tracked fields go with the project's row."""
    with api(make_settings(store_url)) as app:
        client = app.client(app.account())
        project = client.post("/v1/projects", json={"name": "gone"} | TRACKED).json()["data"]
        assert client.delete(f"/v1/projects/{project['id']}").status_code == 204
        again = new_project(client, "gone")
        assert (again["domain"], again["brand_names"], again["competitors"]) == (None, [], [])
        with app.services.db.read() as conn:
            from seojobs.store.tables import projects

            rows = conn.execute(projects.select().where(projects.c.domain.is_not(None))).all()
        assert rows == []


def test_a_schedule_is_paused_and_resumed_by_patch(idle: Api) -> None:
    client = idle.client(idle.account())
    project = client.post("/v1/projects", json={"name": "p"}).json()["data"]["id"]
    made = schedule(client, project, every_days=1).json()["data"]
    assert made["enabled"] is True
    path = f"/v1/projects/{project}/schedules/{made['id']}"
    paused = client.patch(path, json={"enabled": False})
    assert paused.status_code == 200, paused.text
    assert paused.json()["data"] == made | {"enabled": False}
    assert client.get(path).json()["data"]["enabled"] is False
    assert client.patch(path, json={"enabled": True}).json()["data"]["enabled"] is True
    assert error_fields(client.patch(path, json={"enabled": "yes"})) == ["enabled"]
    assert error_fields(client.patch(path, json={})) == ["enabled"]
    bob = idle.client(idle.account())
    assert_problem(bob.patch(path, json={"enabled": False}), 404)
    assert client.get(path).json()["data"]["enabled"] is True
