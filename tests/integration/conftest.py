"""Fixtures of the HTTP API tests (v1, reports, projects): a running app on loopback, with
or without its in-process worker, and the fake providers it talks to."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.api_helpers import Api, Providers, api, providers
from tests.conftest import make_settings


@pytest.fixture
def fakes() -> Iterator[Providers]:
    with providers() as made:
        yield made


@pytest.fixture
def idle(store_url: str) -> Iterator[Api]:
    """The API without a worker: jobs stay pending (and no provider is ever called)."""
    with api(make_settings(store_url), run_worker=False) as running:
        yield running


@pytest.fixture
def working(store_url: str, fakes: Providers) -> Iterator[Api]:
    """The API with its in-process worker (and its maintenance: schedules fire), talking to
    the fake providers."""
    with api(fakes.settings(store_url), run_worker=True) as running:
        yield running
