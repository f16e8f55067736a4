"""GoogleIndexingSubmitter against a fake Google token endpoint and Indexing API (loopback)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from seojobs.providers.base import (
    AUTH_FAILED,
    MALFORMED_RESPONSE,
    QUOTA_EXHAUSTED,
    REJECTED,
    UPSTREAM_ERROR,
    ProviderError,
    ProviderNotConfigured,
    SubmitResult,
    http_client,
)
from seojobs.providers.google_auth import ServiceAccountTokens, load_service_account
from seojobs.providers.google_indexing import GoogleIndexingSubmitter
from seojobs.settings import Settings
from tests.fakes.google import (
    ECHO_ASSERTION,
    INDEXING_SCOPE,
    TOKEN_PATH,
    FakeIndexingApi,
    FakeTokenEndpoint,
    Reply,
    ServiceAccountKey,
    daily_quota_exceeded,
    google_error,
    rate_limited,
)
from tests.fakes.server import serve

U1, U2, U3 = (f"https://jobs.example/posting/{i}" for i in (1, 2, 3))
OWNERSHIP = "Permission denied. Failed to verify the URL ownership."


@pytest.fixture(scope="session")
def key() -> ServiceAccountKey:
    return ServiceAccountKey()


@pytest.fixture
def tokens(key: ServiceAccountKey) -> FakeTokenEndpoint:
    endpoint = FakeTokenEndpoint(INDEXING_SCOPE)
    endpoint.trust(key)
    return endpoint


@pytest.fixture
def api(tokens: FakeTokenEndpoint) -> FakeIndexingApi:
    return FakeIndexingApi(tokens)


@pytest.fixture
def base(api: FakeIndexingApi) -> Iterator[str]:
    with serve(api.app()) as url:
        yield url


@pytest.fixture
def credentials(tmp_path: Path, key: ServiceAccountKey, base: str) -> Path:
    return key.write(tmp_path / "service-account.json", base + TOKEN_PATH)


def settings_for(base: str, credentials: Path | str | None, **overrides: object) -> Settings:
    values: dict[str, object] = {
        "google_credentials_file": str(credentials) if credentials else None,
        "google_indexing_base_url": base,
        "provider_retries": 2,
        "provider_backoff": 0.01,
    }
    values.update(overrides)
    return Settings(**values)  # type: ignore[arg-type]


@pytest.fixture
def settings(base: str, credentials: Path) -> Settings:
    return settings_for(base, credentials)


async def submit(settings: Settings, urls: list[str]) -> list[SubmitResult]:
    adapter = GoogleIndexingSubmitter(settings)
    try:
        return await adapter.submit(urls)
    finally:
        await adapter.aclose()


def codes(results: list[SubmitResult]) -> list[str | None]:
    return [r.error_code for r in results]


# -- success paths ---------------------------------------------------------------------------
async def test_one_url_is_a_plain_publish(
    settings: Settings, api: FakeIndexingApi, tokens: FakeTokenEndpoint
) -> None:
    results = await submit(settings, [U1])

    assert api.batches == []
    [call] = api.publishes
    assert (call.url, call.type, call.batch, call.status) == (U1, "URL_UPDATED", None, 200)
    assert call.content_type.startswith("application/json")
    assert call.authorization == f"Bearer {tokens.issued[0]}"
    [result] = results
    assert result.ok and result.provider == "google_indexing" and result.url == U1
    metadata = result.detail["metadata"]
    assert metadata["url"] == U1
    assert result.detail["notify_time"] == metadata["latestUpdate"]["notifyTime"]
    assert result.detail["notify_time"].endswith("Z")


async def test_several_urls_go_as_one_multipart_batch(
    settings: Settings, api: FakeIndexingApi, tokens: FakeTokenEndpoint
) -> None:
    results = await submit(settings, [U1, U2, U3])

    [batch] = api.batches
    assert batch.content_type.startswith("multipart/mixed; boundary=")
    assert batch.parts == 3 and batch.status == 200
    assert batch.authorization == f"Bearer {tokens.issued[0]}"
    assert api.published() == [U1, U2, U3]
    assert all(
        p.batch == 0 and p.content_type.startswith("application/json") for p in api.publishes
    )
    assert [r.url for r in results] == [U1, U2, U3]
    assert all(r.ok and r.detail["notify_time"] for r in results)


async def test_more_than_100_urls_are_split_into_batches_of_100(
    settings: Settings, api: FakeIndexingApi, tokens: FakeTokenEndpoint
) -> None:
    urls = [f"https://jobs.example/p/{i}" for i in range(250)]
    results = await submit(settings, urls)

    assert [b.parts for b in api.batches] == [100, 100, 50]
    assert sorted(api.published()) == sorted(urls)
    assert all(r.ok for r in results)
    assert len(tokens.grants) == 1


async def test_non_web_urls_are_rejected_and_duplicates_sent_once(
    settings: Settings, api: FakeIndexingApi
) -> None:
    results = await submit(settings, [U1, "mailto:someone@example.com", U1, U2])

    assert codes(results) == [None, REJECTED, None, None]
    assert api.published() == [U1, U2]


# -- tokens ----------------------------------------------------------------------------------
async def test_one_token_serves_many_publishes(
    settings: Settings, api: FakeIndexingApi, tokens: FakeTokenEndpoint
) -> None:
    adapter = GoogleIndexingSubmitter(settings)
    try:
        await adapter.submit([U1, U2])
        await adapter.submit([U3])
        # Concurrent callers wait for the one refresh instead of each fetching a token.
        await asyncio.gather(*(adapter.submit([f"https://jobs.example/c/{i}"]) for i in range(5)))
    finally:
        await adapter.aclose()

    assert len(tokens.requests) == 1
    assert len(api.publishes) == 8
    assert {p.authorization for p in api.publishes} == {f"Bearer {tokens.issued[0]}"}


async def test_token_uri_from_the_key_file_is_honoured(
    tmp_path: Path, key: ServiceAccountKey
) -> None:
    tokens = FakeTokenEndpoint(INDEXING_SCOPE, path="/custom/oauth2/token")
    tokens.trust(key)
    api = FakeIndexingApi(tokens)
    with serve(api.app()) as base:
        token_uri = base + "/custom/oauth2/token"
        credentials = key.write(tmp_path / "sa.json", token_uri)
        results = await submit(settings_for(base, credentials), [U1])

    assert results[0].ok
    [grant] = tokens.grants
    assert grant.content_type == "application/x-www-form-urlencoded"
    assert grant.form["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer"
    assert grant.claims is not None
    assert grant.claims["aud"] == token_uri
    assert grant.claims["iss"] == key.email
    assert grant.claims["scope"] == INDEXING_SCOPE
    assert grant.claims["exp"] - grant.claims["iat"] == 3600


async def test_token_is_renewed_shortly_before_it_expires(
    credentials: Path, tokens: FakeTokenEndpoint
) -> None:
    now = [1000.0]
    source = ServiceAccountTokens(
        load_service_account(str(credentials)),
        [INDEXING_SCOPE],
        retries=0,
        backoff=0.01,
        clock=lambda: now[0],
    )
    async with http_client(Settings()) as client:
        first = await source.token(client)
        now[0] += 3600 - 301  # still more than the 5-minute margin left
        assert await source.token(client) == first
        now[0] += 2
        second = await source.token(client)
    assert second != first
    assert tokens.issued == [first, second]


async def test_a_key_google_does_not_know_is_fatal(
    tmp_path: Path, base: str, api: FakeIndexingApi, tokens: FakeTokenEndpoint
) -> None:
    stranger = ServiceAccountKey()  # same email, but not the key the token endpoint trusts
    credentials = stranger.write(tmp_path / "sa.json", base + TOKEN_PATH)

    with pytest.raises(ProviderError) as caught:
        await submit(settings_for(base, credentials), [U1, U2])

    assert caught.value.code == AUTH_FAILED and caught.value.fatal
    assert "invalid_grant Invalid JWT Signature." in caught.value.message
    assert [r.status for r in tokens.requests] == [400]  # not retried
    assert api.publishes == []


async def test_a_replaced_key_file_signs_with_its_new_key(
    tmp_path: Path, key: ServiceAccountKey, base: str, api: FakeIndexingApi,
    tokens: FakeTokenEndpoint,
) -> None:  # fmt: skip
    """A key is read once per process (google_auth._signer), by its text: a file that now
    holds another key signs with that one, the old key's tokens being refused."""
    path = key.write(tmp_path / "sa.json", base + TOKEN_PATH)
    assert all(r.ok for r in await submit(settings_for(base, path), [U1]))
    ServiceAccountKey().write(path, base + TOKEN_PATH)  # same email, a key nobody trusts

    with pytest.raises(ProviderError) as caught:
        await submit(settings_for(base, path), [U2])

    assert "invalid_grant Invalid JWT Signature." in caught.value.message
    assert [r.status for r in tokens.requests] == [200, 400]
    key.write(path, base + TOKEN_PATH)  # the trusted key again, in a file of its own text
    assert all(r.ok for r in await submit(settings_for(base, path), [U3]))
    assert [r.status for r in tokens.requests] == [200, 400, 200]


async def test_a_token_endpoint_refusing_the_client_is_fatal(
    settings: Settings, api: FakeIndexingApi, tokens: FakeTokenEndpoint
) -> None:
    tokens.answer(Reply(401, {"error": "invalid_client", "error_description": "disabled"}))
    with pytest.raises(ProviderError) as caught:
        await submit(settings, [U1])
    assert caught.value.code == AUTH_FAILED and caught.value.fatal
    assert "invalid_client disabled" in caught.value.message
    assert api.publishes == []


async def test_a_token_endpoint_echoing_the_assertion_or_a_token_never_shows_it(
    settings: Settings, api: FakeIndexingApi, tokens: FakeTokenEndpoint
) -> None:
    # The signed assertion is a bearer credential for its lifetime; an answer quoting it (or
    # an access token) must not carry it into the job's stored error.
    echo = f"bad assertion {ECHO_ASSERTION}, try ya29.a0AfB_byC-previous-token"
    tokens.answer(Reply(400, {"error": "invalid_grant", "error_description": echo}))
    with pytest.raises(ProviderError) as caught:
        await submit(settings, [U1])
    sent = tokens.requests[0].form["assertion"]
    assert sent.startswith("eyJ") and sent not in caught.value.message
    assert "ya29." not in caught.value.message and "ya29." not in str(caught.value)
    assert caught.value.message.endswith("invalid_grant bad assertion [key], try [key]")


async def test_token_endpoint_outage_is_retried(
    settings: Settings, api: FakeIndexingApi, tokens: FakeTokenEndpoint
) -> None:
    tokens.answer(Reply(503, {"error": "backend"}), Reply(500))
    results = await submit(settings, [U1])
    assert results[0].ok
    assert [r.status for r in tokens.requests] == [503, 500, 200]


async def test_token_endpoint_outage_after_retries_fails_the_urls(
    settings: Settings, api: FakeIndexingApi, tokens: FakeTokenEndpoint
) -> None:
    tokens.answer(*[Reply(503)] * 3)
    results = await submit(settings, [U1, U2])
    assert codes(results) == [UPSTREAM_ERROR, UPSTREAM_ERROR]
    assert api.publishes == []


@pytest.mark.parametrize(
    "reply",
    [
        Reply(200, body=b'{"access_token": "ya29.trunc', content_type="application/json"),
        Reply(200, {"token_type": "Bearer", "expires_in": 3600}),
        Reply(200, {"access_token": "ya29.x", "expires_in": "soon"}),
        Reply(200, ["access_token"]),
    ],
    ids=["truncated", "no-access-token", "bad-expires-in", "not-an-object"],
)
async def test_malformed_token_answers_fail_the_urls_without_raising(
    settings: Settings, api: FakeIndexingApi, tokens: FakeTokenEndpoint, reply: Reply
) -> None:
    tokens.answer(reply)
    results = await submit(settings, [U1, U2])
    assert codes(results) == [MALFORMED_RESPONSE, MALFORMED_RESPONSE]
    assert "Google token endpoint" in (results[0].error_message or "")
    assert api.publishes == []


# -- credentials file ------------------------------------------------------------------------
def test_not_configured_names_the_setting() -> None:
    with pytest.raises(ProviderNotConfigured) as caught:
        GoogleIndexingSubmitter(Settings(google_credentials_file=None))
    assert caught.value.settings_needed == ["google_credentials_file"]
    assert caught.value.fatal
    assert "SEOJOBS_GOOGLE_CREDENTIALS_FILE" in caught.value.message


def _key_info(key: ServiceAccountKey) -> dict[str, str]:
    return key.info("http://127.0.0.1:9/token")


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (None, "cannot be read"),
        ("{not json", "is not JSON"),
        ("[1, 2]", "is not a JSON object"),
        (json.dumps({"type": "authorized_user", "refresh_token": "x"}), "not a service-account"),
        ("missing-private-key", "has no 'private_key'"),
        ("bad-private-key", "unusable private_key"),
        ("bad-token-uri", "token_uri that is not a URL"),
    ],
)
async def test_unusable_credentials_file_is_fatal_with_a_clear_message(
    tmp_path: Path, key: ServiceAccountKey, base: str, api: FakeIndexingApi,
    tokens: FakeTokenEndpoint, content: str | None, why: str,
) -> None:  # fmt: skip
    info = _key_info(key)
    if content == "missing-private-key":
        content = json.dumps({k: v for k, v in info.items() if k != "private_key"})
    elif content == "bad-private-key":
        content = json.dumps({**info, "private_key": "-----BEGIN PRIVATE KEY-----\nAAAA\n"})
    elif content == "bad-token-uri":
        content = json.dumps({**info, "token_uri": "oauth2.googleapis.com/token"})
    path = tmp_path / "sa.json"
    if content is not None:
        path.write_text(content)

    adapter = GoogleIndexingSubmitter(settings_for(base, path))
    try:
        with pytest.raises(ProviderError) as caught:
            await adapter.submit([U1])
    finally:
        await adapter.aclose()
    assert caught.value.code == AUTH_FAILED and caught.value.fatal
    assert why in caught.value.message
    assert str(path) in caught.value.message
    assert "SEOJOBS_GOOGLE_CREDENTIALS_FILE" in caught.value.message
    assert tokens.requests == [] and api.publishes == []


# -- API errors ------------------------------------------------------------------------------
async def test_per_minute_rate_limit_is_retried_for_that_url_only(
    settings: Settings, api: FakeIndexingApi
) -> None:
    api.answer_url(U2, rate_limited(), rate_limited())
    results = await submit(settings, [U1, U2, U3])

    assert all(r.ok for r in results)
    assert [c.status for c in api.calls_for(U2)] == [429, 429, 200]
    assert len(api.calls_for(U1)) == 1 and len(api.calls_for(U3)) == 1


async def test_rate_limit_that_does_not_clear_is_quota_exhausted(
    settings: Settings, api: FakeIndexingApi
) -> None:
    api.always(rate_limited(), url=U1)
    results = await submit(settings, [U1, U2])

    assert codes(results) == [QUOTA_EXHAUSTED, None]
    assert "Requests per minute" in (results[0].error_message or "")
    assert len(api.calls_for(U1)) == 3


async def test_daily_quota_is_not_retried(settings: Settings, api: FakeIndexingApi) -> None:
    api.answer_url(U1, daily_quota_exceeded())  # a retry would succeed: it must not happen
    results = await submit(settings, [U1, U2])

    assert codes(results) == [QUOTA_EXHAUSTED, None]
    assert "per day" in (results[0].error_message or "")
    assert len(api.calls_for(U1)) == 1


async def test_daily_quota_as_error_info_metadata_is_recognised(
    settings: Settings, api: FakeIndexingApi
) -> None:
    details = [
        {
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": "RATE_LIMIT_EXCEEDED",
            "metadata": {"quota_limit": "DefaultPublishRequestsPerDayPerProject"},
        }
    ]
    api.answer_url(U1, google_error(429, "RESOURCE_EXHAUSTED", "Quota exceeded.", details=details))
    results = await submit(settings, [U1])
    assert codes(results) == [QUOTA_EXHAUSTED]
    assert len(api.calls_for(U1)) == 1


async def test_site_not_verified_is_a_per_url_rejection(
    settings: Settings, api: FakeIndexingApi
) -> None:
    api.answer_url(U1, google_error(403, "PERMISSION_DENIED", OWNERSHIP, "forbidden"))
    results = await submit(settings, [U1, U2])

    assert codes(results) == [REJECTED, None]
    assert OWNERSHIP in (results[0].error_message or "")
    assert len(api.calls_for(U1)) == 1


async def test_invalid_argument_is_a_per_url_rejection(
    settings: Settings, api: FakeIndexingApi
) -> None:
    api.answer_url(
        U2, google_error(400, "INVALID_ARGUMENT", "Invalid value at 'url'", "badRequest")
    )
    results = await submit(settings, [U1, U2])

    assert codes(results) == [None, REJECTED]
    assert "Invalid value at 'url'" in (results[1].error_message or "")
    assert len(api.calls_for(U2)) == 1


async def test_api_disabled_for_the_project_is_fatal(
    settings: Settings, api: FakeIndexingApi
) -> None:
    disabled = google_error(
        403,
        "PERMISSION_DENIED",
        "Web Search Indexing API has not been used in project 1 before or it is disabled.",
        "accessNotConfigured",
    )
    api.always(disabled)
    with pytest.raises(ProviderError) as caught:
        await submit(settings, [U1, U2])
    assert caught.value.code == AUTH_FAILED and caught.value.fatal
    assert "has not been used in project" in caught.value.message


async def test_a_revoked_token_is_replaced_once(
    settings: Settings, api: FakeIndexingApi, tokens: FakeTokenEndpoint
) -> None:
    adapter = GoogleIndexingSubmitter(settings)
    try:
        await adapter.submit([U1])
        tokens.revoke_all()
        results = await adapter.submit([U2, U3])
    finally:
        await adapter.aclose()

    assert all(r.ok for r in results)
    assert len(tokens.grants) == 2
    assert [c.status for c in api.calls_for(U2)] == [401, 200]
    assert api.calls_for(U2)[1].authorization == f"Bearer {tokens.issued[1]}"


async def test_a_batch_refused_as_unauthenticated_gets_one_fresh_token(
    settings: Settings, api: FakeIndexingApi, tokens: FakeTokenEndpoint
) -> None:
    api.answer_batch(google_error(401, "UNAUTHENTICATED", "Request had invalid credentials."))
    results = await submit(settings, [U1, U2])

    assert all(r.ok for r in results)
    assert [b.status for b in api.batches] == [401, 200]
    assert api.batches[1].authorization == f"Bearer {tokens.issued[1]}"


async def test_401_with_a_fresh_token_is_fatal(
    settings: Settings, api: FakeIndexingApi, tokens: FakeTokenEndpoint
) -> None:
    api.always(google_error(401, "UNAUTHENTICATED", "Request had invalid credentials."))
    with pytest.raises(ProviderError) as caught:
        await submit(settings, [U1, U2])
    assert caught.value.code == AUTH_FAILED and caught.value.fatal
    assert len(tokens.grants) == 2  # the cached token, then one fresh token
    assert len(api.calls_for(U1)) == 2


async def test_server_errors_are_retried_then_succeed(
    settings: Settings, api: FakeIndexingApi
) -> None:
    api.answer_url(U1, google_error(500, "INTERNAL", "Internal error"), Reply(503))
    results = await submit(settings, [U1, U2])
    assert all(r.ok for r in results)
    assert [c.status for c in api.calls_for(U1)] == [500, 503, 200]


async def test_server_errors_after_retries_are_upstream_error(
    settings: Settings, api: FakeIndexingApi
) -> None:
    api.always(google_error(503, "UNAVAILABLE", "The service is currently unavailable."), url=U2)
    results = await submit(settings, [U1, U2])
    assert codes(results) == [None, UPSTREAM_ERROR]
    assert "currently unavailable" in (results[1].error_message or "")
    assert len(api.calls_for(U2)) == 3


async def test_a_failed_batch_request_is_retried_as_a_whole(
    settings: Settings, api: FakeIndexingApi
) -> None:
    api.answer_batch(google_error(503, "UNAVAILABLE", "Try again."))
    results = await submit(settings, [U1, U2])

    assert all(r.ok for r in results)
    assert [b.status for b in api.batches] == [503, 200]
    assert api.published() == [U1, U2]


# -- malformed answers -----------------------------------------------------------------------
@pytest.mark.parametrize(
    "reply",
    [
        Reply(200, body=b'{"urlNotificationMetadata": {"url": "https://jobs.exa'),
        Reply(200, {"unexpected": True}),
        Reply(200, {"urlNotificationMetadata": "yes"}),
        Reply(200, ["urlNotificationMetadata"]),
        Reply(200, body=b"<html>ok</html>", content_type="text/html"),
        Reply(200, body=b""),
        Reply(302, headers={"Location": "https://accounts.example/"}),
    ],
    ids=["truncated", "other-shape", "metadata-not-object", "list", "html", "empty", "redirect"],
)
@pytest.mark.parametrize("batched", [True, False], ids=["batch", "single"])
async def test_malformed_publish_answers_are_per_url_results(
    settings: Settings, api: FakeIndexingApi, reply: Reply, batched: bool
) -> None:
    api.answer_url(U1, reply)
    urls = [U1, U2] if batched else [U1]
    results = await submit(settings, urls)

    assert results[0].error_code == MALFORMED_RESPONSE
    assert all(r.ok for r in results[1:])
    assert len(api.calls_for(U1)) == 1


async def test_a_batch_answer_missing_a_part_fails_that_url(
    settings: Settings, api: FakeIndexingApi
) -> None:
    api.answer_url(U2, Reply(omit=True))
    results = await submit(settings, [U1, U2, U3])
    assert codes(results) == [None, MALFORMED_RESPONSE, None]
    assert "no part" in (results[1].error_message or "")


@pytest.mark.parametrize(
    "reply",
    [
        Reply(200, body=b"<html>maintenance</html>", content_type="text/html"),
        Reply(200, body=b"garbage without boundaries", content_type="multipart/mixed; boundary=x"),
        Reply(200, body=b"--x\r\nContent-Type: application/http\r\n\r\nnot http\r\n--x--\r\n",
              content_type="multipart/mixed; boundary=x"),
    ],
    ids=["not-multipart", "no-parts", "part-not-http"],
)  # fmt: skip
async def test_a_malformed_batch_answer_fails_its_urls_without_raising(
    settings: Settings, api: FakeIndexingApi, reply: Reply
) -> None:
    api.answer_batch(reply)
    results = await submit(settings, [U1, U2])
    assert codes(results) == [MALFORMED_RESPONSE, MALFORMED_RESPONSE]
    assert len(api.batches) == 1  # a malformed answer is not retried
