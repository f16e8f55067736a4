"""rfc3339 writes a UTC moment one way, whatever its tzinfo (its UTC shortcut included)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from seojobs.timefmt import rfc3339

MOMENTS = [
    (datetime(2026, 12, 1, 19, 40, 51, tzinfo=UTC), "2026-12-01T19:40:51Z"),
    (datetime(2026, 12, 1, 19, 40, 51, 120000, tzinfo=UTC), "2026-12-01T19:40:51.120000Z"),
    (datetime.fromisoformat("2026-12-01 19:40:51.000001+00:00"), "2026-12-01T19:40:51.000001Z"),
    (datetime(1, 1, 1, tzinfo=UTC), "0001-01-01T00:00:00Z"),
    (datetime(2026, 12, 1, 19, 40, 51), "2026-12-01T19:40:51Z"),  # naive: UTC
    (
        datetime(2026, 12, 1, 20, 40, 51, tzinfo=timezone(timedelta(hours=1))),
        "2026-12-01T19:40:51Z",
    ),
    (
        datetime(2026, 12, 1, 19, 40, 51, 5, tzinfo=timezone(timedelta(0))),
        "2026-12-01T19:40:51.000005Z",
    ),
]


@pytest.mark.parametrize(("moment", "text"), MOMENTS)
def test_one_spelling(moment: datetime, text: str) -> None:
    assert rfc3339(moment) == text
