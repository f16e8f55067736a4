"""Column types shared by both dialects."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import DateTime
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator

_from_iso = datetime.fromisoformat


class UTCDateTime(TypeDecorator[datetime]):
    """Timestamps are always timezone-aware UTC in Python.

    PostgreSQL stores ``timestamptz``; SQLite stores naive UTC text, which sorts and compares
    correctly because every value is written in the same format.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> Any:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to the store; use UTC-aware datetimes")
        value = value.astimezone(UTC)
        if dialect.name == "sqlite":
            return value.replace(tzinfo=None)
        return value

    def result_processor(self, dialect: Dialect, coltype: object) -> Any:
        """On SQLite, the stored text parsed straight to an aware datetime in one call: the
        generic path (parse, then ``replace(tzinfo=UTC)``) was the largest cost in reading a
        claimed batch of 500 jobs back (five timestamps a row; bench/queue.py, profiled)."""
        generic = super().result_processor(dialect, coltype)
        if dialect.name != "sqlite" or generic is None:
            return generic

        def process(value: Any) -> datetime | None:
            if value is None:
                return None
            if isinstance(value, str):
                try:
                    return _from_iso(value + "+00:00")
                except ValueError:
                    pass  # not the naive text this type writes: the generic path decides
            return generic(value)

        return process

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        assert isinstance(value, datetime)
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


# Tests' hook (issue 26): this process's clock that many seconds off, as on a machine whose
# clock is wrong. Read once, at import; unset (the only production value) it costs nothing.
_SKEW = timedelta(seconds=float(os.environ.get("SEOJOBS_TEST_CLOCK_SKEW_SECONDS") or 0))


def utcnow() -> datetime:
    """This process's clock. Decisions that several processes must agree on (leases,
    leadership, schedules) use the database's instead: ``seojobs.store.clock``."""
    if _SKEW:
        return datetime.now(UTC) + _SKEW
    return datetime.now(UTC)
