"""The SQL statements a test's code sends, watched (not changed) through SQLAlchemy's events."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import event

from seojobs.store.db import Database


@contextmanager
def statements(db: Database) -> Iterator[list[str]]:
    """The SQL statements sent to the database within the block."""
    seen: list[str] = []

    def note(_conn, _cursor, statement, _params, _context, _many) -> None:  # type: ignore[no-untyped-def]
        seen.append(statement)

    event.listen(db.engine, "before_cursor_execute", note)
    try:
        yield seen
    finally:
        event.remove(db.engine, "before_cursor_execute", note)
