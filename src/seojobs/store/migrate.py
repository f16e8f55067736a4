"""Create or upgrade the schema with Alembic (``seojobs migrate``)."""

from __future__ import annotations

import functools
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import text

from seojobs.store.db import Database

MIGRATIONS = Path(__file__).parent / "migrations"
# Any fixed 64-bit number: serialises concurrent `migrate` runs on one PostgreSQL database.
PG_MIGRATION_LOCK = 0x5E0_10B5


def alembic_config() -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    return config


def upgrade(db: Database, revision: str = "head") -> None:
    config = alembic_config()
    with db.engine.connect() as conn:
        if db.dialect == "postgresql":
            conn.execute(text("SELECT pg_advisory_lock(:k)"), {"k": PG_MIGRATION_LOCK})
            conn.commit()
        try:
            config.attributes["connection"] = conn
            command.upgrade(config, revision)
            conn.commit()
        finally:
            if db.dialect == "postgresql":
                conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": PG_MIGRATION_LOCK})
                conn.commit()


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
