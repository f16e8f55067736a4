"""The rate limiter on Redis: deployments sharing one Redis database."""

from __future__ import annotations

import pytest

from seojobs.settings import Settings
from tests.api_helpers import (
    V1,
    Account,
    Api,
    api,
    forget_rate_limit_keys,
    key_prefix,
    redis_or_skip,
)
from tests.conftest import make_settings


@pytest.fixture
def redis_url() -> str:
    return redis_or_skip()


def _redis_app(url: str, redis_url: str, prefix: str) -> Settings:
    return make_settings(
        url, rate_limit_storage=redis_url, rate_limit="3/minute", rate_limit_key_prefix=prefix
    )


def _codes(app: Api, account: Account, n: int) -> list[int]:
    return [app.client(account).get(f"{V1}/usage").status_code for _ in range(n)]


def test_deployments_sharing_a_redis_database_have_separate_budgets(
    store_url: str, redis_url: str
) -> None:
    # One database, so that the user has the same id in every app: what two deployments with
    # databases of their own look like to Redis (ids restart at 1 in each).
    ours, theirs = key_prefix(), key_prefix()
    try:
        with (
            api(_redis_app(store_url, redis_url, ours)) as first,
            api(_redis_app(store_url, redis_url, theirs)) as other,
            api(_redis_app(store_url, redis_url, ours)) as same,  # our second process
        ):
            account = first.account()
            assert _codes(first, account, 4) == [200, 200, 200, 429]
            assert _codes(other, account, 4) == [200, 200, 200, 429]
            assert _codes(same, account, 1) == [429]
    finally:
        forget_rate_limit_keys(redis_url, ours)
        forget_rate_limit_keys(redis_url, theirs)
