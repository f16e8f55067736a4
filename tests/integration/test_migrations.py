"""A migrated database equals one built from the models, on both dialects; upgrading an
existing database keeps every row, trigger and cascade. Migrated as ``seojobs migrate`` does:
seojobs' chain with the built-in kinds' own branches (the site audit's pages)."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, column, text
from sqlalchemy.exc import DBAPIError, IntegrityError

from seojobs.store import migrate
from seojobs.store.db import Database
from seojobs.store.tables import metadata
from tests import schema_0002
from tests.builtin import MIGRATIONS as BUILTIN_MIGRATIONS
from tests.schema_0002 import HANDED_OUT, PRESENT, TABLES, snapshot


def _empty_database(store_url: str) -> Database:
    db = Database(store_url)
    # The fixtures migrate; start from nothing to prove the migrations alone build the schema.
    with db.write() as conn:
        if db.dialect == "postgresql":
            conn.execute(text("DROP SCHEMA public CASCADE"))
            conn.execute(text("CREATE SCHEMA public"))
        else:
            found = {
                r[0]
                for r in conn.execute(text("SELECT name FROM sqlite_master WHERE type='table'"))
                if not r[0].startswith("sqlite_")  # SQLite's own (AUTOINCREMENT's sequence)
            }
            # Children before parents: PRAGMA foreign_keys cannot change inside a transaction.
            ordered = [t.name for t in reversed(metadata.sorted_tables) if t.name in found]
            for name in ordered + sorted(found - set(ordered)):
                conn.execute(text(f'DROP TABLE "{name}"'))
    return db


def _id_drift(conn: Connection) -> list[str]:
    """Tables whose ids may be handed out again although the models say they never are.

    alembic's comparison does not look at SQLite's AUTOINCREMENT, so this does.
    """
    if conn.dialect.name == "postgresql":
        # bigserial: a sequence, which never goes back.
        defaults = dict(
            conn.execute(
                text(
                    "SELECT table_name, column_default FROM information_schema.columns "
                    "WHERE table_schema = 'public' AND column_name = 'id'"
                )
            ).all()
        )
        return sorted(t for t, default in defaults.items() if "nextval(" not in str(default))
    ddl = dict(conn.execute(text("SELECT name, sql FROM sqlite_master WHERE type='table'")).all())
    return sorted(
        t.name
        for t in metadata.sorted_tables
        if t.name in ddl  # tables of later revisions are not there yet
        and t.dialect_options["sqlite"]["autoincrement"] != ("AUTOINCREMENT" in ddl[t.name])
    )


def test_migrated_schema_matches_models(store_url: str) -> None:
    db = _empty_database(store_url)
    migrate.upgrade(db, extra=BUILTIN_MIGRATIONS)
    with db.engine.connect() as conn:
        diff = compare_metadata(
            MigrationContext.configure(conn, opts={"compare_type": True}), metadata
        )
        drift = _id_drift(conn)
    db.dispose()
    assert diff == []
    assert drift == []


def test_ids_that_leave_the_server_are_never_reused_by_the_models() -> None:
    """Every table with an id a client sees is AUTOINCREMENT on SQLite."""
    never_reused = {
        t.name for t in metadata.sorted_tables if t.dialect_options["sqlite"]["autoincrement"]
    }
    assert never_reused >= {"users", "projects", "schedules", "jobs"}


def test_migrate_is_idempotent_and_current(store_url: str) -> None:
    db = Database(store_url)
    migrate.upgrade(db, extra=BUILTIN_MIGRATIONS)
    migrate.upgrade(db, extra=BUILTIN_MIGRATIONS)
    assert migrate.is_current(db, BUILTIN_MIGRATIONS)
    assert migrate.current_revision(db) == migrate.head_revision()
    db.dispose()


ACME_MIGRATIONS = str(Path(__file__).resolve().parents[1] / "acme" / "migrations")


@pytest.mark.parametrize("extra", [(), BUILTIN_MIGRATIONS, (*BUILTIN_MIGRATIONS, ACME_MIGRATIONS)])
def test_the_heads_read_from_the_version_files_are_alembics(extra: tuple[str, ...]) -> None:
    """A process start recognises a database at its heads without Alembic (issue 24.1):
    the heads it reads from the version files' source are the ones Alembic finds."""
    alembic_heads = ScriptDirectory.from_config(migrate.alembic_config(extra)).get_heads()
    assert migrate.script_heads(tuple(extra)) == set(alembic_heads)


def test_a_database_missing_a_plugins_branch_is_upgraded(sqlite_url: str) -> None:
    """At seojobs' heads but not at a plug-in's: the quick check does not skip the upgrade."""
    db = Database(sqlite_url)
    extra = (*BUILTIN_MIGRATIONS, ACME_MIGRATIONS)
    assert migrate.is_current(db, BUILTIN_MIGRATIONS)
    assert not migrate.is_current(db, extra)
    migrate.upgrade(db, extra=extra)
    assert "a001" in migrate.current_heads(db)
    assert migrate.is_current(db, extra)
    with db.read() as conn:
        conn.execute(text("SELECT COUNT(*) FROM acme_notes"))
    db.dispose()


def test_drift_is_detected(store_url: str) -> None:
    """The comparison is not vacuous: a schema missing an index is reported."""
    db = Database(store_url)
    with db.write() as conn:
        conn.execute(text("DROP INDEX ix_jobs_claim"))
    with db.engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), metadata)
    db.dispose()
    assert any(d[0] == "add_index" and d[1].name == "ix_jobs_claim" for d in diff)


def test_id_drift_is_detected(store_url: str) -> None:
    """Nor is the id check: at 0002 SQLite reused ids; PostgreSQL never did."""
    db = _empty_database(store_url)
    migrate.upgrade(db, "0002")
    with db.engine.connect() as conn:
        drift = _id_drift(conn)
    db.dispose()
    expected = [] if db.dialect == "postgresql" else ["jobs", "projects", "schedules", "users"]
    assert drift == expected


# -- upgrading a database in use -----------------------------------------------------------


@pytest.fixture
def at_0002(store_url: str) -> Any:
    db = _empty_database(store_url)
    schema_0002.build(db)
    yield db
    db.dispose()


def _rows(db: Database) -> dict[str, list[tuple[Any, ...]]]:
    with db.read() as conn:
        return snapshot(conn)


def test_upgrade_keeps_every_row(at_0002: Database) -> None:
    before = _rows(at_0002)
    assert [r[0] for r in before["jobs"]] == [1, 2, 3, 4]
    migrate.upgrade(at_0002, "0003")
    assert migrate.current_revision(at_0002) == "0003"
    assert _rows(at_0002) == before


@pytest.mark.parametrize(
    ("job_id", "change"),
    [
        (1, "state = 'pending', completed_at = NULL"),
        (1, "result = NULL"),
        (1, "worker_id = 'thief'"),
        (3, "error_message = 'rewritten'"),
        (3, "attempt = attempt + 1"),
        (3, "counters = '{}'"),
    ],
)
def test_upgrade_keeps_the_final_state_guard(at_0002: Database, job_id: int, change: str) -> None:
    migrate.upgrade(at_0002, "0003")
    before = _rows(at_0002)
    with pytest.raises(DBAPIError, match="cannot change"), at_0002.write() as conn:
        conn.execute(text(f"UPDATE jobs SET {change} WHERE id = :id"), {"id": job_id})
    assert _rows(at_0002) == before
    # It refuses final jobs only.
    with at_0002.write() as conn:
        conn.execute(text("UPDATE jobs SET attempt = 7 WHERE id = 2"))


def _ids(conn: Connection, sql: str) -> list[int]:
    return [int(r[0]) for r in conn.execute(text(sql))]


def test_upgrade_keeps_the_cascades(at_0002: Database) -> None:
    migrate.upgrade(at_0002, "0003")
    with at_0002.write() as conn:
        conn.execute(text("DELETE FROM projects WHERE id = 2"))
        # Its jobs, their items and its schedule went with it.
        assert _ids(conn, "SELECT id FROM jobs ORDER BY id") == [1, 4]
        assert _ids(conn, "SELECT job_id FROM job_items ORDER BY id") == [1, 1, 4]
        assert _ids(conn, "SELECT id FROM schedules") == []
        conn.execute(text("DELETE FROM jobs WHERE id = 1"))
        # A child job outlives its parent (SET NULL); the parent's items do not.
        assert _ids(conn, "SELECT COUNT(*) FROM jobs WHERE id = 4 AND parent_id IS NULL") == [1]
        assert _ids(conn, "SELECT job_id FROM job_items ORDER BY id") == [4]
        conn.execute(text("DELETE FROM users WHERE id = 2"))
        assert _ids(conn, "SELECT id FROM projects ORDER BY id") == [1]
        assert _ids(conn, "SELECT id FROM idempotency_keys ORDER BY id") == [1]
    # Foreign keys are enforced again once the upgrade is over.
    with pytest.raises(IntegrityError), at_0002.write() as conn:
        conn.execute(
            text(
                "INSERT INTO projects (user_id, name, is_default, created_at) "
                "VALUES (99, 'x', false, '2026-01-01')"
            )
        )


def _insert(conn: Connection, name: str, row: dict[str, Any]) -> int:
    values = {k: v for k, v in row.items() if k != "id"}
    return int(
        conn.execute(TABLES[name].insert().values(**values).returning(column("id"))).scalar_one()
    )


def _new_rows(conn: Connection, n: int) -> dict[str, int]:
    """One new user, project, schedule and job; their ids."""
    made = {
        "users": _insert(
            conn, "users", {**schema_0002._user(0, f"new{n}"), "api_key_hash": f"new{n}"}
        )
    }
    made["projects"] = _insert(conn, "projects", schema_0002._project(0, 1, f"new{n}", False))
    made["schedules"] = _insert(
        conn, "schedules", {**schema_0002._schedule(0, 1), "name": f"new{n}"}
    )
    made["jobs"] = _insert(conn, "jobs", schema_0002._job(0, 1, "pending"))
    return made


def _delete(conn: Connection, made: dict[str, int]) -> None:
    for name in ("jobs", "schedules", "projects", "users"):
        conn.execute(text(f"DELETE FROM {name} WHERE id = :id"), {"id": made[name]})


def test_ids_after_upgrade_are_above_every_id_before(at_0002: Database) -> None:
    migrate.upgrade(at_0002, "0003")
    # PostgreSQL's sequences remember the ids deleted before the upgrade. SQLite kept no
    # trace of them: the upgrade starts above every id still present.
    floor = HANDED_OUT if at_0002.dialect == "postgresql" else PRESENT
    if at_0002.is_sqlite:
        with at_0002.read() as conn:
            seq = dict(conn.execute(text("SELECT name, seq FROM sqlite_sequence")).all())
        assert {name: seq[name] for name in PRESENT} == PRESENT
    with at_0002.write() as conn:
        first = _new_rows(conn, 1)
        assert all(first[name] > floor[name] for name in floor), (first, floor)
        _delete(conn, first)
    # Deleting the newest rows after the upgrade frees none of their ids.
    with at_0002.write() as conn:
        second = _new_rows(conn, 2)
    assert all(second[name] > first[name] for name in first), (second, first)


def _pg_schema(conn: Connection) -> list[tuple[Any, ...]]:
    """Columns with their defaults, indexes, constraints and triggers, as PostgreSQL has them."""
    queries = [
        "SELECT table_name, column_name, data_type, column_default, is_nullable "
        "FROM information_schema.columns WHERE table_schema = 'public'",
        "SELECT tablename, indexdef FROM pg_indexes WHERE schemaname = 'public'",
        "SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid) FROM pg_constraint "
        "WHERE connamespace = 'public'::regnamespace",
        "SELECT tgname, pg_get_triggerdef(oid) FROM pg_trigger WHERE NOT tgisinternal",
        "SELECT sequencename, last_value FROM pg_sequences WHERE schemaname = 'public'",
    ]
    return [tuple(row) for query in queries for row in sorted(conn.execute(text(query)).all())]


def test_upgrade_changes_nothing_on_postgresql(pg_url: str) -> None:
    """bigserial ids never go back: 0003 leaves PostgreSQL's schema and sequences alone."""
    db = _empty_database(pg_url)
    schema_0002.build(db)
    with db.read() as conn:
        before = _pg_schema(conn)
    assert ("jobs_id_seq", HANDED_OUT["jobs"]) in before
    assert any(row[0] == "jobs_final_state_guard" for row in before)
    migrate.upgrade(db, "0003")
    with db.read() as conn:
        assert _pg_schema(conn) == before
    db.dispose()


def test_downgrade_and_upgrade_again_keep_every_row(at_0002: Database) -> None:
    before = _rows(at_0002)
    migrate.upgrade(at_0002, "0003")
    migrate.downgrade(at_0002, "0002")
    assert migrate.current_revision(at_0002) == "0002"
    assert _rows(at_0002) == before
    with at_0002.engine.connect() as conn:
        assert _id_drift(conn) == (
            [] if at_0002.dialect == "postgresql" else ["jobs", "projects", "schedules", "users"]
        )
    migrate.upgrade(at_0002, "0003")
    assert _rows(at_0002) == before


def test_concurrent_upgrades_run_the_steps_once(at_0002: Database) -> None:
    """`seojobs migrate` next to starting servers: every upgrader ends at head, rows kept."""
    before = _rows(at_0002)
    url = at_0002.url.render_as_string(hide_password=False)
    errors: list[BaseException] = []
    start = threading.Barrier(3)

    def upgrade() -> None:
        db = Database(url)
        try:
            start.wait()
            migrate.upgrade(db, extra=BUILTIN_MIGRATIONS)
        except BaseException as exc:  # reported below
            errors.append(exc)
        finally:
            db.dispose()

    threads = [threading.Thread(target=upgrade) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert errors == []
    assert migrate.is_current(at_0002, BUILTIN_MIGRATIONS)
    assert _rows(at_0002) == before


# -- SQLite: the rebuild must not cascade, and fails whole ---------------------------------


@pytest.fixture
def sqlite_at_0002(sqlite_url: str) -> Any:
    db = _empty_database(sqlite_url)
    schema_0002.build(db)
    yield db
    db.dispose()


def _foreign_keys_on(db: Database) -> bool:
    with db.read() as conn:
        return bool(conn.execute(text("PRAGMA foreign_keys")).scalar())


def test_rebuild_refuses_to_run_with_foreign_keys_on(sqlite_at_0002: Database) -> None:
    """Run by plain alembic, dropping `users` would cascade through every project and job."""
    before = _rows(sqlite_at_0002)
    config = migrate.alembic_config()
    with sqlite_at_0002.engine.connect() as conn:
        assert conn.execute(text("PRAGMA foreign_keys")).scalar() == 1
        conn.rollback()
        config.attributes["connection"] = conn
        with pytest.raises(RuntimeError, match="seojobs migrate"):
            command.upgrade(config, "0003")
    assert migrate.current_revision(sqlite_at_0002) == "0002"
    assert _rows(sqlite_at_0002) == before


def test_failed_upgrade_changes_nothing(sqlite_at_0002: Database) -> None:
    """A foreign key the rebuild would leave broken stops it; the database stays at 0002."""
    path = sqlite_at_0002.url.database
    assert path
    with sqlite3.connect(path) as raw:  # foreign keys are off on a plain connection
        raw.execute("UPDATE jobs SET parent_id = 99 WHERE id = 2")
    raw.close()
    before = _rows(sqlite_at_0002)
    with pytest.raises(RuntimeError, match="foreign keys broken"):
        migrate.upgrade(sqlite_at_0002, "0003")
    assert migrate.current_revision(sqlite_at_0002) == "0002"
    assert _rows(sqlite_at_0002) == before
    assert _foreign_keys_on(sqlite_at_0002)
