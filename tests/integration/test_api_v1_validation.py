"""v1 request validation over HTTP: every rule answers 422 problem+json naming each offending
field (``urls[2]``) and stores nothing; duplicates are dropped and counted; bodies over the cap
are 413."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.api_helpers import V1, Api, api, assert_problem, error_fields, owned, shared_api
from tests.conftest import make_settings, migrated_sqlite

KINDS = ["index-submit", "index-check"]
OK = "https://a.example/ok"
PREFIX = "https://a.example/"
LONGEST = PREFIX + "x" * (2048 - len(PREFIX))  # exactly 2,048 characters


@pytest.fixture
def app(own_idle: Api) -> Api:
    """One app per store for the module: each test keeps to its own user (what it checks,
    stored jobs and usage, is the user's)."""
    return own_idle


@pytest.fixture(scope="module")
def rules_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    url = migrated_sqlite(tmp_path_factory.mktemp("rules"))
    with api(make_settings(url), run_worker=False) as running:
        running.shared = True
        yield running


@pytest.fixture
def rules(rules_app: Api) -> Iterator[Api]:
    """For the rule matrix: validation runs before any store call, so one store is enough
    (the tests still check through the API that nothing was stored, as their own user's)."""
    mine = rules_app.own()
    try:
        yield mine
    finally:
        mine.close()


def nothing_stored(client: httpx.Client) -> None:
    for kind in KINDS:
        assert client.get(f"{V1}/{kind}/jobs").json()["jobs"] == [], kind
    usage = client.get(f"{V1}/usage").json()
    assert usage["submit"]["used"] == 0 and usage["check"]["used"] == 0


URL_CASES: dict[str, tuple[list[Any], list[str]]] = {
    "no urls": ([], ["urls"]),
    "10,001 urls": ([f"{PREFIX}{i}" for i in range(10_001)], ["urls"]),
    "ftp scheme": ([OK, OK + "2", "ftp://a.example/file"], ["urls[2]"]),
    "mailto": (["mailto:someone@a.example"], ["urls[0]"]),
    "relative url": ([OK, "/relative/page"], ["urls[1]"]),
    "scheme-relative url": (["//a.example/page"], ["urls[0]"]),
    "no host": (["http:///path"], ["urls[0]"]),
    "2,049 chars": ([OK, LONGEST + "y"], ["urls[1]"]),
    "port out of range": (["http://a.example:99999/"], ["urls[0]"]),
    "port not a number": ([OK, "http://a.example:80x/"], ["urls[1]"]),
    "whitespace inside": (["https://a.example/a b"], ["urls[0]"]),
    "user and password": ([OK, OK + "2", OK + "3", "https://user:pw@a.example/"], ["urls[3]"]),
    "user only": (["http://user@a.example/"], ["urls[0]"]),
    "password only": ([OK, "http://:pw@a.example:8080/x"], ["urls[1]"]),
    "empty userinfo": (["http://@a.example/"], ["urls[0]"]),
    "port 0": ([OK, "http://a.example:0/"], ["urls[1]"]),
    "port 00": (["https://a.example:00/x"], ["urls[0]"]),
    "not a string": ([OK, 42], ["urls[1]"]),
    "several bad": (
        ["ftp://a.example/", OK, "/x", OK + "2", "http://a.example:-1/"],
        ["urls[0]", "urls[2]", "urls[4]"],
    ),
}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("case", list(URL_CASES))
def test_invalid_urls_are_422_naming_each_index(rules: Api, kind: str, case: str) -> None:
    urls, fields = URL_CASES[case]
    client = rules.client(rules.account())
    answer = client.post(f"{V1}/{kind}/jobs", json={"urls": urls})
    assert error_fields(answer) == fields
    assert answer.json()["type"].endswith("validation_error")
    nothing_stored(client)


OTHER_CASES: list[tuple[str, dict[str, Any], list[str]]] = [
    ("index-submit", {"urls": [OK], "checker": 0}, ["checker"]),
    ("index-submit", {"urls": [OK], "checker": 6}, ["checker"]),
    ("index-submit", {"urls": [OK], "checker": "soon"}, ["checker"]),
    ("index-submit", {"urls": [OK], "engine": "altavista"}, ["engine"]),
    ("index-check", {"urls": [OK], "engine": "altavista"}, ["engine"]),
    ("index-submit", {"urls": [OK], "title": "t" * 501}, ["title"]),
    ("index-check", {"urls": [OK], "title": "t" * 501}, ["title"]),
    ("index-check", {}, ["urls"]),
    ("index-submit", {"urls": OK}, ["urls"]),
]


@pytest.mark.parametrize(("kind", "body", "fields"), OTHER_CASES)
def test_invalid_fields_are_422_naming_the_field(
    rules: Api, kind: str, body: dict[str, Any], fields: list[str]
) -> None:
    client = rules.client(rules.account())
    answer = client.post(f"{V1}/{kind}/jobs", json=body)
    assert error_fields(answer) == fields
    nothing_stored(client)


@pytest.mark.parametrize("kind", KINDS)
def test_malformed_json_is_a_422_problem(rules: Api, kind: str) -> None:
    client = rules.client(rules.account())
    answer = client.post(
        f"{V1}/{kind}/jobs", content=b'{"urls": [', headers={"Content-Type": "application/json"}
    )
    assert_problem(answer, 422)
    nothing_stored(client)


CREDENTIALS_AND_PORT_ZERO = [
    OK,
    "https://user:pw@a.example/1",
    "http://a.example:0/2",
    "http://a.example/p@x?q=a@b",  # an @ in the path or query is not a credential
    "http://token@a.example/3",
    "https://a.example:000/4",
]


@pytest.mark.parametrize("kind", KINDS)
def test_credentials_and_port_zero_are_refused_on_every_store(app: Api, kind: str) -> None:
    client = app.client(app.account())
    answer = client.post(f"{V1}/{kind}/jobs", json={"urls": CREDENTIALS_AND_PORT_ZERO})
    assert error_fields(answer) == ["urls[1]", "urls[2]", "urls[4]", "urls[5]"]
    messages = [e["message"] for e in answer.json()["errors"]]
    assert all("pw" not in m and "token" not in m for m in messages)  # never echoed
    nothing_stored(client)
    fixed = [OK, "https://a.example/1", "http://a.example/2", "http://a.example/p@x?q=a@b"]
    assert client.post(f"{V1}/{kind}/jobs", json={"urls": fixed}).status_code == 202


@pytest.mark.parametrize("kind", KINDS)
def test_limits_are_inclusive(app: Api, kind: str) -> None:
    """2,048-character URLs, 10,000 URLs, checker 1 and 5 and a 500-character title pass."""
    client = app.client(app.account())
    answer = client.post(f"{V1}/{kind}/jobs", json={"urls": [LONGEST], "title": "t" * 500})
    assert answer.status_code == 202, answer.text
    assert answer.json()["total_urls"] == 1
    many = [f"{PREFIX}{i}" for i in range(10_000)]
    answer = client.post(f"{V1}/{kind}/jobs", json={"urls": many})
    assert answer.status_code == 202, answer.text
    assert answer.json()["total_urls"] == 10_000
    if kind == "index-submit":
        for checker in (1, 5):
            answer = client.post(f"{V1}/{kind}/jobs", json={"urls": [OK], "checker": checker})
            assert answer.status_code == 202 and answer.json()["scheduled_check_days"] == checker


@pytest.mark.parametrize("kind", KINDS)
def test_duplicates_are_removed_and_counted(app: Api, kind: str) -> None:
    client = app.client(app.account())
    a, b, c = PREFIX + "a", PREFIX + "b", PREFIX + "c"
    answer = client.post(f"{V1}/{kind}/jobs", json={"urls": [a, b, a, c, b, a]})
    assert answer.status_code == 202, answer.text
    body = answer.json()
    assert body["duplicates_removed"] == 3
    assert body["total_urls"] == 3
    report = client.get(f"{V1}/{kind}/jobs/{body['job_id']}/report").json()
    assert [row["url"] for row in report["rows"]] == [a, b, c]  # first occurrence order
    assert client.get(f"{V1}/usage").json()[kind.removeprefix("index-")]["used"] == 3


# -- body cap -----------------------------------------------------------------------------------

CAP = 2_000


@pytest.fixture(scope="module")
def shared_capped(module_store: str, request: pytest.FixtureRequest) -> Iterator[Api]:
    with shared_api(module_store, request, max_body_bytes=CAP) as running:
        yield running


@pytest.fixture
def capped(shared_capped: Api) -> Iterator[Api]:
    """One app for the module's cap tests (the body cap is the HTTP layer's, before any
    store: SQLite alone), each test as its own user."""
    yield from owned(shared_capped)


def big_body(size: int) -> bytes:
    urls = [f"{PREFIX}{i:05d}" for i in range(size // 20 + 1)]
    raw = httpx.Request("POST", "http://x", json={"urls": urls}).content
    assert len(raw) > size
    return raw


@pytest.mark.stores("sqlite")
@pytest.mark.parametrize("kind", KINDS)
def test_body_over_the_cap_is_413(capped: Api, kind: str) -> None:
    client = capped.client(capped.account())
    answer = client.post(
        f"{V1}/{kind}/jobs", content=big_body(CAP), headers={"Content-Type": "application/json"}
    )
    problem = assert_problem(answer, 413)
    assert str(CAP) in problem.get("detail", "")
    small = client.post(f"{V1}/{kind}/jobs", json={"urls": [OK]})
    assert small.status_code == 202
    assert len(client.get(f"{V1}/{kind}/jobs").json()["jobs"]) == 1


@pytest.mark.stores("sqlite")
@pytest.mark.parametrize("kind", KINDS)
def test_chunked_body_over_the_cap_is_413(capped: Api, kind: str) -> None:
    """A body sent without Content-Length (chunked) is counted as it streams in."""
    client = capped.client(capped.account())
    raw = big_body(CAP)

    def chunks() -> Iterator[bytes]:
        for start in range(0, len(raw), 500):
            yield raw[start : start + 500]

    answer = client.post(
        f"{V1}/{kind}/jobs", content=chunks(), headers={"Content-Type": "application/json"}
    )
    assert "content-length" not in answer.request.headers
    assert_problem(answer, 413)
    assert client.get(f"{V1}/{kind}/jobs").json()["jobs"] == []
