"""Provider errors never carry a credential: ``with_retries``, the one path every adapter's
calls take, clears each configured one (and anything spelled like an API key) from the error
that leaves it, whether the provider echoed it or a transport error named it."""

from __future__ import annotations

import pytest

from seojobs.fetch.errors import FetchError
from seojobs.providers.base import ProviderError, secrets_of, with_retries
from seojobs.settings import Settings

CREDENTIALS = {
    "serpapi_key": "serpapi-secret-1",
    "serper_key": "serper-secret-2",
    "dataforseo_password": "dfs-secret-3",
    "openai_api_key": "openai-secret-4",
    "anthropic_api_key": "anthropic-secret-5",
    "google_ads_client_secret": "ads-secret-6",
    "google_ads_refresh_token": "ads-refresh-7",
}


def settings(**values: object) -> Settings:
    return Settings(database_url="sqlite:///unused.db", **(CREDENTIALS | values))  # type: ignore[arg-type]


def test_every_configured_credential_is_a_secret_and_nothing_else() -> None:
    found = secrets_of(settings(dataforseo_login="someone@example.com", metrics_token="m-token-8"))
    assert set(CREDENTIALS.values()) | {"m-token-8"} <= set(found)
    assert "someone@example.com" not in found  # a login is not a secret
    assert "abc" not in secrets_of(settings(serper_key="abc"))  # too short to clear safely


@pytest.mark.parametrize("secret", sorted(CREDENTIALS.values()))
async def test_a_provider_echo_of_any_credential_is_cleared(secret: str) -> None:
    async def call() -> None:
        raise ProviderError("provider_rejected", f"refused {secret} and sk-other-account-key")

    with pytest.raises(ProviderError) as raised:
        await with_retries(call, retries=0, backoff=0, settings=settings())
    assert secret not in raised.value.message and "sk-other" not in raised.value.message
    assert raised.value.message == "refused [key] and [key]" == str(raised.value)


async def test_a_transport_error_naming_a_key_is_cleared_after_the_retries() -> None:
    calls = []

    async def call() -> None:
        calls.append(1)
        raise FetchError("GET /search.json?api_key=serpapi-secret-1 timed out", kind="timeout")

    async def no_wait(_seconds: float) -> None:
        return None

    with pytest.raises(ProviderError) as raised:
        await with_retries(call, retries=2, backoff=0, sleep=no_wait, settings=settings())
    assert len(calls) == 3 and raised.value.code == "upstream_error"
    assert "serpapi-secret-1" not in raised.value.message and "[key]" in raised.value.message


async def test_bearer_tokens_are_cleared_even_where_no_settings_are_given() -> None:
    # google_auth's token exchange sends no setting, only a signed JWT assertion.
    jwt = "eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiJhQGIuYyJ9.c2lnbmF0dXJl"

    async def call() -> None:
        raise ProviderError("provider_auth_failed", f"refused {jwt}; token ya29.a0Af-xyz.1 bad")

    with pytest.raises(ProviderError) as raised:
        await with_retries(call, retries=0, backoff=0)
    assert raised.value.message == "refused [key]; token [key] bad" == str(raised.value)
