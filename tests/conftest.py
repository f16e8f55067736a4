"""Shared fixtures: real SQLite files and a real PostgreSQL server.

PostgreSQL comes from ``SEOJOBS_TEST_PG_URL`` (default: the local server with trust auth). Each
test gets a database as a fresh clone of a migrated template (each process reuses the clones
it made, emptied: see ``pg_database``). When the server is missing, the
PostgreSQL tests skip on a developer machine and FAIL in CI (``CI=true``).
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import gc
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import pytest
from fastapi.dependencies import models as fastapi_models
from psycopg import sql

from seojobs.engine.registry import Registry
from seojobs.engine.worker import YOUNG_COLLECTION_EVERY
from seojobs.services import Services
from seojobs.settings import Settings
from seojobs.store import migrate
from seojobs.store.db import Database
from tests.builtin import MIGRATIONS as BUILTIN_MIGRATIONS
from tests.clifork import pytest_sessionfinish  # noqa: F401  (stops the zygotes)
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


def pytest_configure(config: pytest.Config) -> None:
    """Young collections every 10,000 allocations, as in a `seojobs worker` (``freeze_startup``),
    instead of CPython's 700: a test process runs apps, workers and fakes in-process, whose
    request and job objects mostly die before one. At 700 more of them lived through two young
    collections into the old generation, and the full collections that followed took about a
    seventh of the CPU of a run of in-process API tests (gc.callbacks: 4.0 of 28.3 CPU-s over
    93 tests of four modules; 1.0 of 25.5 at 10,000). The apps' own freeze is left out: the
    suite keeps every app's objects in view (``gc_freeze``); see ``pytest_runtestloop`` for
    the collection's."""
    _young, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_COLLECTION_EVERY, middle, old)


@pytest.hookimpl(tryfirst=True)  # before the run (an xdist worker's loop too), after collection
def pytest_runtestloop(session: pytest.Session) -> None:
    """What collection made (every module the tests import, the items, their fixtures: some
    340,000 tracked objects) lives as long as the session, so it is frozen out of the
    collector's view, as a worker's startup is (``freeze_startup``): every full collection of
    the run walked all of it, pytest's two at the session's end (its unraisable-exception
    check) took about 0.2 CPU-s each after the collection alone, and the interpreter's exit,
    which collected and freed it all, about 1.1 CPU-s more. Objects the tests make later,
    their apps too, are collected as before."""
    gc.freeze()


# FastAPI remembers whether each endpoint and dependency is a coroutine or generator function
# in three lru_caches of 4,096 entries, keyed by the callable: an app's own closures (34 per
# app of ours) then keep the app alive, with its routes and models (~23,000 objects). A test
# process makes hundreds of apps: some 120 of them stayed alive in each xdist worker (~3
# million objects, hundreds of MB), and each full collection walked them all, 2-3 CPU-s charged
# to whichever test it fell in (test_poll_hints' plug-in waits, in a full run).
_FASTAPI_CALLABLE_CACHES = (
    "_is_gen_callable_cached",
    "_is_async_gen_callable_cached",
    "_is_coroutine_callable_cached",
)


def forget_apps() -> None:
    """Empty FastAPI's caches of callables (they are filled again as requests come): the apps
    a test stopped can be collected."""
    for name in _FASTAPI_CALLABLE_CACHES:
        cache = getattr(fastapi_models, name, None)
        if cache is not None:
            cache.cache_clear()


@pytest.hookimpl(trylast=True)  # after the test's fixtures (and a module's apps) are torn down
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    forget_apps()


# Quotas count per UTC day (and month): a test that charged one job before midnight and the
# next after it saw the quota reset (test_geo_lookup's schedule, run at 23:59:58). A test that
# would start this close to midnight waits for it to pass.
MIDNIGHT_MARGIN = 20.0


@pytest.fixture(autouse=True)
def _not_across_midnight() -> None:
    now = datetime.now(UTC)
    left = 86400.0 - (now.hour * 3600 + now.minute * 60 + now.second + now.microsecond / 1e6)
    if left < MIDNIGHT_MARGIN:
        time.sleep(left + 0.01)


def _pg_admin() -> psycopg.Connection[tuple[object, ...]]:
    return psycopg.connect(PG_ADMIN_URL, autocommit=True, connect_timeout=3)


def _with_db(url: str, name: str) -> str:
    base, _, _ = url.rpartition("/")
    return f"{base}/{name}"


@pytest.fixture(scope="session")
def pg_template() -> Iterator[str]:
    """A migrated template database; the tests' databases are cloned from it (and reused,
    see ``pg_database``)."""
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
    try:
        yield name
    finally:
        pool = _PG_POOLS.pop(name, None)
        with _pg_admin() as admin:
            for database in [*(pool.free if pool else []), name]:
                admin.execute(
                    sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                        sql.Identifier(database)
                    )
                )


# What a test may change in a database besides its rows: schemas, relations, columns, defaults,
# constraints, indexes, functions, triggers, types, extensions, and alembic's version rows. A
# database whose fingerprint is still the template's is as the template was once its rows are
# deleted and its sequences restarted; any other is dropped.
_PG_FINGERPRINT = """
SELECT md5(string_agg(x, E'\n' ORDER BY x)) FROM (
  SELECT 'n:' || nspname || ':' || nspowner::regrole::text || ':' || coalesce(nspacl::text, '')
    AS x FROM pg_namespace WHERE nspname NOT LIKE 'pg\\_%temp\\_%'
  UNION ALL SELECT 'c:' || n.nspname || '.' || c.relname || ':' || c.relkind::text || ':'
    || coalesce(c.reloptions::text, '') || ':' || coalesce(c.relacl::text, '')
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
  UNION ALL SELECT 'a:' || c.oid::regclass::text || '.' || a.attname || ':'
    || format_type(a.atttypid, a.atttypmod) || ':' || a.attnotnull::text || ':'
    || coalesce(pg_get_expr(d.adbin, d.adrelid), '')
    FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
    JOIN pg_namespace n ON n.oid = c.relnamespace
    LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
    WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') AND a.attnum > 0
    AND NOT a.attisdropped
  UNION ALL SELECT 'k:' || conrelid::regclass::text || ':' || conname || ':'
    || pg_get_constraintdef(oid) FROM pg_constraint
    WHERE connamespace <> 'pg_catalog'::regnamespace
  UNION ALL SELECT 'i:' || pg_get_indexdef(indexrelid) FROM pg_index i
    JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname <> 'pg_catalog'
  UNION ALL SELECT 'p:' || p.oid::regprocedure::text || ':' || md5(pg_get_functiondef(p.oid))
    FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
    WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') AND p.prokind <> 'a'
  UNION ALL SELECT 't:' || tgrelid::regclass::text || ':' || tgname || ':' || tgenabled::text
    || ':' || pg_get_triggerdef(oid) FROM pg_trigger WHERE NOT tgisinternal
  UNION ALL SELECT 'r:' || ev_class::regclass::text || ':' || rulename FROM pg_rewrite
    WHERE ev_class >= 16384
  UNION ALL SELECT 'e:' || extname || ':' || extversion FROM pg_extension
  UNION ALL SELECT 'y:' || t.oid::regtype::text || ':' || t.typtype::text FROM pg_type t
    JOIN pg_namespace n ON n.oid = t.typnamespace
    WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') AND t.typrelid = 0
    AND t.typelem = 0
  UNION ALL SELECT 'v:' || coalesce(string_agg(version_num, ',' ORDER BY version_num), '')
    FROM public.alembic_version
) AS catalog
"""
_PG_TABLES = """
SELECT schemaname, tablename FROM pg_tables
WHERE schemaname NOT IN ('pg_catalog', 'information_schema') AND tablename <> 'alembic_version'
ORDER BY 1, 2
"""
# What the planner knows of each relation (pages, rows, statistics): a fresh clone's is the
# template's, whose tables were never vacuumed nor analyzed.
_PG_PLANNER_STATE = """
SELECT md5(coalesce(string_agg(c.oid::text || ':' || c.relpages || ':' || c.reltuples || ':'
  || c.relallvisible, ',' ORDER BY c.oid), ''))
  || ':' || (SELECT count(*) FROM pg_statistic WHERE starelid >= 16384)
FROM pg_class c WHERE c.oid >= 16384
"""
# Every sequence back to its start, as never read (what a clone of the template has).
_PG_RESTART_SEQUENCES = """
SELECT count(setval(format('%I.%I', schemaname, sequencename)::regclass, start_value, false))
FROM pg_sequences WHERE last_value IS NOT NULL
"""


@dataclasses.dataclass
class _PgPool:
    """This process's databases cloned from one template, free for the next test."""

    template: str
    fingerprint: str = ""
    planner_state: str = ""
    tables: list[sql.Identifier] = dataclasses.field(default_factory=list)
    free: list[str] = dataclasses.field(default_factory=list)


_PG_POOLS: dict[str, _PgPool] = {}


def _pg_reset(pool: _PgPool, name: str) -> bool:
    """Make ``name`` as a fresh clone of the template again: every connection to it closed,
    every row deleted (but alembic's), every sequence restarted, the planner's view of every
    table as the template's (no statistics, never vacuumed) and the activity counters that
    wake autovacuum at zero. False (and nothing changed) when that cannot be: its schema or its
    statistics are no longer the template's."""
    with psycopg.connect(_with_db(PG_ADMIN_URL, name), connect_timeout=3) as conn:
        # A connection left open (a stopped process's) holds locks, or writes on.
        conn.execute(
            "SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        try:
            row = conn.execute(_PG_FINGERPRINT).fetchone()
        except psycopg.errors.UndefinedTable:  # no public.alembic_version any more
            return False
        if row is None or row[0] != pool.fingerprint:
            return False
        found = sql.SQL(" UNION ALL ").join(
            sql.SQL(
                "SELECT {}, EXISTS (SELECT 1 FROM {}), pg_relation_size({}) >= 10 * 8192"
            ).format(i, table, sql.Literal(table.as_string(conn)))
            for i, table in enumerate(pool.tables)
        )
        rows = conn.execute(found).fetchall()
        # A table never vacuumed under 10 pages is planned as one of 10 pages: one holding a
        # page of deleted rows is planned as the template's empty one, a larger one is not (and
        # a TRUNCATE leaves its indexes unlike the template's: "never built").
        if any(large for _, _, large in rows):
            return False
        # Every table emptied: foreign keys need not be checked (nor the order kept for them).
        conn.execute("SET LOCAL session_replication_role = replica")
        for i, used, _ in rows:
            if used:  # a DELETE of a few rows costs a fraction of a millisecond
                conn.execute(sql.SQL("DELETE FROM {}").format(pool.tables[i]))
        conn.execute(_PG_RESTART_SEQUENCES)
        row = conn.execute(_PG_PLANNER_STATE).fetchone()
        if row is None or row[0] != pool.planner_state:  # analyzed or vacuumed meanwhile
            conn.rollback()
            return False
        conn.commit()
        # The rows written and deleted would wake autovacuum in the next test.
        conn.execute("SELECT pg_stat_reset()")
    return True


@contextlib.contextmanager
def pg_database(template: str) -> Iterator[str]:
    """A PostgreSQL database as a fresh clone of ``template`` (migrated, empty); its URL.

    Cloning costs the server about 0.2 CPU-s (hundreds of tests want one), so each process
    keeps the databases it cloned: one whose schema a test left as the template's is emptied
    (rows deleted, sequences restarted: a few milliseconds) and handed to the next test; any
    other is dropped."""
    pool = _PG_POOLS.get(template)
    if pool is None:
        pool = _PG_POOLS[template] = _PgPool(template)
        with psycopg.connect(_with_db(PG_ADMIN_URL, template), connect_timeout=3) as conn:
            row = conn.execute(_PG_FINGERPRINT).fetchone()
            assert row is not None
            pool.fingerprint = row[0]
            row = conn.execute(_PG_PLANNER_STATE).fetchone()
            assert row is not None
            pool.planner_state = row[0]
            pool.tables = [sql.Identifier(*r) for r in conn.execute(_PG_TABLES)]
    if pool.free:
        name = pool.free.pop()
    else:
        name = f"seojobs_t_{uuid.uuid4().hex[:10]}"
        with _pg_admin() as admin:
            admin.execute(
                sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
                    sql.Identifier(name), sql.Identifier(template)
                )
            )
    try:
        yield _with_db(PG_ADMIN_URL, name)
    finally:
        try:
            reusable = _pg_reset(pool, name)
        except psycopg.errors.InsufficientPrivilege:  # not a superuser: clone each time
            reusable = False
        if reusable:
            pool.free.append(name)
        else:
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


PROBE_TIMEOUT = 10.0  # the database gate's, in tests (see make_settings)


def make_settings(url: str, **overrides: object) -> Settings:
    values: dict[str, object] = {
        "database_url": url,
        "plugins": ["tests.kinds"],
        "lease_seconds": 5,
        # Production's fallback poll: what a worker waits for is woken for (a job made,
        # released, rescued; a capped kind's slot) or read (the soonest delayed job), and an
        # idle worker's look every 0.2 s cost ~4 ms CPU a second (issue 24.1).
        "poll_interval": 1.0,
        # The least time between maintenance passes (each when something comes due or a
        # schedule changes): a schedule made or due fires within it.
        "maintenance_interval": 0.2,
        # Tests start hundreds of apps in one process: each freeze would keep the last one's
        # objects alive for good.
        "gc_freeze": False,
        # A provider that fails is retried as in production, but after 10-70 ms rather than
        # 2, 4 and 8 s: a job whose fallback chain meets unreachable providers (UNREACHABLE)
        # would otherwise wait some 14 s per provider. A test of the back-off itself says so.
        "provider_backoff": 0.01,
        # The API's database gate answers 503 to everything when a new PostgreSQL connection
        # takes over a second (1 s in production). On a loaded CI machine (four xdist workers,
        # Chromium and PostgreSQL on 2 cores) one did, and tests not about the gate got 503
        # database_unavailable. The gate's own tests (unit/test_api_observe_deadline,
        # e2e/test_outages) keep the production default.
        "database_probe_timeout": PROBE_TIMEOUT,
        # Tests wait by polling the API every 50 ms (tests/waiting.py): under load a wait of
        # 6 s spent a user's whole production budget (120 a minute) and the test got 429
        # rate_limited. Tests of the budget set their own (rate_limit=...).
        "rate_limit": "100000/minute",
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
            "SEOJOBS_DATABASE_PROBE_TIMEOUT": str(PROBE_TIMEOUT),  # as make_settings
        }
    )
    env.update(extra)
    return env
