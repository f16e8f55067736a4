"""Scratch databases: PostgreSQL databases created and dropped on loopback, SQLite files in a
temp dir. Each schema is built once in a template and then copied for every burn-down, so every
run starts from a fresh database with the same schema."""

from __future__ import annotations

import secrets
import shutil
import sqlite3
import tempfile
from pathlib import Path
from types import TracebackType

import psycopg
from psycopg import sql

PG_HOST = "127.0.0.1"
PG_PORT = 5432
PG_USER = "postgres"


def pg_conninfo(dbname: str) -> str:
    return f"host={PG_HOST} port={PG_PORT} user={PG_USER} dbname={dbname}"


def pg_url(dbname: str) -> str:
    return f"postgresql://{PG_USER}@{PG_HOST}:{PG_PORT}/{dbname}"


class ScratchPostgres:
    """Creates databases named ``<prefix>_<run>_<n>`` and drops every one of them on exit."""

    def __init__(self) -> None:
        self.run_id = secrets.token_hex(4)
        self.created: list[str] = []
        self._admin: psycopg.Connection[tuple[object, ...]] | None = None
        self._counter = 0

    def __enter__(self) -> ScratchPostgres:
        self._admin = psycopg.connect(pg_conninfo("postgres"), autocommit=True)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        for name in reversed(self.created):
            self.drop(name)
        if self._admin is not None:
            self._admin.close()

    @property
    def admin(self) -> psycopg.Connection[tuple[object, ...]]:
        assert self._admin is not None, "use ScratchPostgres as a context manager"
        return self._admin

    def server_version(self) -> str:
        row = self.admin.execute("SHOW server_version").fetchone()
        return str(row[0]) if row else "?"

    def create(self, prefix: str, template: str | None = None) -> str:
        self._counter += 1
        name = f"{prefix}_{self.run_id}_{self._counter}"
        stmt = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
        if template is not None:
            stmt = sql.SQL("{} TEMPLATE {}").format(stmt, sql.Identifier(template))
        self.admin.execute(stmt)
        self.created.append(name)
        return name

    def drop(self, name: str) -> None:
        self.admin.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )
        if name in self.created:
            self.created.remove(name)


class ScratchSqlite:
    """A temp dir of SQLite files, removed on exit."""

    def __init__(self) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="seojobs_bench_")
        self.root = Path(self._tmp.name)
        self._counter = 0

    def __enter__(self) -> ScratchSqlite:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._tmp.cleanup()

    def new_path(self, prefix: str) -> Path:
        self._counter += 1
        return self.root / f"{prefix}_{self._counter}.db"

    def copy(self, template: Path, prefix: str) -> Path:
        """Copy a checkpointed template file (no -wal or -shm beside it)."""
        target = self.new_path(prefix)
        shutil.copyfile(template, target)
        return target

    def remove(self, path: Path) -> None:
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)


def sqlite_url(path: Path) -> str:
    return f"sqlite:///{path}"


def sqlite_checkpoint(path: Path) -> None:
    """Fold the WAL into the main file so the file alone is a complete copy."""
    con = sqlite3.connect(path, isolation_level=None)
    try:
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        con.execute("PRAGMA journal_mode=DELETE")
    finally:
        con.close()


def analyze_sqlite(path: Path) -> None:
    """Fresh planner statistics, and the WAL folded into the file."""
    con = sqlite3.connect(path, isolation_level=None)
    try:
        con.execute("ANALYZE")
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        con.close()


def vacuum_postgres(dbname: str, table: str | None = None) -> None:
    """``VACUUM ANALYZE`` of ``table``, or of the whole database."""
    statement: sql.SQL | sql.Composed = sql.SQL("VACUUM ANALYZE")
    if table is not None:
        statement = sql.SQL("VACUUM ANALYZE {}").format(sql.Identifier(table))
    with psycopg.connect(pg_conninfo(dbname), autocommit=True) as conn:
        conn.execute(statement)
