"""What the API takes and how it says no, on every surface (on SQLite; what goes through the store
on both): IRIs (non-ASCII URLs) are taken and stored as the URIs they map to; date-times are RFC
3339 only; a 422 names every bad entry with its value (no library prefixes, credentials left out),
its ``detail`` made of its ``errors``; a body that is not JSON says where."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from tests.api_helpers import (
    V1,
    Api,
    api,
    assert_problem,
    error_fields,
    shared_idle_per_test,  # noqa: F401  (this module's ``idle``: one app per store)
)
from tests.conftest import STORES, make_settings

# Store-agnostic (what a 422 says is decided before any store call): SQLite only; the
# store's own behaviour is tested on both stores elsewhere.
pytestmark = pytest.mark.stores("sqlite")

IRI = "https://bücher.de/straße?q=ö#ß"
URI = "https://xn--bcher-kva.de/stra%C3%9Fe?q=%C3%B6#%C3%9F"
SNOWMAN = "http://☃.net/"  # no valid IDN: percent-encoded as UTF-8 (RFC 3987 allows both)


def _v2(kind: str) -> str:
    return f"/v2/task/google/{kind}/create"


def _report_urls(client: httpx.Client, job_id: int) -> list[str]:
    page = client.get(f"{V1}/index-check/jobs/{job_id}/report").json()
    return [row["url"] for row in page["rows"]]


@pytest.mark.stores(*STORES)  # stored: through the store and back
def test_iris_are_taken_on_every_surface_and_stored_as_uris(idle: Api) -> None:
    account = idle.account()
    client = idle.client(account)
    urls = [IRI, URI, SNOWMAN, "http://пример.рф/путь"]
    stored = [URI, "http://%E2%98%83.net/", "http://xn--e1afmkfd.xn--p1ai/%D0%BF%D1%83%D1%82%D1%8C"]
    answer = client.post(f"{V1}/index-check/jobs", json={"urls": urls})
    assert answer.status_code == 202, answer.text
    assert answer.json()["duplicates_removed"] == 1  # the IRI and its URI are one URL
    assert _report_urls(client, answer.json()["job_id"]) == stored

    submit = client.post(f"{V1}/index-submit/jobs", json={"urls": [IRI]})
    assert submit.status_code == 202, submit.text
    v2 = client.post(_v2("checker"), json={"urls": [IRI]})
    assert v2.status_code == 200 and v2.json()["code"] == 0, v2.text
    assert _report_urls(client, int(v2.json()["task_id"])) == [URI]
    project = account.user.default_project_id
    job = client.post(
        f"/v1/projects/{project}/jobs", json={"type": "index_check", "params": {"urls": [IRI]}}
    )
    assert job.status_code == 202, job.text
    assert _report_urls(client, job.json()["data"]["id"]) == [URI]


SURFACES = [
    (f"{V1}/index-check/jobs", lambda urls: {"urls": urls}, "urls"),
    (f"{V1}/index-submit/jobs", lambda urls: {"urls": urls}, "urls"),
    (_v2("indexer"), lambda urls: {"urls": urls}, "urls"),
    (
        "/v1/projects/{project}/jobs",
        lambda urls: {"type": "index_check", "params": {"urls": urls}},
        "params.urls",
    ),
]


@pytest.mark.parametrize(("path", "body", "field"), SURFACES)
def test_every_bad_url_is_named_with_its_value(idle: Api, path: str, body: Any, field: str) -> None:
    """A non-string entry used to hide the other entries' errors on v1; messages carried
    pydantic's "Value error, " and not the value."""
    account = idle.account()
    client = idle.client(account)
    url = path.format(project=account.user.default_project_id)
    sent = [5, "nope", "https://a.example/ok", "ftp://a.example/f", " https://a.example/", None]
    answer = client.post(url, json=body(sent))
    assert error_fields(answer) == [f"{field}[{i}]" for i in (0, 1, 3, 4, 5)]
    problem = answer.json()
    messages = [e["message"] for e in problem["errors"]]
    assert not [m for m in messages if "Value error" in m or "Assertion failed" in m]
    for value, message in zip(
        ["5", '"nope"', '"ftp://a.example/f"', '" https://a.example/"', "null"],
        messages,
        strict=True,
    ):
        assert message.endswith(f"(got {value})"), message
    assert "spaces" in messages[3]
    assert problem["detail"] == "; ".join(
        f"{e['field']}: {e['message']}" for e in problem["errors"]
    )
    credentials = client.post(url, json=body(["https://alice:hunter2@a.example/"]))
    assert error_fields(credentials) == [f"{field}[0]"]
    assert "alice" not in credentials.text and "hunter2" not in credentials.text


def test_past_100_bad_entries_the_rest_are_counted(idle: Api) -> None:
    client = idle.client(idle.account())
    answer = client.post(f"{V1}/index-check/jobs", json={"urls": [f"bad{i}" for i in range(150)]})
    problem = assert_problem(answer, 422)
    assert len(problem["errors"]) == 100 and problem["errors_omitted"] == 50
    assert problem["errors"][99]["message"].endswith('(got "bad99")')


@pytest.mark.parametrize(
    ("sent", "where"),
    [
        ('{"urls": [', "character 11 (line 1, column 11)"),
        ('{"urls": ["https://a.example/"]\n,}', "character 34 (line 2, column 2)"),
        ("urls=https://a.example/", "character 1 (line 1, column 1)"),
    ],
)
def test_a_body_that_is_not_json_says_where(idle: Api, sent: str, where: str) -> None:
    client = idle.client(idle.account())
    for path in (f"{V1}/index-check/jobs", _v2("checker"), "/v1/projects"):
        answer = client.post(path, content=sent, headers={"content-type": "application/json"})
        (error,) = assert_problem(answer, 422)["errors"]
        assert error["field"] == "body"
        assert error["message"].startswith(f"body is not valid JSON at {where}: "), error


NOT_RFC3339 = [
    "0.5",
    "1700000000",
    "2026-01-01T00:00:00",
    "2026-01-01",
    "yesterday",
    "2026-02-30T00:00:00Z",
]


@pytest.mark.parametrize("since", NOT_RFC3339)
def test_updated_since_is_an_rfc3339_date_time_only(idle: Api, since: str) -> None:
    client = idle.client(idle.account())
    for kind in ("index-check", "index-submit"):
        answer = client.get(f"{V1}/{kind}/jobs", params={"updated_since": since})
        assert error_fields(answer) == ["updated_since"]
        message = answer.json()["errors"][0]["message"]
        assert "2026-01-31T09:30:00Z" in message and f'(got "{since}")' in message
    for since in ("2026-01-01T00:00:00Z", "2026-01-01t00:00:00.5+05:30", "2016-12-31T23:59:60Z"):
        assert (
            client.get(f"{V1}/index-check/jobs", params={"updated_since": since}).status_code == 200
        )


def _soon() -> datetime:
    return datetime.now(UTC) + timedelta(hours=1)


# Each within the schedule's window, so only the format refuses them (pydantic took the number
# as Unix time, and the string as UTC).
STARTS: dict[str, Any] = {
    "unix time": lambda: _soon().timestamp(),
    "whole unix time": lambda: int(_soon().timestamp()),
    "no offset": lambda: _soon().replace(tzinfo=None).isoformat(),
    "date only": lambda: _soon().date().isoformat(),
}


@pytest.mark.parametrize("start_at", list(STARTS))
def test_a_schedules_start_at_is_an_rfc3339_date_time_only(idle: Api, start_at: str) -> None:
    account = idle.account()
    client = idle.client(account)
    path = f"/v1/projects/{account.user.default_project_id}/schedules"
    body = {"name": "s", "type": "index_check", "params": {"urls": ["https://a.example/"]}}
    body["every_days"] = 1
    answer = client.post(path, json=body | {"start_at": STARTS[start_at]()})
    assert error_fields(answer) == ["start_at"]
    assert client.post(path, json=body | {"start_at": _soon().isoformat()}).status_code == 201


def test_a_bad_id_list_names_each_bad_id_in_detail_and_errors_alike(idle: Api) -> None:
    client = idle.client(idle.account())
    answer = client.get(f"{V1}/index-check/jobs", params={"ids": "a,1,b"})
    problem = assert_problem(answer, 422)
    (error,) = problem["errors"]
    assert error["field"] == "ids" and error["message"].endswith('(got "a", "b")')
    assert problem["detail"] == f"ids: {error['message']}"


@pytest.mark.stores(*STORES)  # the interval at its bound, stored and read back
def test_a_schedule_at_the_documented_minimum_interval_is_taken(store_url: str) -> None:
    """The document states the settings' bounds; the values at them are taken (90/600 days
    multiplied back to seconds fell below 90 and was refused), the next float below is not."""
    settings = make_settings(store_url, schedule_min_interval_seconds=90, day_seconds=600)
    with api(settings) as running:
        account = running.account()
        client = running.client(account)
        document = client.get("/openapi.json").json()
        fields = document["components"]["schemas"]["ScheduleIn"]["properties"]
        path = f"/v1/projects/{account.user.default_project_id}/schedules"
        body = {"type": "index_check", "params": {"urls": ["https://a.example/"]}}
        for field in ("every_days", "every_seconds"):
            least = fields[field]["anyOf"][0]["minimum"]
            taken = client.post(path, json=body | {"name": field, field: least})
            assert taken.status_code == 201, taken.text
            below = client.post(path, json=body | {"name": "x", field: math.nextafter(least, 0)})
            assert error_fields(below) == [field]


def test_every_422_has_errors_and_a_detail_made_of_them(idle: Api) -> None:
    """The interval rule and the Idempotency-Key reuse had a detail of their own (or no errors):
    every 422, whatever raised it, now takes its detail from its errors."""
    account = idle.account()
    client = idle.client(account)
    project = f"/v1/projects/{account.user.default_project_id}"
    schedule = {"name": "s", "type": "index_check", "params": {"urls": ["https://a.example/"]}}
    key = {"Idempotency-Key": "k1"}
    client.post(f"{V1}/index-check/jobs", json={"urls": ["https://a.example/1"]}, headers=key)
    answers = [
        client.post(f"{V1}/index-check/jobs", json={"urls": ["https://a.example/2"]}, headers=key),
        client.post(f"{project}/schedules", json=schedule),
        client.post(f"{project}/schedules", json=schedule | {"every_days": 1, "cron": "* * * * *"}),
        client.post(f"{project}/jobs", json={"type": "no_such_kind"}),
        client.get(f"{V1}/index-check/jobs", params={"cursor": "x", "ids": "1,b"}),
        client.get(f"{V1}/index-submit/jobs", params={"updated_since": "now"}),
        client.get(f"{project}/jobs", params={"cursor": "²"}),
        client.post("/v2/task/google/indexer/status", json={"task_ids": ["ab"]}),
    ]
    for answer in answers:
        problem = assert_problem(answer, 422)
        errors = problem["errors"]
        assert errors and all(e["field"] and e["message"] for e in errors), problem
        made = "; ".join(f"{e['field']}: {e['message']}" for e in errors[:5])
        assert problem["detail"] == made, problem
