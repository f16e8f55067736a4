"""The SpeedyIndex-compatible v2 surface over a real app on a loopback socket.

Every request goes over HTTP to ``create_app``'s app; jobs run in the app's own in-process
worker (its lifespan is started here) against local fakes of IndexNow, Serper and a website.
Shapes are compared with reference/providers.md §1 field by field.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import re
import sqlite3
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from seojobs.api import create_app
from seojobs.records import UserRecord
from seojobs.services import Services, indexing
from seojobs.settings import Settings
from seojobs.store import db as db_module
from tests.api_helpers import TLS
from tests.conftest import database_of, make_settings
from tests.fakes.indexnow import FakeIndexNow
from tests.fakes.serp import FakeSerper
from tests.fakes.server import serve
from tests.fakes.site import FixtureSite, running_site
from tests.waiting import wait_until

TASK_FIELDS = {
    "id",
    "size",
    "processed_count",
    "indexed_count",
    "title",
    "type",
    "is_completed",
    "created_at",
}
REPORT_FIELDS = {
    "id",
    "size",
    "processed_count",
    "indexed_links",
    "unindexed_links",
    "title",
    "type",
    "created_at",
}
TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
PROBLEM_JSON = "application/problem+json"
FAST = "100000/minute"  # users that poll get a budget no test can spend


# -- running the app ------------------------------------------------------------------------------


@contextlib.contextmanager
def started(app: FastAPI) -> Iterator[str]:
    """Run the app's lifespan (migrations, the in-process worker) in a thread of its own and
    serve the app on loopback; yield the base URL. ``serve`` leaves the lifespan off."""
    ready = threading.Event()
    box: dict[str, Any] = {}

    async def main() -> None:
        box["loop"] = asyncio.get_running_loop()
        box["stop"] = stop = asyncio.Event()
        try:
            async with app.router.lifespan_context(app):
                ready.set()
                await stop.wait()
        except BaseException as exc:  # reported by the test thread below
            box["error"] = exc
        finally:
            ready.set()

    thread = threading.Thread(target=lambda: asyncio.run(main()), name="lifespan", daemon=True)
    thread.start()
    assert ready.wait(60), "the app's lifespan did not start"
    if "error" in box:
        raise box["error"]
    try:
        with serve(app) as base:
            yield base
    finally:
        box["loop"].call_soon_threadsafe(box["stop"].set)
        thread.join(30)
        assert not thread.is_alive(), "the app's lifespan did not end"
        if "error" in box:
            raise box["error"]


class Api:
    def __init__(self, app: FastAPI, base: str, *, shared: bool = False) -> None:
        self.app = app
        self.base = base
        self.shared = shared  # by the tests of a module, each as its own users
        self._clients: list[httpx.Client] = []

    def name(self, name: str) -> str:
        """``name``, made unique on a ``shared`` app (each test makes its own users)."""
        return f"{name}-{next(_NAMES)}" if self.shared else name

    @property
    def services(self) -> Services:
        found: Services = self.app.state.services
        return found

    def user(self, name: str, rate_limit: str | None = FAST) -> tuple[UserRecord, httpx.Client]:
        """A user and a client presenting its key the SpeedyIndex way: the raw key, no Bearer."""
        made = self.services.accounts.create_user(self.name(name), rate_limit=rate_limit)
        return made.user, self.client({"Authorization": made.api_key})

    def client(self, headers: dict[str, str]) -> httpx.Client:
        client = httpx.Client(base_url=self.base, headers=headers, timeout=60, verify=TLS)
        self._clients.append(client)
        return client

    def close(self) -> None:
        for client in self._clients:
            client.close()


@contextlib.contextmanager
def api(settings: Settings, *, run_worker: bool = False) -> Iterator[Api]:
    app = create_app(settings, run_worker=run_worker)
    with started(app) as base:
        made = Api(app, base)
        try:
            yield made
        finally:
            made.close()


_NAMES = itertools.count(1)


@pytest.fixture(scope="module")
def shared(module_store: str, request: pytest.FixtureRequest) -> Iterator[Api]:
    """One app per store (default settings, no worker) for the module's tests that keep to
    their own users: each takes it through :func:`own`."""
    with database_of(module_store, request) as url, api(make_settings(url)) as made:
        yield made


@contextlib.contextmanager
def own(shared: Api) -> Iterator[Api]:
    """``shared`` for one test: its own clients, and users named apart from other tests'."""
    mine = Api(shared.app, shared.base, shared=True)
    try:
        yield mine
    finally:
        mine.close()


@pytest.fixture
def site() -> Iterator[tuple[FixtureSite, str]]:
    with running_site() as (fixture, base):
        yield fixture, base


@pytest.fixture
def serper() -> Iterator[FakeSerper]:
    fake = FakeSerper()
    with serve(fake.app) as base:
        fake.base_url = base
        yield fake


@pytest.fixture
def indexnow() -> Iterator[str]:
    with serve(FakeIndexNow().app()) as base:
        yield base + "/indexnow"


def provider_settings(store_url: str, indexnow: str, serper: FakeSerper, **extra: Any) -> Settings:
    values: dict[str, Any] = {
        "indexnow_key": "0123456789abcdef",
        "indexnow_endpoint": indexnow,
        "submit_providers": {"google": ["indexnow"], "yandex": ["indexnow"]},
        "serper_key": "serper-key",
        "serper_base_url": serper.base_url,
        "check_providers": {"google": ["serper"], "yandex": ["serper"]},
        "allow_private_networks": True,  # the fixture site lives on loopback
        "provider_backoff": 0.01,
        "fetch_timeout": 60.0,  # /hold is released by the test, never by a timeout
    }
    values.update(extra)
    return make_settings(store_url, **values)


# -- helpers --------------------------------------------------------------------------------------


def ok(response: httpx.Response) -> dict[str, Any]:
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/json")
    body: dict[str, Any] = response.json()
    assert body["code"] == 0, body
    return body


def problem(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].split(";")[0] == PROBLEM_JSON
    body: dict[str, Any] = response.json()
    assert body["status"] == status
    return body


def create(client: httpx.Client, path: str, urls: list[str], **extra: Any) -> str:
    body = ok(client.post(f"/v2/task/{path}/create", json={"urls": urls, **extra}))
    assert set(body) == {"code", "task_id", "type"}
    assert body["type"] == path
    assert isinstance(body["task_id"], str) and body["task_id"].isdigit()
    return str(body["task_id"])


def status(client: httpx.Client, path: str, task_id: str) -> dict[str, Any]:
    result: dict[str, Any] = ok(client.post(f"/v2/task/{path}/status", json={"task_id": task_id}))[
        "result"
    ]
    return result


def assert_task(item: dict[str, Any], **expected: Any) -> None:
    assert set(item) == TASK_FIELDS
    assert isinstance(item["id"], str) and item["id"].isdigit()
    assert TIMESTAMP.match(item["created_at"]), item["created_at"]
    assert isinstance(item["title"], str) and isinstance(item["is_completed"], bool)
    for name, value in expected.items():
        assert item[name] == value, (name, item)


def balance(client: httpx.Client) -> dict[str, int]:
    body = ok(client.get("/v2/account"))
    assert set(body) == {"code", "balance"} and set(body["balance"]) == {"indexer", "checker"}
    found: dict[str, int] = body["balance"]
    return found


def urls(n: int, host: str = "https://a.example") -> list[str]:
    return [f"{host}/page-{i}" for i in range(n)]


# -- account, quota, create -----------------------------------------------------------------------


def test_balance_is_the_remaining_quota_and_code_1_refuses(store_url: str) -> None:
    settings = make_settings(store_url, quota_submit_daily=10, quota_check_daily=5)
    with api(settings) as app:
        _alice, client = app.user("alice")
        assert balance(client) == {"indexer": 10, "checker": 5}

        create(client, "google/indexer", [*urls(4), urls(1)[0]])  # the duplicate is free
        assert balance(client) == {"indexer": 6, "checker": 5}
        # The follow-up check is charged as a direct check of its URLs is (issue 25.4c).
        create(client, "yandex/indexer", urls(2, "https://b.example"), checker=1)
        assert balance(client) == {"indexer": 4, "checker": 3}

        refused = client.post("/v2/task/google/indexer/create", json={"urls": urls(5)})
        assert refused.status_code == 200  # SpeedyIndex signals in `code`, not the status
        body = refused.json()
        assert set(body) == {"code", "message"} and body["code"] == 1
        assert "submit quota" in body["message"] and "resets at" in body["message"]
        assert balance(client) == {"indexer": 4, "checker": 3}

        create(client, "google/checker", urls(3))
        assert balance(client) == {"indexer": 4, "checker": 0}
        one_more = client.post("/v2/task/google/checker/create", json={"urls": urls(1)})
        assert one_more.json()["code"] == 1
        assert balance(client) == {"indexer": 4, "checker": 0}

        # A refused create gives out no id, so no list shows it.
        listed = ok(client.get("/v2/task/google/indexer/list/0"))["result"]
        assert [t["size"] for t in listed] == [4]
        assert [t["size"] for t in ok(client.get("/v2/task/google/checker/list/0"))["result"]] == [
            3
        ]


def test_single_url_creates_a_one_url_indexer_task(store_url: str) -> None:
    with api(make_settings(store_url, quota_submit_daily=1)) as app:
        _alice, client = app.user("alice")
        body = ok(client.post("/v2/yandex/url", json={"url": "https://a.example/one"}))
        assert set(body) == {"code", "task_id"}
        [listed] = ok(client.get("/v2/task/yandex/indexer/list/0"))["result"]
        assert_task(listed, id=body["task_id"], size=1, type="yandex/indexer", title="")
        assert ok(client.get("/v2/task/google/indexer/list/0"))["result"] == []
        refused = client.post("/v2/yandex/url", json={"url": "https://a.example/two"})
        assert refused.status_code == 200
        assert set(refused.json()) == {"code", "message"} and refused.json()["code"] == 1
        assert len(ok(client.get("/v2/task/yandex/indexer/list/0"))["result"]) == 1
        bad = problem(client.post("/v2/google/url", json={"url": "ftp://a.example/x"}), 422)
        assert [e["field"] for e in bad["errors"]] == ["url"]


def test_invalid_creates_are_problems(shared: Api) -> None:
    with own(shared) as app:
        alice, client = app.user("alice")
        # A checker task ignores `checker`, as every key it lacks: the body's schema is one for
        # both types, and the path cannot narrow it.
        ignored = client.post(
            "/v2/task/google/checker/create", json={"urls": urls(1), "checker": 2}
        )
        task_id = ok(ignored)["task_id"]
        assert [j.id for j in app.services.jobs.page(alice)] == [int(task_id)]  # no follow-up
        too_late = client.post(
            "/v2/task/google/indexer/create", json={"urls": urls(1), "checker": 6}
        )
        assert [e["field"] for e in problem(too_late, 422)["errors"]] == ["checker"]
        bad_url = client.post(
            "/v2/task/google/indexer/create", json={"urls": ["https://a.example/", "nope"]}
        )
        assert [e["field"] for e in problem(bad_url, 422)["errors"]] == ["urls[1]"]
        secret = client.post(
            "/v2/task/google/checker/create",
            json={"urls": ["https://a.example/", "https://u:pw@a.example/", "http://a.example:0/"]},
        )
        assert [e["field"] for e in problem(secret, 422)["errors"]] == ["urls[1]", "urls[2]"]
        one = client.post("/v2/google/url", json={"url": "https://u:pw@a.example/"})
        assert [e["field"] for e in problem(one, 422)["errors"]] == ["url"]
        problem(client.post("/v2/task/google/indexer/create", json={"urls": []}), 422)
        problem(client.post("/v2/task/duckduckgo/indexer/create", json={"urls": urls(1)}), 422)
        problem(client.post("/v2/task/google/vip/create", json={"urls": urls(1)}), 422)
        assert ok(client.get("/v2/task/google/indexer/list/0"))["result"] == []


def test_create_replays_with_the_same_idempotency_key(shared: Api) -> None:
    with own(shared) as app:
        _alice, client = app.user("alice")
        headers = {"Idempotency-Key": "batch-7"}
        body = {"urls": urls(3), "title": "batch 7"}
        first = client.post("/v2/task/google/indexer/create", json=body, headers=headers)
        again = client.post("/v2/task/google/indexer/create", json=body, headers=headers)
        assert ok(first) == ok(again)
        assert again.headers["idempotent-replayed"] == "true"
        [listed] = ok(client.get("/v2/task/google/indexer/list/0"))["result"]
        assert_task(listed, id=first.json()["task_id"], title="batch 7", size=3)
        other = client.post(
            "/v2/task/google/indexer/create", json={"urls": urls(2)}, headers=headers
        )
        problem(other, 422)


def test_code_minus_2_when_the_database_cannot_take_the_write(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Wait 0.2 s (not 30) for SQLite's writer lock, so the held lock below refuses quickly.
    monkeypatch.setattr(db_module, "SQLITE_BUSY_TIMEOUT_MS", 200)
    with api(make_settings(sqlite_url)) as app:
        _alice, client = app.user("alice")
        lock = sqlite3.connect(sqlite_url.removeprefix("sqlite:///"), isolation_level=None)
        try:
            assert lock.execute("PRAGMA journal_mode").fetchone() == ("wal",)  # reads go on
            lock.execute("BEGIN EXCLUSIVE")
            for response in (
                client.post("/v2/task/google/indexer/create", json={"urls": urls(2)}),
                client.post("/v2/google/url", json={"url": "https://a.example/"}),
            ):
                assert response.status_code == 503
                assert response.json() == {
                    "code": -2,
                    "message": "the service is overloaded; retry later",
                }
                assert response.headers["retry-after"] == "5"
            lock.execute("ROLLBACK")
        finally:
            lock.close()
        create(client, "google/indexer", urls(2))
        assert len(ok(client.get("/v2/task/google/indexer/list/0"))["result"]) == 1


# -- auth, status, ownership ----------------------------------------------------------------------


def test_every_way_to_present_the_key(shared: Api) -> None:
    with own(shared) as app:
        made = app.services.accounts.create_user(app.name("alice"))
        key = made.api_key
        for headers in (
            {"Authorization": key},
            {"Authorization": f"Bearer {key}"},
            {"X-API-Key": key},
        ):
            assert balance(app.client(headers))["indexer"] == 10_000
        problem(app.client({}).get("/v2/account"), 401)
        problem(app.client({"Authorization": key + "x"}).get("/v2/account"), 401)
        problem(app.client({}).post("/v2/google/url", json={"url": "https://a.example/"}), 401)


def test_status_in_batches_and_in_the_single_id_form(shared: Api) -> None:
    with own(shared) as app:
        _alice, client = app.user("alice")
        first = create(client, "google/checker", urls(2), title="first")
        second = create(client, "google/checker", urls(3))
        asked = [int(first), 999_999, second, first]  # 999,999: nobody's task
        result = ok(client.post("/v2/task/google/checker/status", json={"task_ids": asked}))[
            "result"
        ]
        assert [t["id"] for t in result] == [first, second]  # as asked, once each
        # An id that cannot be one of ours (a SpeedyIndex hex id, > 2**63-1) is a 422 naming it:
        # left out, its client would poll it forever.
        odd = [first, "ffffffffffffffffffffffff", " 12x", 2**70]
        refused = client.post("/v2/task/google/checker/status", json={"task_ids": odd})
        assert [e["field"] for e in problem(refused, 422)["errors"]] == [
            "task_ids[1]",
            "task_ids[2]",
            "task_ids[3]",
        ]
        assert_task(result[1], size=3, title="", type="google/checker", is_completed=False)
        assert_task(result[0], size=2, title="first", processed_count=0, indexed_count=0)

        single = status(client, "google/checker", first)
        assert single == result[0]  # the older form answers one object, not an array
        assert (
            ok(client.post("/v2/task/google/checker/status", json={"task_id": int(first)}))[
                "result"
            ]
            == single
        )
        # Nothing processed yet (no worker runs here): the reports list no link at all.
        for path in ("fullreport", "report"):
            report = ok(client.post(f"/v2/task/google/checker/{path}", json={"task_id": second}))
            assert set(report["result"]) == REPORT_FIELDS
            assert report["result"]["processed_count"] == 0 and report["result"]["size"] == 3
            assert report["result"]["indexed_links"] == report["result"]["unindexed_links"] == []
        empty = ok(client.post("/v2/task/google/checker/status", json={"task_ids": []}))
        assert empty == {"code": 0, "result": []}

        many = [str(i) for i in range(1, 1001)]
        capped = ok(client.post("/v2/task/google/checker/status", json={"task_ids": many}))
        assert {t["id"] for t in capped["result"]} == {first, second}
        over = client.post("/v2/task/google/checker/status", json={"task_ids": [*many, "1001"]})
        assert [e["field"] for e in problem(over, 422)["errors"]] == ["task_ids"]
        both = client.post(
            "/v2/task/google/checker/status", json={"task_ids": [first], "task_id": first}
        )
        problem(both, 422)
        problem(client.post("/v2/task/google/checker/status", json={}), 422)
        problem(client.post("/v2/task/google/checker/status", json={"task_id": 1.5}), 422)


def test_other_users_tasks_are_never_shown(shared: Api) -> None:
    with own(shared) as app:
        _alice, alice = app.user("alice")
        _bob, bob = app.user("bob")
        mine = create(alice, "google/indexer", urls(1))
        checker = create(alice, "google/checker", urls(1))
        yandex = create(alice, "yandex/indexer", urls(1))
        theirs = create(bob, "google/indexer", urls(2))
        unknown = str(int(theirs) + 1000)

        asked = {"task_ids": [mine, theirs, checker, yandex]}
        result = ok(alice.post("/v2/task/google/indexer/status", json=asked))["result"]
        assert [t["id"] for t in result] == [mine]  # not bob's, nor another type or engine
        assert [t["id"] for t in ok(alice.get("/v2/task/google/indexer/list/0"))["result"]] == [
            mine
        ]

        for path in ("status", "fullreport", "report"):
            for task_id in (theirs, checker, yandex):
                url = f"/v2/task/google/indexer/{path}"
                response = alice.post(url, json={"task_id": task_id})
                gone = problem(alice.post(url, json={"task_id": unknown}), 404)
                # Bob's task looks exactly like one that does not exist.
                assert problem(response, 404) == {
                    **gone,
                    "detail": gone["detail"].replace(unknown, task_id),
                }
        assert status(bob, "google/indexer", theirs)["id"] == theirs


# -- lists ----------------------------------------------------------------------------------------


def test_list_pages_hold_1000_tasks_newest_first(store_url: str) -> None:
    with api(make_settings(store_url, quota_submit_daily=100_000)) as app:
        alice, client = app.user("alice")
        svc = app.services
        spec, now = svc.registry.get(indexing.SUBMIT), svc.jobs.clock()
        project = alice.default_project_id

        def model(i: int) -> Any:
            params = {"urls": [f"https://a.example/{i}"]}
            return spec.validate_new(svc.jobs.with_project(spec, project, params, named=False))

        # What ``create`` stores (quota charged, items), in one transaction as a schedule's
        # tick inserts (a transaction each was most of this module's CPU); ids give the order.
        with svc.db.write() as conn:
            made = [
                svc.jobs.insert(
                    conn, alice, spec, model(i), project_id=project, run_at=now, now=now
                )[0]
                for i in range(1000)
            ]
        full = ok(client.get("/v2/task/google/indexer/list/0"))
        assert (full["last_page"], len(full["result"])) == (0, 1000)  # exactly one full page
        made.append(int(create(client, "google/indexer", urls(1))))
        create(client, "yandex/indexer", urls(2))
        create(client, "google/checker", urls(1))

        first = ok(client.get("/v2/task/google/indexer/list/0"))
        assert (first["page"], first["last_page"]) == (0, 1)
        assert [int(t["id"]) for t in first["result"]] == made[::-1][:1000]
        assert_task(first["result"][0], size=1, type="google/indexer", is_completed=False)
        second = ok(client.get("/v2/task/google/indexer/list/1"))
        assert (second["page"], second["last_page"]) == (1, 1)
        assert [int(t["id"]) for t in second["result"]] == [made[0]]
        beyond = ok(client.get("/v2/task/google/indexer/list/2"))
        assert beyond == {"code": 0, "page": 2, "last_page": 1, "result": []}

        assert [t["size"] for t in ok(client.get("/v2/task/yandex/indexer/list/0"))["result"]] == [
            2
        ]
        assert ok(client.get("/v2/task/bing/checker/list/0")) == {
            "code": 0,
            "page": 0,
            "last_page": 0,
            "result": [],
        }
        problem(client.get("/v2/task/google/indexer/list/-1"), 422)


# -- running tasks --------------------------------------------------------------------------------


def test_indexer_with_checker_completes_when_its_follow_up_check_has(
    store_url: str, site: tuple[FixtureSite, str], serper: FakeSerper, indexnow: str
) -> None:
    fixture, base = site
    serper.index("google", f"{base}/ok")
    pages = [f"{base}/ok", f"{base}/noindex-meta", f"{base}/gone", f"{base}/hold"]
    settings = provider_settings(store_url, indexnow, serper, day_seconds=0.5)
    with api(settings, run_worker=True) as app:
        alice, client = app.user("alice")
        task_id = create(client, "google/indexer", pages, title="launch", checker=1)
        plain = create(client, "google/indexer", pages[:2])

        def follow_up_holding() -> bool:
            job = app.services.jobs.get(alice, int(task_id))
            check = indexing.follow_up(app.services, job)
            return (
                job.state == "completed"
                and check is not None
                and check.state == "processing"
                and fixture.count("/hold") > 0
            )

        # The submission is done and its check is stuck on /hold until the test releases it.
        wait_until(follow_up_holding)
        waiting = status(client, "google/indexer", task_id)
        assert_task(waiting, size=4, processed_count=4, is_completed=False, title="launch")

        fixture.release.set()
        done = wait_until(
            lambda: (s := status(client, "google/indexer", task_id))["is_completed"] and s
        )
        check = indexing.follow_up(app.services, app.services.jobs.get(alice, int(task_id)))
        assert check is not None and check.state == "completed"
        assert_task(done, size=4, processed_count=4, indexed_count=1, type="google/indexer")

        full = ok(client.post("/v2/task/google/indexer/fullreport", json={"task_id": task_id}))
        assert set(full) == {"code", "result"} and set(full["result"]) == REPORT_FIELDS
        assert full["result"]["indexed_links"] == [{"url": f"{base}/ok", "title": ""}]
        assert full["result"]["unindexed_links"] == [
            {"url": f"{base}/noindex-meta", "error_code": -1},
            {"url": f"{base}/gone", "error_code": 410},
            {"url": f"{base}/hold", "error_code": 0},
        ]
        head = {k: full["result"][k] for k in ("id", "size", "processed_count", "title", "type")}
        assert head == {
            "id": task_id,
            "size": 4,
            "processed_count": 4,
            "title": "launch",
            "type": "google/indexer",
        }
        assert full["result"]["created_at"] == done["created_at"]

        short = ok(client.post("/v2/task/google/indexer/report", json={"task_id": task_id}))
        assert short["result"] == {
            **full["result"],
            "indexed_links": [f"{base}/ok"],
            "unindexed_links": [f"{base}/noindex-meta", f"{base}/gone", f"{base}/hold"],
        }

        # Without a check nothing is known to be indexed; every submitted URL is unindexed.
        finished = wait_until(
            lambda: (s := status(client, "google/indexer", plain))["is_completed"] and s
        )
        assert_task(finished, size=2, processed_count=2, indexed_count=0)
        plain_report = ok(
            client.post("/v2/task/google/indexer/fullreport", json={"task_id": plain})
        )
        assert plain_report["result"]["indexed_links"] == []
        assert plain_report["result"]["unindexed_links"] == [
            {"url": f"{base}/ok", "error_code": 0},
            {"url": f"{base}/noindex-meta", "error_code": 0},
        ]
        listed = {t["id"]: t for t in ok(client.get("/v2/task/google/indexer/list/0"))["result"]}
        assert listed == {task_id: done, plain: finished}


def test_checker_task_reports_indexed_and_unindexed_links(
    store_url: str, site: tuple[FixtureSite, str], serper: FakeSerper, indexnow: str
) -> None:
    _fixture, base = site
    serper.index("google", f"{base}/ok", f"{base}/plain")
    pages = [f"{base}/ok", f"{base}/noindex-meta", f"{base}/plain", f"{base}/gone"]
    with api(provider_settings(store_url, indexnow, serper), run_worker=True) as app:
        _alice, client = app.user("alice")
        task_id = create(client, "google/checker", pages)
        done = wait_until(
            lambda: (s := status(client, "google/checker", task_id))["is_completed"] and s
        )
        assert_task(done, size=4, processed_count=4, indexed_count=2, type="google/checker")
        batch = ok(client.post("/v2/task/google/checker/status", json={"task_ids": [task_id]}))
        assert batch["result"] == [done]

        full = ok(client.post("/v2/task/google/checker/fullreport", json={"task_id": task_id}))
        assert full["result"]["indexed_links"] == [
            {"url": f"{base}/ok", "title": ""},
            {"url": f"{base}/plain", "title": ""},
        ]
        # error_code belongs to google/indexer reports only.
        assert full["result"]["unindexed_links"] == [
            {"url": f"{base}/noindex-meta"},
            {"url": f"{base}/gone"},
        ]
        short = ok(client.post("/v2/task/google/checker/report", json={"task_id": task_id}))
        assert short["result"]["indexed_links"] == [f"{base}/ok", f"{base}/plain"]
        assert short["result"]["unindexed_links"] == [f"{base}/noindex-meta", f"{base}/gone"]
        assert set(short["result"]) == REPORT_FIELDS


def test_openapi_describes_the_v2_operations(shared: Api) -> None:
    with own(shared) as app:
        spec = httpx.get(app.base + "/openapi.json", timeout=60).json()
    operations = {
        op["operationId"]: (method, path)
        for path, methods in spec["paths"].items()
        for method, op in methods.items()
    }
    assert {name: v for name, v in operations.items() if name.startswith("v2_")} == {
        "v2_get_account": ("get", "/v2/account"),
        "v2_create_task": ("post", "/v2/task/{engine}/{type}/create"),
        "v2_list_tasks": ("get", "/v2/task/{engine}/{type}/list/{page}"),
        "v2_task_status": ("post", "/v2/task/{engine}/{type}/status"),
        "v2_full_report": ("post", "/v2/task/{engine}/{type}/fullreport"),
        "v2_report": ("post", "/v2/task/{engine}/{type}/report"),
        "v2_index_url": ("post", "/v2/{engine}/url"),
    }
    schemas = spec["components"]["schemas"]
    assert set(schemas["V2Task"]["properties"]) == TASK_FIELDS
    assert set(schemas["V2FullReport"]["properties"]) == REPORT_FIELDS
    assert set(schemas["V2TaskList"]["properties"]) == {"code", "page", "last_page", "result"}
    create_op = spec["paths"]["/v2/task/{engine}/{type}/create"]["post"]
    assert "503" in create_op["responses"]
