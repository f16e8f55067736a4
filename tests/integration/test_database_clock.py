"""The database's clock (store/clock.py), on both stores: a process whose own clock is off
reads the database's time through it, within the tolerance."""

from __future__ import annotations

from datetime import timedelta

from seojobs.store.clock import TOLERANCE, DatabaseClock, database_now
from seojobs.store.coltypes import utcnow
from seojobs.store.db import Database


def test_a_clock_five_minutes_ahead_reads_the_databases_time(db: Database) -> None:
    clock = DatabaseClock(db, lambda: utcnow() + timedelta(minutes=5))
    assert abs(clock() - utcnow() - timedelta(minutes=5)) < TOLERANCE  # before a reading
    offset = clock.sync()
    assert abs(offset + timedelta(minutes=5)) < TOLERANCE
    with db.read() as conn:
        theirs = database_now(conn)
    assert abs(clock() - theirs) < TOLERANCE


def test_an_offset_under_the_tolerance_is_none(db: Database) -> None:
    clock = DatabaseClock(db, lambda: utcnow() + TOLERANCE / 10)
    assert clock.sync() == timedelta(0)
