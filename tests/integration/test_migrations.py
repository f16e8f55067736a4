"""A migrated database equals one built from the models, on both dialects."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import text

from seojobs.store import migrate
from seojobs.store.db import Database
from seojobs.store.tables import metadata


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


def test_migrated_schema_matches_models(store_url: str) -> None:
    db = _empty_database(store_url)
    migrate.upgrade(db)
    with db.engine.connect() as conn:
        diff = compare_metadata(
            MigrationContext.configure(conn, opts={"compare_type": True}), metadata
        )
    db.dispose()
    assert diff == []


def test_migrate_is_idempotent_and_current(store_url: str) -> None:
    db = Database(store_url)
    migrate.upgrade(db)
    migrate.upgrade(db)
    assert migrate.is_current(db)
    assert migrate.current_revision(db) == migrate.head_revision()
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
