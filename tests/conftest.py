"""Shared fixtures: real SQLite files and a real PostgreSQL server.

PostgreSQL comes from ``SEOJOBS_TEST_PG_URL`` (default: the local server with trust auth). Each
test gets its own database cloned from a migrated template. When the server is missing, the
PostgreSQL tests skip on a developer machine and FAIL in CI (``CI=true``).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from seojobs.engine.registry import Registry
from seojobs.services import Services
from seojobs.settings import Settings
from seojobs.store import migrate
from seojobs.store.db import Database
from tests.builtin import MIGRATIONS as BUILTIN_MIGRATIONS
from tests.cputime import pytest_runtest_protocol  # noqa: F401  (SEOJOBS_TEST_CPU)
from tests.kinds import log_metadata
from tests.kinds import register as register_test_kinds
from tests.scheduling import (  # noqa: F401  (the hooks)
    pytest_collection_finish,
    pytest_collection_modifyitems,
    pytest_runtest_setup,
)

ROOT = Path(__file__).resolve().parent.parent
PG_ADMIN_URL = os.environ.get(
    "SEOJOBS_TEST_PG_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
)
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
STORES = ["sqlite", "postgresql"]


def _pg_admin() -> psycopg.Connection[tuple[object, ...]]:
    return psycopg.connect(PG_ADMIN_URL, autocommit=True, connect_timeout=3)


def _with_db(url: str, name: str) -> str:
    base, _, _ = url.rpartition("/")
    return f"{base}/{name}"


@pytest.fixture(scope="session")
def pg_template() -> Iterator[str]:
    """A migrated template database; per-test databases are cloned from it."""
    try:
        admin = _pg_admin()
    except psycopg.OperationalError as exc:
        message = f"PostgreSQL is not reachable at {PG_ADMIN_URL}: {exc}"
        if IN_CI:
            pytest.fail(message + " (CI=true: PostgreSQL tests must run)", pytrace=False)
        pytest.skip(message)
    name = f"seojobs_tpl_{uuid.uuid4().hex[:8]}"
    with admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    url = _with_db(PG_ADMIN_URL, name)
    db = Database(url)
    migrate.upgrade(db, extra=BUILTIN_MIGRATIONS)
    log_metadata.create_all(db.engine)
    db.dispose()
    yield name
    with _pg_admin() as admin:
        admin.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )


@contextlib.contextmanager
def pg_database(template: str) -> Iterator[str]:
    """A fresh PostgreSQL database cloned from ``template``; its URL; dropped after."""
    name = f"seojobs_t_{uuid.uuid4().hex[:10]}"
    with _pg_admin() as admin:
        admin.execute(
            sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
                sql.Identifier(name), sql.Identifier(template)
            )
        )
    yield _with_db(PG_ADMIN_URL, name)
    with _pg_admin() as admin:
        admin.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )


@pytest.fixture
def pg_url(pg_template: str) -> Iterator[str]:
    with pg_database(pg_template) as url:
        yield url


_SQLITE_TEMPLATE: list[Path] = []  # this process's migrated file, made on first use


def _sqlite_template() -> Path:
    """A SQLite file migrated once per process: copying it takes a fraction of a millisecond,
    migrating takes a quarter of a second (and hundreds of tests want one)."""
    if not _SQLITE_TEMPLATE:
        folder = Path(tempfile.mkdtemp(prefix="seojobs-template-"))
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        path = folder / "seojobs.db"
        db = Database(f"sqlite:///{path}")
        migrate.upgrade(db, extra=BUILTIN_MIGRATIONS)
        log_metadata.create_all(db.engine)
        db.dispose()
        # The last connection closed checkpoints the WAL into the file and removes it: the
        # one file is the whole database.
        assert not path.with_name(path.name + "-wal").exists()
        _SQLITE_TEMPLATE.append(path)
    return _SQLITE_TEMPLATE[0]


def migrated_sqlite(folder: Path) -> str:
    """The URL of a migrated SQLite database in ``folder`` (a copy of the process's template)."""
    path = folder / "seojobs.db"
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(_sqlite_template(), path)
    return f"sqlite:///{path}"


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return migrated_sqlite(tmp_path)


def stores_for(definition: pytest.Function | pytest.Item) -> list[str]:
    """Both stores, or those a ``stores`` mark names (the closest wins: a module of
    store-agnostic tests marked ``stores("sqlite")`` can keep a test on ``stores(*STORES)``)."""
    marked = definition.get_closest_marker("stores")
    return list(marked.args) if marked else STORES


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "store_url" in metafunc.fixturenames:
        metafunc.parametrize("store_url", stores_for(metafunc.definition), indirect=True)
    if "module_store" in metafunc.fixturenames:
        metafunc.parametrize("module_store", stores_for(metafunc.definition), scope="module")


@pytest.fixture
def store_url(request: pytest.FixtureRequest) -> str:
    """The contract-suite parameter: one run per store."""
    if request.param == "postgresql":
        return str(request.getfixturevalue("pg_url"))
    return str(request.getfixturevalue("sqlite_url"))


@contextlib.contextmanager
def database_of(store: str, request: pytest.FixtureRequest) -> Iterator[str]:
    """A new migrated database of ``store`` ("sqlite" or "postgresql"); its URL."""
    if store == "postgresql":
        with pg_database(request.getfixturevalue("pg_template")) as url:
            yield url
    else:
        factory: pytest.TempPathFactory = request.getfixturevalue("tmp_path_factory")
        yield migrated_sqlite(factory.mktemp("store"))


# A provider for every engine, so index jobs are accepted (a job whose engine has no
# provider is refused at creation). Nothing listens at the discard port: tests whose jobs run
# point these at local fakes (tests.api_helpers.Providers), and tests of the refusal unset them.
UNREACHABLE = "http://127.0.0.1:9"
CONFIGURED_PROVIDERS: dict[str, object] = {
    "indexnow_key": "0123456789abcdef",
    "indexnow_endpoint": UNREACHABLE + "/indexnow",
    # The shipped orders, with IndexNow after Google's own API for google.
    "submit_providers": {
        "google": ["google_indexing", "indexnow"],
        "bing": ["indexnow"],
        "yandex": ["indexnow"],
    },
    "serpapi_key": "serpapi-key",  # in the shipped check order of every engine
    "serpapi_base_url": UNREACHABLE,
    # Keyword research: both providers (DataForSEO checks come after SerpApi in every order).
    "dataforseo_login": "dfs-login",
    "dataforseo_password": "dfs-password",
    "dataforseo_base_url": UNREACHABLE,
    "google_ads_developer_token": "dev-token",
    "google_ads_client_id": "client-id",
    "google_ads_client_secret": "client-secret",
    "google_ads_refresh_token": "refresh-token",
    "google_ads_customer_id": "1234567890",
    "google_ads_base_url": UNREACHABLE,
    "google_ads_token_url": UNREACHABLE + "/token",
    # Rank checks: both providers, so a request naming either is accepted (Serper also comes
    # before SerpApi in google's index-check order: both unreachable here).
    "serper_key": "serper-key",
    "serper_base_url": UNREACHABLE,
}
NO_PROVIDERS: dict[str, object] = {
    "indexnow_key": None,
    "serpapi_key": None,
    "dataforseo_login": None,
    "google_ads_developer_token": None,
    "serper_key": None,
}
# Our own small fingerprint database (made-up technologies), so tech_stack jobs are accepted
# (one is refused at creation while the server has none).
TEST_FINGERPRINTS = str(Path(__file__).parent / "fakes" / "fingerprints.json")


def make_settings(url: str, **overrides: object) -> Settings:
    values: dict[str, object] = {
        "database_url": url,
        "plugins": ["tests.kinds"],
        "lease_seconds": 5,
        "poll_interval": 0.2,
        "maintenance_interval": 0.2,
        # Tests start hundreds of apps in one process: each freeze would keep the last one's
        # objects alive for good.
        "gc_freeze": False,
        # A provider that fails is retried as in production, but after 10-70 ms rather than
        # 2, 4 and 8 s: a job whose fallback chain meets unreachable providers (UNREACHABLE)
        # would otherwise wait some 14 s per provider. A test of the back-off itself says so.
        "provider_backoff": 0.01,
        **CONFIGURED_PROVIDERS,
        "fingerprints_path": TEST_FINGERPRINTS,
    }
    values.update(overrides)
    return Settings(**values)  # type: ignore[arg-type]


@pytest.fixture
def settings(store_url: str) -> Settings:
    return make_settings(store_url)


@pytest.fixture
def db(settings: Settings) -> Iterator[Database]:
    database = Database(settings.database_url)
    yield database
    database.dispose()


@pytest.fixture
def registry() -> Registry:
    reg = Registry()
    register_test_kinds(reg)
    return reg


@pytest.fixture
def services(db: Database, settings: Settings, registry: Registry) -> Services:
    return Services(db, settings, registry)


def subprocess_env(url: str, **extra: str) -> dict[str, str]:
    """Environment for a real `seojobs` process that loads the test kinds."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEOJOBS_")}
    env.update(
        {
            "SEOJOBS_DATABASE_URL": url,
            "SEOJOBS_PLUGINS": "tests.kinds",
            # This checkout's package first (a worktree's, not the editable install's).
            "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)]),
            "SEOJOBS_POLL_INTERVAL": "0.2",
            "SEOJOBS_MAINTENANCE_INTERVAL": "0.2",
            "SEOJOBS_PROVIDER_BACKOFF": "0.01",  # as make_settings: retried, without the wait
        }
    )
    env.update(extra)
    return env
