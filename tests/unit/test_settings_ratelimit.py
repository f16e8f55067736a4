"""The rate-limit settings are checked when the process starts, each error naming its field."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from seojobs.settings import DEFAULT_LIMITS, Settings


def test_defaults() -> None:
    settings = Settings()
    assert settings.rate_limit_on_storage_error == "open"
    assert settings.rate_limit_key_prefix == "seojobs"
    assert settings.auth_failure_limit == "30/minute"
    assert settings.trusted_proxies == []


@pytest.mark.parametrize("value", DEFAULT_LIMITS)
def test_the_defaults_that_are_not_parsed_at_start_are_valid_limits(value: str) -> None:
    from limits import parse

    parse(value)


def test_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEOJOBS_TRUSTED_PROXIES", "10.0.0.1, 172.16.0.0/12,fd00::/8")
    monkeypatch.setenv("SEOJOBS_RATE_LIMIT_ON_STORAGE_ERROR", "closed")
    monkeypatch.setenv("SEOJOBS_RATE_LIMIT_KEY_PREFIX", "staging")
    monkeypatch.setenv("SEOJOBS_AUTH_FAILURE_LIMIT", "10/hour")
    settings = Settings()
    assert settings.trusted_proxies == ["10.0.0.1/32", "172.16.0.0/12", "fd00::/8"]
    assert settings.rate_limit_on_storage_error == "closed"
    assert settings.rate_limit_key_prefix == "staging"
    assert settings.auth_failure_limit == "10/hour"


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("trusted_proxies", "proxy.internal"),
        ("trusted_proxies", "10.0.0.0/33"),
        ("trusted_proxies", "10.0.0.1,,nope"),
        ("auth_failure_limit", "30/fortnight"),
        ("auth_failure_limit", "thirty"),
        ("rate_limit", "1/eon"),
        ("rate_limit_on_storage_error", "maybe"),
        ("rate_limit_storage", "memcached://127.0.0.1:11211"),
        ("rate_limit_storage", "127.0.0.1:6379"),
        ("rate_limit_key_prefix", ""),
        ("rate_limit_key_prefix", "two words"),
        ("rate_limit_key_prefix", "{tag}"),
        ("rate_limit_storage_timeout", "0"),
        ("rate_limit_storage_cooldown", "-1"),
    ],
)
def test_bad_values_are_refused_naming_the_field(field: str, value: str) -> None:
    with pytest.raises(ValidationError) as raised:
        Settings(**{field: value})  # type: ignore[arg-type]
    assert [e["loc"][0] for e in raised.value.errors()] == [field]
