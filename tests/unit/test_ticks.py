"""Schedule tick arithmetic (no database)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from seojobs.engine.maintenance import first_tick, latest_due_tick
from seojobs.records import ScheduleRecord

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def schedule(**kw: object) -> ScheduleRecord:
    values: dict[str, object] = {
        "id": 1,
        "project_id": 1,
        "name": "s",
        "kind": "k",
        "params": {},
        "interval_seconds": None,
        "cron": None,
        "start_at": T0,
        "next_tick_at": T0,
        "enabled": True,
        "created_at": T0,
    }
    values.update(kw)
    return ScheduleRecord(**values)  # type: ignore[arg-type]


def test_interval_due_now() -> None:
    s = schedule(interval_seconds=60.0)
    assert latest_due_tick(s, T0 + timedelta(seconds=1)) == (T0, T0 + timedelta(seconds=60))


def test_interval_skips_missed_ticks_to_the_latest() -> None:
    s = schedule(interval_seconds=60.0)
    tick, following = latest_due_tick(s, T0 + timedelta(seconds=185))
    assert tick == T0 + timedelta(seconds=180)
    assert following == T0 + timedelta(seconds=240)


def test_cron_first_tick_and_catch_up() -> None:
    first = first_tick(interval_seconds=None, cron="0 3 * * *", start_at=T0)
    assert first == T0 + timedelta(hours=3)
    s = schedule(cron="0 3 * * *", next_tick_at=first)
    tick, following = latest_due_tick(s, T0 + timedelta(days=2, hours=5))
    assert tick == T0 + timedelta(days=2, hours=3)
    assert following == T0 + timedelta(days=3, hours=3)


def test_cron_on_the_tick_itself() -> None:
    assert first_tick(interval_seconds=None, cron="0 0 * * *", start_at=T0) == T0
