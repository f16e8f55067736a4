"""The one way a moment in time is written on the wire: RFC 3339 in UTC with ``Z``.

The same spelling pydantic gives a UTC ``datetime`` (seconds, then microseconds only when
there are any), so hand-built bodies and model-built bodies agree byte for byte.
"""

from __future__ import annotations

from datetime import UTC, datetime


def rfc3339(moment: datetime) -> str:
    """``2026-12-01T19:40:51Z`` or ``2026-12-01T19:40:51.120000Z``; naive means UTC."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).replace(tzinfo=None).isoformat() + "Z"


def rfc3339_or_none(moment: datetime | None) -> str | None:
    return None if moment is None else rfc3339(moment)
