"""The database's clock, for what every process must agree on (issue 26): a job's lease, the
maintenance leader's lease, when a job may be claimed and when a schedule's tick is due.

Each process compares those times with its own clock, so a process whose clock runs ahead
took other workers' leases early (its "now" had passed their expiry) and fired schedules
before their ticks. ``DatabaseClock`` reads the database's time now and then (one statement
per heartbeat interval) and keeps this process's offset from it: ``clock()`` is then the
database's time, read without a round trip. Every worker on one database agrees within
the round trip of a reading, whatever its own clock says.

- **PostgreSQL:** ``clock_timestamp()``, the server's clock: one clock for every API and
  worker process on every machine.
- **SQLite:** ``strftime(…, 'now')``, which SQLite takes from the operating system of the
  process running the statement. Every process on one SQLite file runs on the machine that
  holds the file (SQLite over a network file system is unsupported), so they all read the
  same operating-system clock: the offset is 0 unless the process's own notion of time was
  made to differ (the tests' hook, ``SEOJOBS_TEST_CLOCK_SKEW_SECONDS``). A change of the
  machine's clock moves every process at once, as it moves PostgreSQL's for its processes.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from sqlalchemy import func, select, text

from seojobs.store.coltypes import utcnow
from seojobs.store.db import Connection, Database

# An offset smaller than this is taken as none: clocks kept by NTP agree within milliseconds,
# a reading's own error is about its round trip, and a job written a moment ago with another
# process's clock as its ``run_at`` must stay claimable at once (a worker whose "now" came out
# a fraction of a millisecond early would leave it to the next poll). Leases outlive a
# heartbeat by two thirds of their length, so a skew this small never takes one early.
TOLERANCE = timedelta(seconds=0.5)


def seconds_until(now: datetime, cap: float, *moments: datetime | None) -> float:
    """How long to sleep: ``cap`` (a fallback poll), or less until the soonest of ``moments``
    (None: not known), 0 when one has passed."""
    pause = cap
    for at in moments:
        if at is not None:
            pause = min(pause, max((at - now).total_seconds(), 0.0))
    return pause


_SQLITE_NOW = text("SELECT strftime('%Y-%m-%d %H:%M:%f', 'now')")
_PG_NOW = select(func.clock_timestamp())


def database_now(conn: Connection) -> datetime:
    """The database's time, timezone-aware UTC."""
    if conn.dialect.name == "postgresql":
        value = conn.execute(_PG_NOW).scalar_one()
        assert isinstance(value, datetime)
        return value.astimezone(UTC)
    return datetime.fromisoformat(str(conn.execute(_SQLITE_NOW).scalar_one())).replace(tzinfo=UTC)


class DatabaseClock:
    """A clock that reads like ``local`` moved by its last measured offset from the
    database's: call :meth:`sync` now and then (each call is one round trip)."""

    def __init__(self, db: Database, local: Callable[[], datetime] = utcnow) -> None:
        self.db = db
        self.local = local
        self.offset = timedelta(0)
        self.synced_at: float | None = None  # time.monotonic() of the last reading

    def __call__(self) -> datetime:
        return self.local() + self.offset

    def sync_unless_within(self, seconds: float) -> None:
        """:meth:`sync`, unless the last reading is less than ``seconds`` old."""
        if self.synced_at is None or time.monotonic() - self.synced_at >= seconds:
            self.sync()

    def sync(self, conn: Connection | None = None) -> timedelta:
        """Measure the offset again (the reading taken halfway through the round trip; under
        ``TOLERANCE``, none); returns it. On ``conn`` when given (the heartbeat's own, in its
        transaction), else in a read of its own."""
        if conn is None:
            with self.db.read() as own:
                return self.sync(own)
        before = self.local()
        theirs = database_now(conn)
        after = self.local()
        offset = theirs - (before + (after - before) / 2)
        self.offset = offset if abs(offset) >= TOLERANCE else timedelta(0)
        self.synced_at = time.monotonic()
        return self.offset
