"""Ids, cursors, pages and limits (``seojobs.api.ids``) on every route the app serves, over HTTP on
SQLite (the largest id read on both stores): only ASCII digits within the field's range are read;
anything else is a 422 naming the field, and nothing is read or changed through it.

Before, ``ids=²`` and 5,000-digit ids and cursors answered 500 (``int()`` raised), ``٣`` was
read as job 3, and path ids took ``+5``, `` 5`` and ``1_0``.
"""

from __future__ import annotations

import json

import httpx
import pytest

from seojobs.reads import Read
from tests.api_helpers import V1, Api, app_routes, error_fields, send_json, stored
from tests.conftest import STORES

# Store-agnostic (ids are parsed before any store call): SQLite only; the
# store's own behaviour is tested on both stores elsewhere.
pytestmark = pytest.mark.stores("sqlite")

URL = "https://a.example/page"
MAX_ID = 2**63 - 1
NOT_DIGITS = [
    "²",
    "٣",
    "\uff11",  # fullwidth one
    "-1",
    "+5",
    " 5",
    "5 ",
    "1_0",
    "5.0",
    "0x10",
    "5\n",
    "½",
]
TOO_BIG = [str(MAX_ID + 1), "9" * 20, "9" * 5000]
ODD = [*NOT_DIGITS, *TOO_BIG]
ODD_IDS = [*ODD, "0"]  # ids start at 1; pages and report cursors at 0
PATH_PARAMS = {
    "job_id": ODD_IDS,
    "other_job_id": ODD_IDS,
    "project_id": ODD_IDS,
    "schedule_id": ODD_IDS,
    "keyword_id": ODD_IDS,
    "prompt_id": ODD_IDS,
    "page": ODD,
}


# Bodies the POST, PATCH and PUT routes with path ids take, so that the path id is the only error.
BODIES = {
    "/v1/projects/{project_id}": {"name": "renamed"},
    "/v1/projects/{project_id}/schedules/{schedule_id}": {"enabled": False},
    "/v1/projects/{project_id}/jobs": {"type": "test_noop"},
    "/v1/projects/{project_id}/schedules": {"name": "x", "type": "test_noop", "every_days": 1},
    "/v1/projects/{project_id}/audits": {"start_url": URL},
    "/v1/projects/{project_id}/audit-settings": {"crawl_seconds": 600},
    "/v1/projects/{project_id}/tracked-keywords": {"keywords": [{"keyword": "hose"}]},
    "/v1/projects/{project_id}/tracked-prompts": {"prompts": ["best hose?"]},
    "/v1/projects/{project_id}/collection": {"test_noop": {"every_days": 1}},
    "/v1/projects/{project_id}/backlinks/analysis/monitor": {},
}
SUBMIT_JOB = 4


@pytest.fixture
def world(idle: Api) -> tuple[Api, httpx.Client, dict[str, str]]:
    """A user with three check jobs (so ``٣`` would find one), a submission, a project and a
    schedule. Its budget covers the hundreds of probes (429s are test_api_ratelimit's)."""
    client = idle.client(idle.account(rate_limit="1000000/minute"), in_process=True)
    jobs = [client.post(f"{V1}/index-check/jobs", json={"urls": [URL]}) for _ in range(3)]
    jobs.append(client.post(f"{V1}/index-submit/jobs", json={"urls": [URL]}))
    assert [j.json()["job_id"] for j in jobs] == [1, 2, 3, SUBMIT_JOB]
    project = client.post("/v1/projects", json={"name": "p"}).json()["data"]["id"]
    every = {"name": "s", "type": "test_noop", "every_days": 1}
    schedule = client.post(f"/v1/projects/{project}/schedules", json=every).json()["data"]["id"]
    hook = {
        "url": "https://hooks.example/seojobs",
        "events": ["job.completed"],
    }  # registered, never sent
    made = client.post("/v1/webhooks", json=hook)
    assert made.status_code == 201, made.text
    webhook = made.json()["data"]["id"]
    values = {
        "job_id": 3,
        "other_job_id": 3,
        "project_id": project,
        "schedule_id": schedule,
        "webhook_id": webhook,
        **_tracked(client, project),
        "page": 0,
        "type": "test_noop",
    }
    values |= {"engine": "google", "type": "checker"}
    return idle, client, {name: str(value) for name, value in values.items()}


def _tracked(client: httpx.Client, project: int) -> dict[str, int]:
    path = f"/v1/projects/{project}/tracked-"
    keyword = client.post(path + "keywords", json={"keywords": [{"keyword": "kept"}]})
    prompt = client.post(path + "prompts", json={"prompts": ["kept?"]})
    return {
        "keyword_id": keyword.json()["data"]["added"][0]["id"],
        "prompt_id": prompt.json()["data"]["added"][0]["id"],
    }


def url_of(path: str, values: dict[str, str], **given: str) -> str:
    if "/index-submit/" in path:
        values = values | {"job_id": str(SUBMIT_JOB)}
    if "/data/" in path:  # a project's collected data: a job type's name
        values = values | {"type": "test_noop"}
    return path.format(**(values | given))


def refused(response: httpx.Response, wanted: str) -> None:
    assert error_fields(response) == [wanted], response.text


def test_odd_path_ids_are_422_on_every_route(
    world: tuple[Api, httpx.Client, dict[str, str]],
) -> None:
    app, client, values = world
    before = stored(app)
    walked = set()
    for method, path, route in app_routes(app.app):
        for param in route.dependant.path_params:
            if param.alias not in PATH_PARAMS:
                continue
            walked.add(param.alias)
            for odd in PATH_PARAMS[param.alias]:
                url = url_of(path, values, **{param.alias: odd.replace("\n", "%0A")})
                refused(client.request(method, url, json=BODIES.get(path)), param.alias)
    assert walked == set(PATH_PARAMS)
    assert stored(app) == before  # nothing created nor deleted
    job = client.get(f"/v1/jobs/{values['job_id']}").json()["data"]
    assert job["status"] == "pending"  # "+3" did not cancel it


@pytest.mark.stores(*STORES)  # the largest id goes to the store as a query parameter
def test_leading_zeros_and_the_largest_id_are_read(
    world: tuple[Api, httpx.Client, dict[str, str]],
) -> None:
    _app, client, values = world
    for path in ("/v1/jobs/{}", V1 + "/index-check/jobs/{}", "/v1/projects/{}"):
        assert client.get(path.format(MAX_ID)).status_code == 404  # an id, nobody's
    v2 = send_json(client, "POST", "/v2/task/google/checker/status", {"task_id": str(MAX_ID)})
    assert v2.status_code == 404
    assert client.get(f"{V1}/index-check/jobs", params={"cursor": str(MAX_ID)}).status_code == 200
    assert client.get("/v1/jobs/0003").json()["data"]["id"] == 3
    assert client.get(f"{V1}/index-check/jobs/03").json()["job_id"] == 3
    assert client.get(f"/v1/projects/00{values['project_id']}").status_code == 200
    assert client.get("/v2/task/google/checker/list/00").json()["page"] == 0


def query_routes(app: Api, name: str) -> list[tuple[str, str]]:
    return [
        (method, path)
        for method, path, route in app_routes(app.app)
        if name in {p.alias for p in route.dependant.query_params}
    ]


# The lists that are no kind's declared read: v1's two and their reports, projects, a
# project's jobs and schedules, a job's items and findings, a project's collected data (any
# type), an audit's issues, pages and comparison, webhooks and their deliveries. Every
# declared read that pages is a list too.
CORE_LISTS = {
    V1 + "/index-submit/jobs",
    V1 + "/index-submit/jobs/{job_id}/report",
    V1 + "/index-check/jobs",
    V1 + "/index-check/jobs/{job_id}/report",
    "/v1/projects",
    "/v1/projects/{project_id}/jobs",
    "/v1/projects/{project_id}/schedules",
    "/v1/jobs/{job_id}/items",
    "/v1/jobs/{job_id}/findings",
    "/v1/projects/{project_id}/data/{type}/history",
    "/v1/projects/{project_id}/audits/{job_id}/issues",
    "/v1/projects/{project_id}/audits/{job_id}/pages",
    "/v1/projects/{project_id}/audits/{job_id}/compare/{other_job_id}",
    "/v1/webhooks",
    "/v1/webhooks/{webhook_id}/deliveries",
    "/v1/projects/{project_id}/tracked-keywords",
    "/v1/projects/{project_id}/tracked-prompts",
}


def declared_lists(app: Api) -> dict[str, Read]:
    """The reads the app's kinds declare that page, by path."""
    return {
        f"/v1/projects/{{project_id}}/{read.path}": read
        for kind in app.services.registry.kinds()
        for read in kind.reads
        if read.pages
    }


def test_odd_cursors_are_422_on_every_list(
    world: tuple[Api, httpx.Client, dict[str, str]],
) -> None:
    app, client, values = world
    lists = query_routes(app, "cursor")
    declared = declared_lists(app)
    assert {path for _method, path in lists} == CORE_LISTS | set(declared)
    for method, path in lists:
        reports = path.endswith(("/report", "/items", "/pages"))  # rows count from 0
        for odd in [*ODD, ""] if reports else [*ODD_IDS, ""]:
            answer = client.request(method, url_of(path, values), params={"cursor": odd})
            refused(answer, "cursor")  # before the audit is looked up (job 3 is none)
        first = client.request(method, url_of(path, values), params={"cursor": "0" * 30 + "1"})
        # Job 3 is an index check: an audit's reads find no audit there. Nothing is collected
        # in this world: a read of one collection's elements (keywords) finds none its cursor
        # names, and a read of the newest of each subject answers 404 before the first.
        read = declared.get(path)
        missing = "/audits/{job_id}/" in path or (
            read is not None
            and (read.elements is not None or (read.source == "latest" and "kind" in read.empty))
        )
        assert first.status_code == (404 if missing else 200), first.text


@pytest.mark.parametrize("kind", ["index-submit", "index-check"])
def test_odd_ids_filters_are_422(
    world: tuple[Api, httpx.Client, dict[str, str]], kind: str
) -> None:
    _app, client, _values = world
    path = f"{V1}/{kind}/jobs"
    for odd in ODD_IDS:
        refused(client.get(path, params={"ids": odd}), "ids")
        refused(client.get(path, params={"ids": f"1,{odd},2"}), "ids")
    refused(client.get(path, params={"ids": "1, 2"}), "ids")
    if kind == "index-check":
        found = client.get(path, params={"ids": "3,,1,"}).json()["jobs"]
        assert [j["job_id"] for j in found] == [3, 1]


def test_odd_limits_are_422(world: tuple[Api, httpx.Client, dict[str, str]]) -> None:
    app, client, values = world
    lists = query_routes(app, "limit")
    assert {path for _method, path in lists} == CORE_LISTS | set(declared_lists(app))
    for method, path in lists:
        for odd in [*ODD, "0", "1001"]:
            refused(client.request(method, url_of(path, values), params={"limit": odd}), "limit")


V2_ID_ROUTES = ["status", "fullreport", "report"]
ODD_TASK_IDS = [*ODD_IDS, "ffffffffffffffffffffffff", "", -1, 0, MAX_ID + 1, 10**4000, 1.5, True]


@pytest.mark.parametrize("route", V2_ID_ROUTES)
def test_odd_v2_task_ids_are_422(
    world: tuple[Api, httpx.Client, dict[str, str]], route: str
) -> None:
    _app, client, _values = world
    path = f"/v2/task/google/checker/{route}"
    for odd in ODD_TASK_IDS:
        refused(send_json(client, "POST", path, {"task_id": odd}), "task_id")
        if route == "status":
            refused(send_json(client, "POST", path, {"task_ids": ["3", odd]}), "task_ids[1]")
    # Ours, as a string or a number, with leading zeros: found.
    for same in ("3", 3, "0003"):
        assert send_json(client, "POST", path, {"task_id": same}).status_code == 200
    assert json.loads(send_json(client, "POST", path, {"task_id": "2"}).text)["result"]["id"] == "2"
