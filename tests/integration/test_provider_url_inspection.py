"""UrlInspectionChecker against a fake Search Console URL Inspection API on a loopback socket."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
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
from seojobs.providers.url_inspection import SCOPE, UrlInspectionChecker
from seojobs.settings import Settings
from tests.fakes.google import FakeTokenEndpoint, ServiceAccountKey
from tests.fakes.serp import RecordingSleep, Reply
from tests.fakes.server import serve
from tests.fakes.url_inspection import (
    NOT_OWNED,
    FakeUrlInspection,
    StaticTokens,
    google_error,
    quota_reply,
)

URL = "https://example.com/page"


@pytest.fixture
def fake() -> Iterator[FakeUrlInspection]:
    fake = FakeUrlInspection()
    fake.owned.add("https://example.com/")
    with serve(fake.app) as base:
        fake.base_url = base
        yield fake


def make_settings(fake: FakeUrlInspection, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "database_url": "sqlite://",
        "google_credentials_file": None,
        "url_inspection_base_url": fake.base_url,
        "provider_retries": 2,
        "provider_backoff": 0.01,
        **overrides,
    }
    return Settings(**values)


@pytest.fixture
def sleep() -> RecordingSleep:
    return RecordingSleep()


@pytest.fixture
def tokens() -> StaticTokens:
    return StaticTokens("good-token")


@pytest.fixture
async def checker(
    fake: FakeUrlInspection, tokens: StaticTokens, sleep: RecordingSleep
) -> AsyncIterator[UrlInspectionChecker]:
    checker = UrlInspectionChecker(make_settings(fake), tokens=tokens, sleep=sleep)
    yield checker
    await checker.aclose()


async def test_pass_is_indexed_with_the_index_details(
    fake: FakeUrlInspection, checker: UrlInspectionChecker
) -> None:
    fake.set_page(URL, "PASS", "Submitted and indexed", googleCanonical=URL + "?canonical")
    result = await checker.check(URL, "google")
    assert (result.status, result.provider, result.error_code) == (
        "indexed",
        "url_inspection",
        None,
    )
    assert result.detail == {
        "verdict": "PASS",
        "coverageState": "Submitted and indexed",
        "robotsTxtState": "ALLOWED",
        "indexingState": "INDEXING_ALLOWED",
        "pageFetchState": "SUCCESSFUL",
        "lastCrawlTime": "2024-05-01T10:00:00Z",
        "googleCanonical": URL + "?canonical",
        "userCanonical": URL,
        "crawledAs": "MOBILE",
        "site_url": "https://example.com/",
        "inspection_link": result.detail["inspection_link"],
    }
    assert result.detail["inspection_link"].startswith("https://search.google.com/")
    [request] = fake.requests
    assert request.path == "/v1/urlInspection/index:inspect"
    assert request.headers["authorization"] == "Bearer good-token"
    assert request.body == {"inspectionUrl": URL, "siteUrl": "https://example.com/"}


async def test_language_code_is_sent_when_given(
    fake: FakeUrlInspection, tokens: StaticTokens
) -> None:
    checker = UrlInspectionChecker(make_settings(fake), tokens=tokens, language_code="de-DE")
    await checker.check(URL, "google")
    await checker.aclose()
    assert fake.requests[0].body["languageCode"] == "de-DE"


@pytest.mark.parametrize(
    ("verdict", "coverage", "status"),
    [
        ("NEUTRAL", "Crawled - currently not indexed", "not_indexed"),
        ("NEUTRAL", "Excluded by 'noindex' tag", "not_indexed"),
        ("FAIL", "Server error (5xx)", "not_indexed"),
        ("FAIL", None, "not_indexed"),
        ("NEUTRAL", None, "not_indexed"),
        ("PASS", "Crawled - currently not indexed", "indexed"),  # the verdict wins
        ("PASS", None, "indexed"),
        ("VERDICT_UNSPECIFIED", "Indexed, not submitted in sitemap", "indexed"),
        ("VERDICT_UNSPECIFIED", "Submitted and indexed", "indexed"),
        ("VERDICT_UNSPECIFIED", "Indexed, though blocked by robots.txt", "indexed"),
        ("VERDICT_UNSPECIFIED", "Discovered - currently not indexed", "not_indexed"),
        ("VERDICT_UNSPECIFIED", "URL is unknown to Google", "not_indexed"),
        ("VERDICT_UNSPECIFIED", "Page with redirect", "not_indexed"),
        ("PARTIAL", "Submitted and indexed", "indexed"),
    ],
)
async def test_verdict_and_coverage_mapping(
    fake: FakeUrlInspection,
    checker: UrlInspectionChecker,
    verdict: str,
    coverage: str | None,
    status: str,
) -> None:
    fake.set_page(URL, verdict, coverage)
    result = await checker.check(URL, "google")
    assert (result.status, result.error_code) == (status, None)
    assert result.detail["verdict"] == verdict
    assert result.detail["coverageState"] == coverage


async def test_a_url_google_never_saw_is_not_indexed(
    fake: FakeUrlInspection, checker: UrlInspectionChecker
) -> None:
    result = await checker.check("https://example.com/new", "google")
    assert result.status == "not_indexed"
    assert result.detail["coverageState"] == "URL is unknown to Google"


@pytest.mark.parametrize("verdict", ["VERDICT_UNSPECIFIED", None])
async def test_no_verdict_and_no_coverage_is_malformed(
    fake: FakeUrlInspection, checker: UrlInspectionChecker, verdict: str | None
) -> None:
    fake.set_page(URL, "PASS", None)
    fake.pages[URL]["verdict"] = verdict
    result = await checker.check(URL, "google")
    assert (result.status, result.error_code) == ("failed", MALFORMED_RESPONSE)
    assert result.detail["site_url"] == "https://example.com/"


async def test_domain_property_fallback_and_memory(
    fake: FakeUrlInspection, checker: UrlInspectionChecker
) -> None:
    fake.owned = {"sc-domain:example.com"}
    url = "https://www.example.com/a"
    fake.set_page(url, "PASS", "Submitted and indexed")
    result = await checker.check(url, "google")
    assert result.status == "indexed"
    assert result.detail["site_url"] == "sc-domain:example.com"
    assert [r.body["siteUrl"] for r in fake.requests] == [
        "https://www.example.com/",
        "sc-domain:www.example.com",
        "sc-domain:example.com",
    ]
    # The next URL of the same origin goes straight to the property that worked.
    await checker.check("https://www.example.com/b", "google")
    assert fake.requests[-1].body["siteUrl"] == "sc-domain:example.com"
    assert len(fake.requests) == 4


async def test_no_property_is_a_rejected_result_remembered_per_origin(
    fake: FakeUrlInspection, checker: UrlInspectionChecker
) -> None:
    url = "https://blog.other.org/x"
    result = await checker.check(url, "google")
    assert (result.status, result.error_code) == ("failed", REJECTED)
    assert NOT_OWNED in (result.error_message or "")
    assert result.detail["site_urls_tried"] == [
        "https://blog.other.org/",
        "sc-domain:blog.other.org",
        "sc-domain:other.org",
    ]
    calls = len(fake.requests)
    again = await checker.check("https://blog.other.org/y", "google")
    assert (again.status, again.error_code) == ("failed", REJECTED)
    assert len(fake.requests) == calls  # no second probe for the same origin
    assert (await checker.check(URL, "google")).status == "not_indexed"  # other origins work


async def test_a_remembered_property_that_stops_working_is_forgotten(
    fake: FakeUrlInspection, checker: UrlInspectionChecker
) -> None:
    assert (await checker.check(URL, "google")).status == "not_indexed"
    fake.owned = {"sc-domain:example.com"}  # the URL-prefix property was removed
    result = await checker.check(URL, "google")
    assert (result.status, result.error_code) == ("failed", REJECTED)
    assert (await checker.check(URL, "google")).detail["site_url"] == "sc-domain:example.com"


async def test_explicit_site_urls_are_the_only_ones_tried(
    fake: FakeUrlInspection, tokens: StaticTokens
) -> None:
    fake.owned = {"https://example.com/blog/"}
    site_urls = ["https://shop.example.com/", "https://example.com/blog/", "sc-domain:other.org"]
    checker = UrlInspectionChecker(make_settings(fake), tokens=tokens, site_urls=site_urls)
    blog = await checker.check("https://EXAMPLE.com/blog/post", "google")
    outside = await checker.check("https://example.com/about", "google")
    await checker.aclose()
    assert (blog.status, blog.detail["site_url"]) == ("not_indexed", "https://example.com/blog/")
    assert (outside.status, outside.error_code) == ("failed", REJECTED)
    assert [r.body["siteUrl"] for r in fake.requests] == ["https://example.com/blog/"]


async def test_an_expired_token_is_replaced_once(
    fake: FakeUrlInspection, sleep: RecordingSleep
) -> None:
    tokens = StaticTokens("stale-token", "good-token")
    checker = UrlInspectionChecker(make_settings(fake), tokens=tokens, sleep=sleep)
    result = await checker.check(URL, "google")
    await checker.aclose()
    assert result.status == "not_indexed"
    assert tokens.invalidated == ["stale-token"]
    assert [r.headers["authorization"] for r in fake.requests] == [
        "Bearer stale-token",
        "Bearer good-token",
    ]


async def test_a_refused_token_is_fatal(fake: FakeUrlInspection) -> None:
    tokens = StaticTokens("bad-token")
    checker = UrlInspectionChecker(make_settings(fake), tokens=tokens)
    with pytest.raises(ProviderError) as info:
        await checker.check(URL, "google")
    await checker.aclose()
    assert (info.value.code, info.value.fatal, info.value.status) == (AUTH_FAILED, True, 401)
    assert len(fake.requests) == 2  # the first try and the one with a fresh token


@pytest.mark.parametrize(
    "error",
    [
        google_error(
            403,
            "PERMISSION_DENIED",
            "Search Console API has not been used in project 1 before or it is disabled.",
            details=[
                {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "SERVICE_DISABLED"}
            ],
        ),
        google_error(
            403,
            "PERMISSION_DENIED",
            "Request had insufficient authentication scopes.",
            errors=[{"reason": "insufficientPermissions"}],
        ),
    ],
    ids=["api-disabled", "scope"],
)
async def test_project_level_403_is_fatal_without_fallback(
    fake: FakeUrlInspection, checker: UrlInspectionChecker, error: dict[str, Any]
) -> None:
    fake.script(Reply(403, error))
    with pytest.raises(ProviderError) as info:
        await checker.check(URL, "google")
    assert (info.value.code, info.value.fatal) == (AUTH_FAILED, True)
    assert len(fake.requests) == 1


async def test_bad_request_is_rejected_without_fallback(
    fake: FakeUrlInspection, checker: UrlInspectionChecker
) -> None:
    fake.script(Reply(400, google_error(400, "INVALID_ARGUMENT", "Invalid inspection URL")))
    result = await checker.check(URL, "google")
    assert (result.status, result.error_code) == ("failed", REJECTED)
    assert "Invalid inspection URL" in (result.error_message or "")
    assert len(fake.requests) == 1


async def test_daily_quota_raises_without_retry(
    fake: FakeUrlInspection, checker: UrlInspectionChecker
) -> None:
    fake.script(quota_reply("day"))
    with pytest.raises(ProviderError) as info:
        await checker.check(URL, "google")
    assert (info.value.code, info.value.retryable, info.value.fatal) == (
        QUOTA_EXHAUSTED,
        False,
        False,  # other properties have quota of their own
    )
    assert info.value.status == 429
    assert len(fake.requests) == 1


async def test_minute_quota_is_retried(
    fake: FakeUrlInspection, checker: UrlInspectionChecker, sleep: RecordingSleep
) -> None:
    fake.set_page(URL, "PASS", "Submitted and indexed")
    throttled = quota_reply("minute")
    throttled.headers["Retry-After"] = "5"
    fake.script(throttled, Reply(503, google_error(503, "UNAVAILABLE", "try later")))
    result = await checker.check(URL, "google")
    assert result.status == "indexed"
    assert len(fake.requests) == 3
    assert sleep.delays[0] >= 5 and len(sleep.delays) == 2


async def test_retries_exhausted_raise_upstream_error(
    fake: FakeUrlInspection, checker: UrlInspectionChecker
) -> None:
    fake.script(*[Reply(500, google_error(500, "INTERNAL", "boom"))] * 3)
    with pytest.raises(ProviderError) as info:
        await checker.check(URL, "google")
    assert (info.value.code, info.value.retryable, info.value.status) == (UPSTREAM_ERROR, True, 500)
    assert len(fake.requests) == 3


async def test_cut_off_transfer_is_retried(
    fake: FakeUrlInspection, checker: UrlInspectionChecker
) -> None:
    fake.script(Reply(200, {"inspectionResult": {}}, truncate=True))
    assert (await checker.check(URL, "google")).status == "not_indexed"
    assert len(fake.requests) == 2


@pytest.mark.parametrize(
    "reply",
    [
        Reply(200, text="<html/>"),
        Reply(200, text='{"inspectionResult": {"indexStatusResult": {"verdict": "PA'),
        Reply(200, ["inspectionResult"]),
        Reply(200, {}),
        Reply(200, {"inspectionResult": []}),
        Reply(200, {"inspectionResult": {"indexStatusResult": "PASS"}}),
        Reply(200, {"inspectionResult": {"indexStatusResult": {"verdict": 1}}}),
        Reply(200, text="plain", headers={"Content-Encoding": "gzip"}),
    ],
    ids=["html", "cut-json", "array", "empty", "list", "status-string", "odd-verdict", "bad-gzip"],
)
async def test_malformed_answers_are_failed_results(
    fake: FakeUrlInspection, checker: UrlInspectionChecker, reply: Reply
) -> None:
    fake.script(reply)
    result = await checker.check(URL, "google")
    assert (result.status, result.error_code) == ("failed", MALFORMED_RESPONSE)
    assert len(fake.requests) == 1


def test_not_configured_names_the_setting(fake: FakeUrlInspection) -> None:
    with pytest.raises(ProviderNotConfigured) as info:
        UrlInspectionChecker(make_settings(fake))
    assert info.value.settings_needed == ["google_credentials_file"]
    assert "SEOJOBS_GOOGLE_CREDENTIALS_FILE" in info.value.message


@pytest.mark.parametrize("engine", ["bing", "yandex"])
async def test_google_only(
    fake: FakeUrlInspection, checker: UrlInspectionChecker, engine: str
) -> None:
    with pytest.raises(ProviderError) as info:
        await checker.check(URL, engine)
    assert (info.value.code, info.value.fatal) == (REJECTED, True)
    assert fake.requests == []


async def test_invalid_url_fails_without_a_call(
    fake: FakeUrlInspection, checker: UrlInspectionChecker
) -> None:
    result = await checker.check("example.com/page", "google")
    assert (result.status, result.error_code) == ("failed", REJECTED)
    assert fake.requests == []


# -- the real service-account flow (seojobs.providers.google_auth) ----------------------------
@pytest.fixture
def oauth_fake() -> Iterator[tuple[FakeUrlInspection, FakeTokenEndpoint, ServiceAccountKey]]:
    key = ServiceAccountKey()
    oauth = FakeTokenEndpoint(SCOPE)
    oauth.trust(key)
    fake = FakeUrlInspection(tokens=set(), oauth=oauth)
    fake.owned.add("https://example.com/")
    with serve(fake.app) as base:
        fake.base_url = base
        yield fake, oauth, key


async def test_service_account_from_the_credentials_file(
    oauth_fake: tuple[FakeUrlInspection, FakeTokenEndpoint, ServiceAccountKey], tmp_path: Path
) -> None:
    fake, oauth, key = oauth_fake
    path = key.write(tmp_path / "sa.json", fake.base_url + "/token")
    fake.set_page(URL, "PASS", "Submitted and indexed")
    checker = UrlInspectionChecker(make_settings(fake, google_credentials_file=str(path)))
    try:
        assert (await checker.check(URL, "google")).status == "indexed"
        assert (await checker.check(URL, "google")).status == "indexed"
        assert len(oauth.grants) == 1  # the token is cached between checks
        assert oauth.grants[0].claims is not None
        assert oauth.grants[0].claims["scope"] == SCOPE
        oauth.revoke_all()  # a token dying early: one fresh token, then on
        assert (await checker.check(URL, "google")).status == "indexed"
        assert len(oauth.grants) == 2
    finally:
        await checker.aclose()


async def test_an_unreadable_credentials_file_is_fatal_at_check_time(
    oauth_fake: tuple[FakeUrlInspection, FakeTokenEndpoint, ServiceAccountKey], tmp_path: Path
) -> None:
    fake, _, _ = oauth_fake
    missing = str(tmp_path / "missing.json")
    checker = UrlInspectionChecker(make_settings(fake, google_credentials_file=missing))
    with pytest.raises(ProviderError) as info:
        await checker.check(URL, "google")
    await checker.aclose()
    assert (info.value.code, info.value.fatal) == (AUTH_FAILED, True)
    assert fake.requests == []
