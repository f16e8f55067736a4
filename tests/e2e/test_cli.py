"""The `seojobs` command run as a real process: help, migrate, users create, worker preflight.
Each forked from tests/clifork.py's zygote, but the tests that run the console script."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest

from seojobs.store import jobs as job_sql
from seojobs.store import migrate
from seojobs.store.coltypes import utcnow
from seojobs.store.db import Database
from seojobs.store.tables import users
from tests import schema_0002
from tests.clifork import run_console_script
from tests.conftest import subprocess_env
from tests.e2e.helpers import (
    SCHEMA_TABLES,
    all_rows,
    env_without_seojobs,
    open_services,
    run_cli,
    table_names,
)


def _is_current(url: str) -> bool:
    db = Database(url)
    try:
        return migrate.is_current(db)
    finally:
        db.dispose()


# -- help ---------------------------------------------------------------------------------


def test_help_lists_every_command(tmp_path: Path) -> None:
    # The installed console script itself (the others fork from tests/clifork.py's zygote).
    done = run_console_script("--help", env=env_without_seojobs(), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    for command in ("serve", "worker", "migrate", "users"):
        assert command in done.stdout


def test_users_help_lists_create(tmp_path: Path) -> None:
    done = run_cli("users", "--help", env=env_without_seojobs(), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "create" in done.stdout


# -- migrate ------------------------------------------------------------------------------


def _check_migrate_twice(url: str, cwd: Path) -> None:
    env = subprocess_env(url)
    first = run_cli("migrate", env=env, cwd=cwd)
    assert first.returncode == 0, first.stderr
    assert table_names(url) >= SCHEMA_TABLES
    assert _is_current(url)
    head = migrate.head_revision()
    assert head is not None
    assert head in first.stdout

    second = run_cli("migrate", env=env, cwd=cwd)
    assert second.returncode == 0, second.stderr
    assert head in second.stdout
    assert _is_current(url)


def test_migrate_creates_schema_on_fresh_sqlite_file(fresh_sqlite_url: str, tmp_path: Path) -> None:
    db_file = Path(fresh_sqlite_url.removeprefix("sqlite:///"))
    assert not db_file.exists()
    _check_migrate_twice(fresh_sqlite_url, tmp_path)
    assert db_file.is_file()


@pytest.mark.postgres
def test_migrate_creates_schema_on_empty_postgresql(empty_pg_url: str, tmp_path: Path) -> None:
    assert not (SCHEMA_TABLES & table_names(empty_pg_url))
    _check_migrate_twice(empty_pg_url, tmp_path)


def _check_migrate_upgrades_a_database_in_use(url: str, cwd: Path) -> None:
    """A database at 0002 with rows (its newest ones deleted) is upgraded in place."""
    db = Database(url)
    try:
        schema_0002.build(db)
        with db.read() as conn:
            before = schema_0002.snapshot(conn)
    finally:
        db.dispose()
    done = run_cli("migrate", env=subprocess_env(url), cwd=cwd)
    assert done.returncode == 0, done.stderr
    assert f"schema at {migrate.head_revision()}" in done.stdout
    assert _is_current(url)
    with open_services(url) as services:
        with services.db.read() as conn:
            assert schema_0002.snapshot(conn) == before
        user = services.accounts.create_user("dave").user
        job, _ = services.jobs.create(user, "test_noop", {})
        # From now on the newest job's id stays taken once it is pruned.
        services.jobs.cancel(user, job.id)
        with services.db.write() as conn:
            job_sql.prune(conn, utcnow() + timedelta(seconds=1))
            assert job_sql.get(conn, job.id) is None
        after, _ = services.jobs.create(user, "test_noop", {})
    # SQLite kept no trace of the ids deleted before the upgrade; PostgreSQL's sequences did.
    floor = schema_0002.PRESENT if url.startswith("sqlite") else schema_0002.HANDED_OUT
    assert user.id > floor["users"]
    assert user.default_project_id > floor["projects"]
    assert after.id > job.id > floor["jobs"]


def test_migrate_upgrades_a_sqlite_database_in_use(fresh_sqlite_url: str, tmp_path: Path) -> None:
    _check_migrate_upgrades_a_database_in_use(fresh_sqlite_url, tmp_path)


@pytest.mark.postgres
def test_migrate_upgrades_a_postgresql_database_in_use(empty_pg_url: str, tmp_path: Path) -> None:
    _check_migrate_upgrades_a_database_in_use(empty_pg_url, tmp_path)


def test_migrate_defaults_to_seojobs_db_in_cwd(tmp_path: Path) -> None:
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    env = env_without_seojobs()
    done = run_cli("migrate", env=env, cwd=cwd)
    assert done.returncode == 0, done.stderr
    db_file = cwd / "seojobs.db"
    assert db_file.is_file()
    url = f"sqlite:///{db_file}"
    assert table_names(url) >= SCHEMA_TABLES
    assert _is_current(url)


# -- worker preflight ---------------------------------------------------------------------


def _check_worker_refuses(url: str, cwd: Path) -> None:
    done = run_cli("worker", env=subprocess_env(url), cwd=cwd)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "seojobs migrate" in done.stderr
    # It refused before doing anything: no schema was created behind the user's back.
    assert not (SCHEMA_TABLES & table_names(url))


def test_worker_refuses_unmigrated_sqlite(fresh_sqlite_url: str, tmp_path: Path) -> None:
    _check_worker_refuses(fresh_sqlite_url, tmp_path)


@pytest.mark.postgres
def test_worker_refuses_unmigrated_postgresql(empty_pg_url: str, tmp_path: Path) -> None:
    _check_worker_refuses(empty_pg_url, tmp_path)


# -- users create -------------------------------------------------------------------------


def _assert_key_not_stored(url: str, api_key: str) -> None:
    rows = all_rows(url, users)
    assert rows
    for row in rows:
        for column, value in row.items():
            assert api_key not in str(value), f"users.{column} holds the raw API key"


def test_users_create_json(store_url: str, tmp_path: Path) -> None:
    done = run_cli(
        "users", "create", "alice", "--json", env=subprocess_env(store_url), cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    # Exactly one JSON document on stdout (json.loads rejects trailing data).
    created = json.loads(done.stdout)
    assert set(created) == {"user_id", "api_key"}
    assert type(created["user_id"]) is int
    assert isinstance(created["api_key"], str)
    assert created["api_key"]
    api_key = created["api_key"]

    with open_services(store_url) as services:
        user = services.accounts.authenticate(api_key)
        assert user is not None
        assert user.id == created["user_id"]
        assert user.name == "alice"
        assert services.accounts.authenticate(api_key + "x") is None
    _assert_key_not_stored(store_url, api_key)
    row = next(r for r in all_rows(store_url, users) if r["id"] == created["user_id"])
    assert row["api_key_hash"]
    assert row["api_key_hash"] != api_key


def test_users_create_human_output_shows_key_once(sqlite_url: str, tmp_path: Path) -> None:
    done = run_cli("users", "create", "bob", env=subprocess_env(sqlite_url), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    with open_services(sqlite_url) as services:
        keys = [
            token
            for token in done.stdout.split()
            if services.accounts.authenticate(token) is not None
        ]
        assert len(keys) == 1, done.stdout
        api_key = keys[0]
        assert done.stdout.count(api_key) == 1
        user = services.accounts.authenticate(api_key)
        assert user is not None
        assert user.name == "bob"
        assert str(user.id) in done.stdout
    with pytest.raises(json.JSONDecodeError):
        json.loads(done.stdout)
    _assert_key_not_stored(sqlite_url, api_key)


def test_users_create_rate_limit(sqlite_url: str, tmp_path: Path) -> None:
    done = run_cli(
        "users",
        "create",
        "carol",
        "--rate-limit",
        "30",
        "--json",
        env=subprocess_env(sqlite_url),
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    api_key = json.loads(done.stdout)["api_key"]
    with open_services(sqlite_url) as services:
        user = services.accounts.authenticate(api_key)
    assert user is not None
    assert user.rate_limit == "30/minute"


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(["dave", "--rate-limit", "0"], id="rate-limit-zero"),
        pytest.param(["dave", "--rate-limit", "-5"], id="rate-limit-negative"),
        pytest.param(["dave", "--rate-limit", "lots"], id="rate-limit-not-a-number"),
        pytest.param([], id="missing-name"),
    ],
)
def test_users_create_rejects_invalid_input(
    sqlite_url: str, tmp_path: Path, args: list[str]
) -> None:
    done = run_cli("users", "create", *args, env=subprocess_env(sqlite_url), cwd=tmp_path)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "Usage" in done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout == ""
    assert all_rows(sqlite_url, users) == []


def test_users_create_rejects_blank_name(sqlite_url: str, tmp_path: Path) -> None:
    done = run_cli("users", "create", "   ", env=subprocess_env(sqlite_url), cwd=tmp_path)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    assert "name" in done.stderr
    assert all_rows(sqlite_url, users) == []


@pytest.mark.parametrize("name", ["a\x01b", "two\nlines", "tab\tbed", "del\x7f"])
def test_users_create_refuses_a_name_with_control_characters(
    sqlite_url: str, tmp_path: Path, name: str
) -> None:
    """A user's name meets the rule of every other name (issue 25.5): one line."""
    done = run_cli("users", "create", name, env=subprocess_env(sqlite_url), cwd=tmp_path)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    assert "name" in done.stderr and "control character" in done.stderr
    assert all_rows(sqlite_url, users) == []


# -- bad input: one line, never a traceback (issue 25.7) -----------------------------------

NOT_UTF8 = "\udcff"  # an argument holding the byte 0xff, as Python passes it on


# (arguments, extra environment); "{deep}" and "{undecodable}": files made by the test.
NO_STORE = [
    (("fingerprints", "update", "--from", "{deep}"), {}),
    (("fingerprints", "update", "--from", "{undecodable}"), {}),
    (("fingerprints", "update", "--from", f"/nonexistent/{NOT_UTF8}"), {}),
    (("migrate",), {"SEOJOBS_WORKER_CONCURRENCY": "many"}),
    (("users", "list"), {"SEOJOBS_DATABASE_URL": "nosuchdb://x"}),
    (("providers",), {"SEOJOBS_PROVIDER_RETRIES": "-x"}),
]
WITH_STORE = [("users", "disable", NOT_UTF8), ("users", "create", NOT_UTF8)]


def _one_line_and_failing(args: tuple[str, ...], env: dict[str, str], cwd: Path) -> None:
    deep = cwd / "deep.json"
    deep.write_text("[" * 5000 + "]" * 5000)
    undecodable = cwd / "undecodable.json"
    undecodable.write_bytes(b"\xff\xfe{")
    args = tuple(a.format(deep=deep, undecodable=undecodable) for a in args)
    done = run_cli(*args, env=env, cwd=cwd)
    said = [line for line in done.stderr.splitlines() if not line.startswith("database: ")]
    assert done.returncode != 0, (args, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr, (args, done.stderr)
    assert len(said) == 1 and said[0].strip(), (args, done.stderr)


@pytest.mark.parametrize(("args", "extra"), NO_STORE)
def test_bad_input_ends_a_command_with_one_line_and_a_failing_status(
    tmp_path: Path, args: tuple[str, ...], extra: dict[str, str]
) -> None:
    env = subprocess_env("sqlite://", SEOJOBS_FINGERPRINTS_PATH=str(tmp_path / "fp.json"))
    _one_line_and_failing(args, env | extra, tmp_path)


@pytest.mark.parametrize("args", WITH_STORE)
def test_an_argument_that_is_not_utf8_ends_with_one_line_on_either_store(
    store_url: str, tmp_path: Path, args: tuple[str, ...]
) -> None:
    env = subprocess_env(store_url)
    migrated = run_cli("migrate", env=env, cwd=tmp_path)
    assert migrated.returncode == 0, migrated.stderr
    _one_line_and_failing(args, env, tmp_path)


def test_a_fingerprint_name_with_a_lone_surrogate_is_installed_storable(tmp_path: Path) -> None:
    """The issue's probe: a technology named with a lone surrogate (a JSON escape) is
    outside text like any other, kept with U+FFFD (issue 25.1, 25.7)."""
    source = tmp_path / "fingerprints.json"
    document = {
        "technologies": {"Bad\ud800Name": {"cats": [1], "html": "<b>x"}},
        "categories": {"1": {"name": "Cat\u0000egory"}},
    }
    source.write_text(json.dumps(document))  # ensure_ascii: written as \ud800 and \u0000
    target = tmp_path / "fp.json"
    env = subprocess_env("sqlite://", SEOJOBS_FINGERPRINTS_PATH=str(target))
    done = run_cli("fingerprints", "update", "--from", str(source), env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    installed = json.loads(target.read_text(encoding="utf-8"))
    assert list(installed["technologies"]) == ["Bad\ufffdName"]
    assert installed["categories"]["1"]["name"] == "Cat\ufffdegory"
