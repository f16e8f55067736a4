"""Create or upgrade the schema with Alembic (``seojobs migrate``).

One migration chain: seojobs' own versions plus the version directories of kinds that own
tables (``Kind.migrations``), each such directory a branch that depends on a seojobs revision.

A database already at the scripts' heads (the usual case: every ``serve``, ``worker`` and
``users`` command checks) is recognised without Alembic: its version table is read and
compared with the heads the version files declare (:func:`script_heads`, read as source).
Alembic, a third of a CLI command's start, is imported only when there is work to do or the
quick answer is not certain.
"""

from __future__ import annotations

import ast
import functools
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import sqlalchemy as sa
from sqlalchemy import Connection, text

from seojobs.store.db import Database

if TYPE_CHECKING:
    from alembic.config import Config
    from alembic.script import ScriptDirectory

MIGRATIONS = Path(__file__).parent / "migrations"
# Any fixed 64-bit number: serialises concurrent `migrate` runs on one PostgreSQL database.
PG_MIGRATION_LOCK = 0x5E0_10B5


def alembic_config(extra: Sequence[str] = ()) -> Config:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("path_separator", "os")
    locations = [str(MIGRATIONS / "versions"), *(str(Path(p)) for p in extra)]
    config.set_main_option("version_locations", os.pathsep.join(locations))
    return config


def upgrade(db: Database, revision: str = "heads", extra: Sequence[str] = ()) -> None:
    if revision == "heads" and _at_heads(db, extra):
        return  # nothing to apply: alembic would open its context to find that out
    from alembic import command

    _run(db, command.upgrade, revision, extra)


def downgrade(db: Database, revision: str, extra: Sequence[str] = ()) -> None:
    from alembic import command

    _run(db, command.downgrade, revision, extra)


def _run(
    db: Database, step: Callable[[Config, str], None], revision: str, extra: Sequence[str]
) -> None:
    config = alembic_config(extra)
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


# Alembic's version table, read directly: a MigrationContext logs two INFO lines each time it
# is made, and /readyz asks on every probe.
_VERSIONS = sa.Table("alembic_version", sa.MetaData(), sa.Column("version_num", sa.String(32)))


def current_heads(db: Database) -> set[str]:
    with db.engine.connect() as conn:
        if not sa.inspect(conn).has_table(_VERSIONS.name):
            return set()
        return set(conn.execute(sa.select(_VERSIONS.c.version_num)).scalars())


_REVISION_FIELDS = ("revision", "down_revision", "depends_on")


def _declared(path: Path) -> dict[str, object] | None:
    """A version file's ``revision``, ``down_revision`` and ``depends_on``, read from its
    source as literals; None when one is missing or not a literal."""
    found: dict[str, object] = {}
    for node in ast.parse(path.read_text(encoding="utf-8"), str(path)).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        if isinstance(target, ast.Name) and target.id in _REVISION_FIELDS:
            try:
                found[target.id] = ast.literal_eval(value)
            except ValueError:
                return None
    return found if set(found) == set(_REVISION_FIELDS) else None


@functools.cache
def script_heads(extra: tuple[str, ...] = ()) -> frozenset[str] | None:
    """The heads of the migration chain (seojobs' versions and ``extra``), from the version
    files' source: the revisions no other revision names as its ``down_revision``. None when
    a file does not declare its revisions as plain literals (then only Alembic can say)."""
    revisions: set[str] = set()
    parents: set[str] = set()
    for folder in (MIGRATIONS / "versions", *(Path(p) for p in extra)):
        for path in sorted(Path(folder).glob("*.py")):
            if path.name.startswith("_"):
                continue
            declared = _declared(path)
            if declared is None or not isinstance(declared["revision"], str):
                return None
            revisions.add(declared["revision"])
            down = declared["down_revision"]
            if isinstance(down, str):
                parents.add(down)
            elif isinstance(down, tuple | list):
                parents.update(str(p) for p in down)
            elif down is not None:
                return None
    return frozenset(revisions - parents)


def _at_heads(db: Database, extra: Sequence[str]) -> bool:
    """Is the database's version table exactly the scripts' heads? (False when unsure.)"""
    heads = script_heads(tuple(extra))
    if not heads:
        return False
    return current_heads(db) == set(heads)


def _reached(script: ScriptDirectory, heads: set[str]) -> set[str]:
    """The revisions applied to a database at ``heads``: the heads, their ancestors and what
    they depend on (a plug-in branch that depends on a seojobs revision stands alone in the
    version table, with that revision implied)."""
    from alembic.util import CommandError

    seen: set[str] = set()
    todo = list(heads)
    while todo:
        revision = todo.pop()
        if revision in seen:
            continue
        seen.add(revision)
        try:
            found = script.get_revision(revision)
        except CommandError:  # a plug-in's revision, of a directory not given here
            found = None
        if found is None:
            continue
        for parents in (found.down_revision, found.dependencies):
            if isinstance(parents, str):
                todo.append(parents)
            elif parents:
                todo.extend(parents)
    return seen


def current_revision(db: Database, extra: Sequence[str] = ()) -> str | None:
    """seojobs' own revision that the database is at (``extra``: plug-ins' directories)."""
    own_heads = script_heads(())
    if own_heads and len(own_heads) == 1 and _at_heads(db, extra):
        return next(iter(own_heads))
    reached = _reached(_script(tuple(extra)), current_heads(db))
    own = [s.revision for s in _script(()).walk_revisions()]  # newest first
    return next((r for r in own if r in reached), None)


@functools.cache
def _script(extra: tuple[str, ...]) -> ScriptDirectory:
    # The scripts ship with the package (and the plug-ins) and cannot change under a running
    # process; reading them on every /readyz was file I/O for nothing.
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(alembic_config(extra))


def head_revision() -> str | None:
    heads = _script(()).get_heads()
    return sorted(heads)[0] if heads else None


def is_current(db: Database, extra: Sequence[str] = ()) -> bool:
    if _at_heads(db, extra):
        return True
    script = _script(tuple(extra))
    return set(script.get_heads()) <= _reached(script, current_heads(db))
