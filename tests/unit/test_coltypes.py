"""UTCDateTime reads back aware UTC datetimes on SQLite, through its one-call text path and
through the generic path for anything else."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from sqlalchemy import Column, Integer, MetaData, Table, create_engine, insert, select, text

from seojobs.store.coltypes import UTCDateTime


def test_sqlite_timestamps_round_trip_as_aware_utc() -> None:
    engine = create_engine("sqlite://")
    table = Table(
        "t", MetaData(), Column("id", Integer, primary_key=True), Column("at", UTCDateTime)
    )
    table.metadata.create_all(engine)
    east = datetime(2026, 12, 5, 12, 30, 1, 250, tzinfo=timezone(timedelta(hours=2)))
    with engine.begin() as conn:
        conn.execute(insert(table), [{"id": 1, "at": east}, {"id": 2, "at": None}])
        # Text this type never writes (an offset, no fraction) still reads back as UTC.
        conn.execute(text("INSERT INTO t VALUES (3, '2026-12-05 11:00:00+01:00')"))
        conn.execute(text("INSERT INTO t VALUES (4, '2026-12-05 10:00:00')"))
        got = dict(conn.execute(select(table.c.id, table.c.at)).all())
    assert got[1] == datetime(2026, 12, 5, 10, 30, 1, 250, tzinfo=UTC)
    assert got[1].tzinfo is UTC
    assert got[2] is None
    assert got[3] == datetime(2026, 12, 5, 10, 0, tzinfo=UTC)
    assert got[4] == datetime(2026, 12, 5, 10, 0, tzinfo=UTC)
    assert all(value.utcoffset() == timedelta(0) for value in (got[1], got[3], got[4]))
