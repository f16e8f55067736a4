"""Fixtures for end-to-end tests (the shared ones live in tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

from seojobs.store.db import Database
from tests.e2e.helpers import Spawner


@pytest.fixture
def spawn(tmp_path: Path) -> Iterator[Spawner]:
    """Start `seojobs` processes; every one is stopped and reaped at teardown."""
    spawner = Spawner(tmp_path)
    try:
        yield spawner
    finally:
        spawner.stop_all()


@pytest.fixture
def empty_pg_url(pg_url: str) -> str:
    """A PostgreSQL database with no schema at all (fails in CI when PostgreSQL is missing)."""
    db = Database(pg_url)
    try:
        with db.write() as conn:
            conn.execute(text("DROP SCHEMA public CASCADE"))
            conn.execute(text("CREATE SCHEMA public"))
    finally:
        db.dispose()
    return pg_url


@pytest.fixture
def fresh_sqlite_url(tmp_path: Path) -> str:
    """A SQLite file that does not exist yet."""
    return f"sqlite:///{tmp_path / 'fresh' / 'seojobs.db'}"
