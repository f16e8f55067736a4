"""v1 job lists (cursor pages; status, ids and updated_since filters) and ``GET /usage`` with
daily quotas, over HTTP."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime, timedelta

import httpx
import pytest

from tests.api_helpers import FIELDS, V1, Api, assert_problem, error_fields, owned, shared_api

KINDS = ["index-submit", "index-check"]


@pytest.fixture(scope="module")
def shared_app(module_store: str, request: pytest.FixtureRequest) -> Iterator[Api]:
    """One app per store for the module: every test works as its own new users (quotas are
    per user), from its own loopback address."""
    with shared_api(module_store, request, quota_submit_daily=5, quota_check_daily=100) as made:
        yield made


@pytest.fixture
def app(shared_app: Api) -> Iterator[Api]:
    yield from owned(shared_app)


def create(client: httpx.Client, kind: str, *urls: str) -> dict[str, object]:
    answer = client.post(f"{V1}/{kind}/jobs", json={"urls": list(urls)})
    assert answer.status_code == 202, answer.text
    body: dict[str, object] = answer.json()
    return body


def listed(client: httpx.Client, kind: str, **params: object) -> httpx.Response:
    return client.get(f"{V1}/{kind}/jobs", params=params)  # type: ignore[arg-type]


def ids_of(answer: httpx.Response) -> list[int]:
    assert answer.status_code == 200, answer.text
    return [j["job_id"] for j in answer.json()["jobs"]]


@pytest.mark.parametrize("kind", KINDS)
def test_pages_follow_next_cursor_newest_first(app: Api, kind: str) -> None:
    client = app.client(app.account())
    made = [create(client, kind, f"https://a.example/{i}")["job_id"] for i in range(5)]
    pages: list[list[int]] = []
    cursor: str | None = None
    while True:
        params: dict[str, object] = {"limit": 2}
        if cursor is not None:
            params["cursor"] = cursor
        answer = listed(client, kind, **params)
        pages.append(ids_of(answer))
        for job in answer.json()["jobs"]:
            assert set(job) == FIELDS[kind]
        cursor = answer.json()["next_cursor"]
        if cursor is None:
            break
        assert len(pages) < 10, "next_cursor never ran out"
    assert pages == [made[4:2:-1], made[2:0:-1], made[:1]]
    assert_problem(listed(client, kind, cursor="not-a-cursor"), 422)


def test_lists_keep_the_kinds_apart(app: Api) -> None:
    client = app.client(app.account())
    submit = create(client, "index-submit", "https://a.example/1")["job_id"]
    check = create(client, "index-check", "https://a.example/1")["job_id"]
    assert ids_of(listed(client, "index-submit")) == [submit]
    assert ids_of(listed(client, "index-check")) == [check]


@pytest.mark.parametrize("kind", KINDS)
def test_status_filter(app: Api, kind: str) -> None:
    client = app.client(app.account())
    pending = create(client, kind, "https://a.example/1")["job_id"]
    failed = create(client, kind, "https://a.example/2")["job_id"]
    assert client.post(f"{V1}/{kind}/jobs/{failed}/cancel").status_code == 200
    assert ids_of(listed(client, kind, status="pending")) == [pending]
    assert ids_of(listed(client, kind, status="failed")) == [failed]
    assert ids_of(listed(client, kind, status=["pending", "failed"])) == [failed, pending]
    assert ids_of(listed(client, kind, status="completed")) == []
    assert error_fields(listed(client, kind, status="done")) == ["status[0]"]


@pytest.mark.parametrize("kind", KINDS)
def test_ids_filter_up_to_1000(app: Api, kind: str) -> None:
    client = app.client(app.account())
    a, b, c = (create(client, kind, f"https://a.example/{i}")["job_id"] for i in range(3))
    assert ids_of(listed(client, kind, ids=f"{a},{c}")) == [c, a]
    # 1,000 ids (most unknown) are accepted; the known ones come back.
    thousand = ",".join(str(i) for i in [b, *range(10_000, 10_999)])
    assert ids_of(listed(client, kind, ids=thousand)) == [b]
    too_many = ",".join(str(i) for i in range(10_000, 11_001))
    assert error_fields(listed(client, kind, ids=too_many)) == ["ids"]
    assert error_fields(listed(client, kind, ids="1,two")) == ["ids"]


@pytest.mark.parametrize("kind", KINDS)
def test_updated_since_filter(app: Api, kind: str) -> None:
    client = app.client(app.account())
    first = create(client, kind, "https://a.example/1")
    second = create(client, kind, "https://a.example/2")
    cancelled = client.post(f"{V1}/{kind}/jobs/{second['job_id']}/cancel").json()
    created_at = datetime.fromisoformat(str(first["created_at"]))
    changed_at = datetime.fromisoformat(str(cancelled["completed_at"]))
    assert changed_at > created_at
    both = ids_of(listed(client, kind, updated_since=created_at.isoformat()))
    assert both == [second["job_id"], first["job_id"]]
    # Only the job that changed since: the cancelled one.
    assert ids_of(listed(client, kind, updated_since=changed_at.isoformat())) == [second["job_id"]]
    later = (changed_at + timedelta(days=1)).isoformat()
    assert ids_of(listed(client, kind, updated_since=later)) == []
    assert error_fields(listed(client, kind, updated_since="yesterday")) == ["updated_since"]


# -- usage and quotas ---------------------------------------------------------------------------


def usage(client: httpx.Client) -> dict[str, dict[str, object]]:
    answer = client.get(f"{V1}/usage")
    assert answer.status_code == 200, answer.text
    body: dict[str, dict[str, object]] = answer.json()
    return body


def test_usage_reflects_creations(app: Api) -> None:
    client = app.client(app.account())
    start = usage(client)
    assert {k: start["submit"][k] for k in ("limit", "used", "remaining")} == {
        "limit": 5,
        "used": 0,
        "remaining": 5,
    }
    assert {k: start["check"][k] for k in ("limit", "used", "remaining")} == {
        "limit": 100,
        "used": 0,
        "remaining": 100,
    }
    create(client, "index-submit", "https://a.example/1", "https://a.example/2")
    create(client, "index-check", *(f"https://a.example/{i}" for i in range(7)))
    after = usage(client)
    assert (after["submit"]["used"], after["submit"]["remaining"]) == (2, 3)
    assert (after["check"]["used"], after["check"]["remaining"]) == (7, 93)
    # Another user's usage is their own.
    assert usage(app.client(app.account("bob")))["submit"]["used"] == 0


def test_over_quota_job_is_created_failed_with_the_reset_time(app: Api) -> None:
    client = app.client(app.account())
    create(client, "index-submit", *(f"https://a.example/{i}" for i in range(3)))
    answer = client.post(
        f"{V1}/index-submit/jobs", json={"urls": [f"https://b.example/{i}" for i in range(3)]}
    )
    assert answer.status_code == 202, answer.text
    refused = answer.json()
    assert refused["status"] == "failed"
    assert refused["error"]["code"] == "quota_exceeded"
    assert "retry-after" not in answer.headers  # already final
    resets_at = datetime.fromisoformat(str(usage(client)["submit"]["resets_at"]))
    stamps = re.findall(
        r"\d{4}-\d{2}-\d{2}T[\d:.]+(?:Z|[+-]\d{2}:\d{2})", refused["error"]["message"]
    )
    assert resets_at in [datetime.fromisoformat(s) for s in stamps], refused["error"]["message"]
    polled = client.get(f"{V1}/index-submit/jobs/{refused['job_id']}").json()
    assert polled["status"] == "failed" and polled["error"] == refused["error"]
    # The refused job used nothing; a job that fits is still accepted.
    assert usage(client)["submit"]["used"] == 3
    fits = create(client, "index-submit", "https://c.example/1", "https://c.example/2")
    assert fits["status"] == "pending"
    assert (usage(client)["submit"]["used"], usage(client)["submit"]["remaining"]) == (5, 0)
    # The check quota is separate.
    assert create(client, "index-check", "https://d.example/1")["status"] == "pending"
