"""Create or upgrade the schema with Alembic (``seojobs migrate``)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, text

from seojobs.store.db import Database

MIGRATIONS = Path(__file__).parent / "migrations"
# Any fixed 64-bit number: serialises concurrent `migrate` runs on one PostgreSQL database.
PG_MIGRATION_LOCK = 0x5E0_10B5


def alembic_config() -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    return config


def upgrade(db: Database, revision: str = "head") -> None:
    _run(db, command.upgrade, revision)


def downgrade(db: Database, revision: str) -> None:
    _run(db, command.downgrade, revision)


def _run(db: Database, step: Callable[[Config, str], None], revision: str) -> None:
    config = alembic_config()
    with db.engine.connect() as conn:
        guard = _pg_lock if db.dialect == "postgresql" else _sqlite_rebuild_safe
        with guard(conn):
            config.attributes["connection"] = conn
            step(config, revision)


@contextmanager
def _pg_lock(conn: Connection) -> Iterator[None]:
    conn.execute(text("SELECT pg_advisory_lock(:k)"), {"k": PG_MIGRATION_LOCK})
    conn.commit()
    try:
        yield
        conn.commit()
    finally:
        conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": PG_MIGRATION_LOCK})
        conn.commit()


@contextmanager
def _sqlite_rebuild_safe(conn: Connection) -> Iterator[None]:
    """Foreign keys off and one ``BEGIN IMMEDIATE`` transaction for the whole upgrade.

    A migration that rebuilds a table (SQLite cannot alter most of a table in place) drops
    the old one, and with foreign keys enforced that drop runs its ON DELETE CASCADE and
    empties the child tables. SQLite ignores ``PRAGMA foreign_keys`` inside a transaction,
    so it goes to the driver before the transaction starts. The write lock, taken before
    alembic reads the current revision, makes concurrent upgrades (``seojobs migrate`` next
    to a starting ``serve``) wait for each other instead of running the same steps twice;
    one transaction means a failed step leaves the database at the revision it had.
    """
    driver = conn.connection.driver_connection
    assert driver is not None
    driver.execute("PRAGMA foreign_keys=OFF")
    try:
        with conn.execution_options(seojobs_write=True).begin():
            yield
    finally:
        # The connection goes back to the pool: it must enforce foreign keys again.
        driver.execute("PRAGMA foreign_keys=ON")


def current_revision(db: Database) -> str | None:
    with db.engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


@functools.cache
def head_revision() -> str | None:
    # The scripts ship with the package and cannot change under a running process; reading
    # them on every /readyz was file I/O for nothing.
    return ScriptDirectory.from_config(alembic_config()).get_current_head()


def is_current(db: Database) -> bool:
    return current_revision(db) == head_revision()
