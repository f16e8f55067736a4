"""Fixtures of the HTTP API tests (v1, reports, projects): a running app on loopback, with
or without its in-process worker, and the fake providers it talks to."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import text

from seojobs.kinds import load_registry
from seojobs.services import Services
from seojobs.store.db import Database
from tests import schema_0002
from tests.api_helpers import Api, Providers, api, providers
from tests.conftest import database_of, make_settings


@pytest.fixture
def fakes() -> Iterator[Providers]:
    with providers() as made:
        yield made


@pytest.fixture
def audit_services(store_url: str) -> Iterator[Services]:
    """The services over a store, allowed to fetch loopback sites (the audits' fixtures)."""
    # A long lease: these tests count requests, and a stall on a loaded machine past the
    # suite's 5 s lease had the job rescued and its page's external links checked twice
    # ("claim lost", 14 requests for 7). Rescue is test_site_audit's subject, on its own
    # fixture.
    settings = make_settings(store_url, allow_private_networks=True, lease_seconds=60)
    services = Services(Database(store_url), settings, load_registry(settings))
    yield services
    services.db.dispose()


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


@pytest.fixture(scope="module")
def shared_idle(module_store: str, request: pytest.FixtureRequest) -> Iterator[Api]:
    """``idle``, one per store for a whole module: for tests that each keep to their own
    users (every ``account()`` is a new user)."""
    with database_of(module_store, request) as url, api(make_settings(url)) as running:
        running.shared = True
        yield running


@pytest.fixture
def own_idle(shared_idle: Api) -> Iterator[Api]:
    """``shared_idle`` for one test: its own users, clients and client address (what the API
    counts per address, failed authentications, is this test's alone)."""
    mine = shared_idle.own()
    try:
        yield mine
    finally:
        mine.close()


@pytest.fixture(scope="module")
def shared_fakes() -> Iterator[Providers]:
    with providers() as made:
        yield made


@pytest.fixture(scope="module")
def shared_working(
    module_store: str, shared_fakes: Providers, request: pytest.FixtureRequest
) -> Iterator[Api]:
    """``working``, one per store for a whole module (as ``shared_idle``), on a database of
    its own: its worker must not run the jobs that ``shared_idle``'s tests leave pending."""
    with (
        database_of(module_store, request) as url,
        api(shared_fakes.settings(url), run_worker=True) as running,
    ):
        running.shared = True
        yield running


@pytest.fixture
def at_0002(store_url: str) -> Iterator[Database]:
    """A database built by the migrations up to 0002 and seeded by ``tests.schema_0002`` (the
    data of a server in use then): where the tests of later migrations start."""
    db = Database(store_url)
    with db.write() as conn:  # start from nothing: the fixtures migrated to head
        if db.dialect == "postgresql":
            conn.execute(text("DROP SCHEMA public CASCADE"))
            conn.execute(text("CREATE SCHEMA public"))
    if db.dialect == "sqlite":
        db.dispose()
        open(store_url.removeprefix("sqlite:///"), "wb").close()
        db = Database(store_url)
    schema_0002.build(db)
    yield db
    db.dispose()
