"""DataForSeoChecker against a fake DataForSEO Live SERP API on a loopback socket."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from seojobs.providers.base import (
    AUTH_FAILED,
    MALFORMED_RESPONSE,
    QUOTA_EXHAUSTED,
    REJECTED,
    UPSTREAM_ERROR,
    ProviderError,
    ProviderNotConfigured,
)
from seojobs.providers.dataforseo import DataForSeoChecker
from seojobs.settings import Settings
from tests.fakes.serp import FakeDataForSeo, RecordingSleep, Reply, dfs_task, envelope
from tests.fakes.server import serve

URL = "https://example.com/page"


@pytest.fixture
def fake() -> Iterator[FakeDataForSeo]:
    fake = FakeDataForSeo()
    with serve(fake.app) as base:
        fake.base_url = base
        yield fake


def make_settings(fake: FakeDataForSeo, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "database_url": "sqlite://",
        "dataforseo_login": fake.login,
        "dataforseo_password": fake.password,
        "dataforseo_base_url": fake.base_url,
        "provider_retries": 2,
        "provider_backoff": 0.01,
        **overrides,
    }
    return Settings(**values)


@pytest.fixture
def sleep() -> RecordingSleep:
    return RecordingSleep()


@pytest.fixture
async def checker(fake: FakeDataForSeo, sleep: RecordingSleep) -> AsyncIterator[DataForSeoChecker]:
    checker = DataForSeoChecker(make_settings(fake), sleep=sleep)
    yield checker
    await checker.aclose()


def organic(*urls: str, extra: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    items = [{"type": "organic", "url": u} for u in urls]
    return envelope([dfs_task(20000, "Ok.", [{"items": [*(extra or []), *items]}])])


@pytest.mark.parametrize("engine", ["google", "bing", "yandex"])
async def test_indexed_and_not_indexed_per_engine(
    fake: FakeDataForSeo, checker: DataForSeoChecker, engine: str
) -> None:
    fake.index(engine, URL)
    result = await checker.check(URL, engine)
    assert (result.status, result.provider, result.error_code) == ("indexed", "dataforseo", None)
    assert result.detail["matched_url"] == URL
    assert result.detail["task_id"]
    assert result.detail["check_url"].startswith(f"https://www.{engine}.com/search")
    request = fake.requests[0]
    assert request.path == f"/v3/serp/{engine}/organic/live/regular"
    credentials = base64.b64encode(f"{fake.login}:{fake.password}".encode()).decode()
    assert request.headers["authorization"] == f"Basic {credentials}"
    assert request.body == [
        {
            "keyword": "site:example.com/page",
            "location_code": 2840,
            "language_code": "en",
            "depth": 10,
        }
    ]
    other = await checker.check("https://example.com/missing", engine)
    assert (other.status, other.error_code) == ("not_indexed", None)
    assert other.detail["results"] == 0


async def test_location_language_and_depth_are_options(fake: FakeDataForSeo) -> None:
    checker = DataForSeoChecker(
        make_settings(fake), location_code=2276, language_code="de", depth=20
    )
    await checker.check(URL, "google")
    await checker.aclose()
    task = fake.requests[0].body[0]
    assert (task["location_code"], task["language_code"], task["depth"]) == (2276, "de", 20)


async def test_only_organic_items_count(fake: FakeDataForSeo, checker: DataForSeoChecker) -> None:
    fake.index("google", "https://example.com/page/deeper")
    fake.paid["google"] = [URL]  # an ad for the very URL is not an index entry
    result = await checker.check(URL, "google")
    assert result.status == "not_indexed"
    assert result.detail["results"] == 1


async def test_percent_and_plus_survive_the_keyword_decoding(
    fake: FakeDataForSeo, checker: DataForSeoChecker
) -> None:
    url = "https://example.com/a+b/caf%C3%A9"
    fake.index("google", url)
    result = await checker.check(url, "google")
    assert result.status == "indexed"
    assert result.detail["query"] == "site:example.com/a+b/caf%C3%A9"
    assert fake.requests[0].body[0]["keyword"] == "site:example.com/a%2Bb/caf%25C3%25A9"


@pytest.mark.parametrize(
    ("wanted", "listed", "status", "field"),
    [
        (URL, URL + "/", "indexed", "differences"),
        ("http://example.com/page", URL, "not_indexed", "near_match"),
        (URL + "#top", URL, "indexed", "matched_url"),
    ],
    ids=["trailing-slash", "http-vs-https", "fragment"],
)
async def test_near_misses(
    fake: FakeDataForSeo,
    checker: DataForSeoChecker,
    wanted: str,
    listed: str,
    status: str,
    field: str,
) -> None:
    fake.index("google", listed)
    result = await checker.check(wanted, "google")
    assert result.status == status
    assert field in result.detail


async def test_null_items_is_not_indexed(fake: FakeDataForSeo, checker: DataForSeoChecker) -> None:
    fake.script(Reply(200, envelope([dfs_task(20000, "Ok.", [{"items": None}])])))
    result = await checker.check(URL, "google")
    assert (result.status, result.error_code) == ("not_indexed", None)


async def test_wrong_password_is_fatal_and_not_retried(fake: FakeDataForSeo) -> None:
    checker = DataForSeoChecker(make_settings(fake, dataforseo_password="nope"))
    with pytest.raises(ProviderError) as info:
        await checker.check(URL, "google")
    await checker.aclose()
    assert (info.value.code, info.value.fatal, info.value.status) == (AUTH_FAILED, True, 401)
    assert len(fake.requests) == 1


@pytest.mark.parametrize(
    ("reply", "code"),
    [
        (Reply(200, envelope([], 40100)), AUTH_FAILED),
        (Reply(402, envelope([], 40200)), QUOTA_EXHAUSTED),
        (Reply(200, envelope([], 40200)), QUOTA_EXHAUSTED),
        (
            Reply(200, envelope([dfs_task(40203, "The cost limit has been exceeded.")])),
            QUOTA_EXHAUSTED,
        ),
        (Reply(404, envelope([], 40400)), REJECTED),
    ],
    ids=["40100", "http-402", "40200", "task-40203", "http-404"],
)
async def test_fatal_statuses_raise_without_retry(
    fake: FakeDataForSeo, checker: DataForSeoChecker, reply: Reply, code: str
) -> None:
    fake.script(reply)
    with pytest.raises(ProviderError) as info:
        await checker.check(URL, "google")
    assert (info.value.code, info.value.fatal) == (code, True)
    assert len(fake.requests) == 1


@pytest.mark.parametrize(
    "reply",
    [
        Reply(500, {"status_code": 50000, "status_message": "Internal Server Error."}),
        Reply(200, envelope([], 50000)),
        Reply(200, envelope([dfs_task(40101, "Internal SE Server Error.")])),
        Reply(200, envelope([], 40202)),
        Reply(429, text="Too Many Requests"),
        Reply(200, {"tasks": []}, truncate=True),
    ],
    ids=["http-500", "50000", "task-40101", "40202", "http-429", "cut-off"],
)
async def test_transient_failures_are_retried(
    fake: FakeDataForSeo, checker: DataForSeoChecker, sleep: RecordingSleep, reply: Reply
) -> None:
    fake.index("google", URL)
    fake.script(reply, reply)
    result = await checker.check(URL, "google")
    assert result.status == "indexed"
    assert len(fake.requests) == 3
    assert len(sleep.delays) == 2


async def test_retries_exhausted_raise_upstream_error(
    fake: FakeDataForSeo, checker: DataForSeoChecker
) -> None:
    fake.script(*[Reply(200, envelope([], 50000))] * 3)
    with pytest.raises(ProviderError) as info:
        await checker.check(URL, "google")
    assert (info.value.code, info.value.retryable, info.value.fatal) == (
        UPSTREAM_ERROR,
        True,
        False,
    )
    assert len(fake.requests) == 3


@pytest.mark.parametrize(
    "reply",
    [
        Reply(200, envelope([dfs_task(40501, "Invalid Field: 'keyword'.")])),
        Reply(200, envelope([], 40006)),
        Reply(400, text="Bad Request"),
    ],
    ids=["task-40501", "request-40006", "http-400"],
)
async def test_refusals_are_rejected_results(
    fake: FakeDataForSeo, checker: DataForSeoChecker, reply: Reply
) -> None:
    fake.script(reply)
    result = await checker.check(URL, "google")
    assert (result.status, result.error_code) == ("failed", REJECTED)
    assert result.error_message
    assert len(fake.requests) == 1


@pytest.mark.parametrize(
    "reply",
    [
        Reply(200, text="<html>oops</html>"),
        Reply(200, text='{"status_code": 20000, "tasks": [{"status_code": 20'),
        Reply(200, [organic(URL)]),
        Reply(200, {"status_code": "20000", "tasks": []}),
        Reply(200, {"tasks": organic(URL)["tasks"]}),
        Reply(200, envelope([])),
        Reply(200, {**organic(URL), "tasks": {"0": organic(URL)["tasks"][0]}}),
        Reply(200, envelope(["task"])),
        Reply(200, envelope([{"id": "t"}])),
        Reply(200, envelope([dfs_task(20000, "Ok.", None)])),
        Reply(200, envelope([dfs_task(20000, "Ok.", ["result"])])),
        Reply(200, envelope([dfs_task(20000, "Ok.", [{"items": {"url": URL}}])])),
        Reply(200, text="plain", headers={"Content-Encoding": "gzip"}),
    ],
    ids=[
        "html",
        "cut-json",
        "array",
        "status-as-string",
        "no-status",
        "no-tasks",
        "tasks-dict",
        "task-string",
        "task-without-status",
        "result-null",
        "result-string",
        "items-dict",
        "bad-gzip",
    ],
)
async def test_malformed_answers_are_failed_results(
    fake: FakeDataForSeo, checker: DataForSeoChecker, reply: Reply
) -> None:
    fake.script(reply)
    result = await checker.check(URL, "google")
    assert (result.status, result.error_code) == ("failed", MALFORMED_RESPONSE)
    assert len(fake.requests) == 1


async def test_junk_items_are_skipped(fake: FakeDataForSeo, checker: DataForSeoChecker) -> None:
    junk: list[Any] = [None, "x", {"type": "organic"}, {"type": "organic", "url": 3}]
    fake.script(Reply(200, organic(URL, extra=junk)))
    assert (await checker.check(URL, "google")).status == "indexed"


@pytest.mark.parametrize(
    ("overrides", "missing"),
    [
        ({"dataforseo_login": None}, ["dataforseo_login"]),
        ({"dataforseo_password": None}, ["dataforseo_password"]),
        (
            {"dataforseo_login": None, "dataforseo_password": ""},
            ["dataforseo_login", "dataforseo_password"],
        ),
    ],
)
def test_not_configured_names_the_settings(
    fake: FakeDataForSeo, overrides: dict[str, Any], missing: list[str]
) -> None:
    with pytest.raises(ProviderNotConfigured) as info:
        DataForSeoChecker(make_settings(fake, **overrides))
    assert info.value.settings_needed == missing
    for name in missing:
        assert f"SEOJOBS_{name.upper()}" in info.value.message


async def test_unsupported_engine_is_fatal(
    fake: FakeDataForSeo, checker: DataForSeoChecker
) -> None:
    with pytest.raises(ProviderError) as info:
        await checker.check(URL, "baidu")
    assert (info.value.code, info.value.fatal) == (REJECTED, True)
    assert fake.requests == []


async def test_invalid_url_fails_without_a_paid_task(
    fake: FakeDataForSeo, checker: DataForSeoChecker
) -> None:
    result = await checker.check("not a url", "google")
    assert (result.status, result.error_code) == ("failed", REJECTED)
    assert fake.requests == []
