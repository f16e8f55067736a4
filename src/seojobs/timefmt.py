"""The one way a moment in time is written on the wire: RFC 3339 in UTC with ``Z``.

The same spelling pydantic gives a UTC ``datetime`` (seconds, then microseconds only when
there are any), so hand-built bodies and model-built bodies agree byte for byte.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone
from typing import Annotated

from pydantic import BeforeValidator


def rfc3339(moment: datetime) -> str:
    """``2026-12-01T19:40:51Z`` or ``2026-12-01T19:40:51.120000Z``; naive means UTC."""
    if moment.tzinfo is UTC:  # what the store reads: "...+00:00" becomes "...Z" in one call
        return moment.isoformat()[:-6] + "Z"
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).replace(tzinfo=None).isoformat() + "Z"


def rfc3339_or_none(moment: datetime | None) -> str | None:
    return None if moment is None else rfc3339(moment)


# RFC 3339 section 5.6 date-time: the offset is required; "T" and "Z" may be lower case.
_DATE_TIME = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt]([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]+))?"
    r"(?:[Zz]|([+-])([0-9]{2}):([0-9]{2}))"
)
EXAMPLE = "2026-01-31T09:30:00Z"


def parse_rfc3339(text: str) -> datetime:
    """An RFC 3339 date-time as an aware UTC ``datetime`` (a leap second, ``:60``, is the
    next second); ``ValueError`` saying what is expected otherwise, also for a moment outside
    the years 1 to 9999 in UTC. Stricter than ``datetime.fromisoformat`` and pydantic, which
    take a missing offset, and pydantic Unix timestamps (``0.5``)."""
    found = _DATE_TIME.fullmatch(text)
    if found is None:
        raise ValueError(f"not an RFC 3339 date-time with an offset, such as {EXAMPLE}")
    year, month, day, hour, minute, second = (int(part) for part in found.groups()[:6])
    fraction, sign, offset_hours, offset_minutes = found.groups()[6:]
    micro = int((fraction or "0")[:6].ljust(6, "0"))
    try:
        offset = timedelta(hours=int(offset_hours or 0), minutes=int(offset_minutes or 0))
        if offset_hours is not None and (int(offset_hours) > 23 or int(offset_minutes) > 59):
            raise ValueError("offset out of range")
        zone = timezone(-offset if sign == "-" else offset)
        local = datetime(year, month, day, hour, minute, min(second, 59), micro, tzinfo=zone)
        return local.astimezone(UTC) + timedelta(seconds=second - min(second, 59))
    except (ValueError, OverflowError):
        raise ValueError(
            f"not a valid date and time between the years 1 and 9999 in UTC, such as {EXAMPLE}"
        ) from None


def _date_time(value: object) -> object:
    if isinstance(value, str):
        return parse_rfc3339(value)
    if isinstance(value, datetime):  # from Python callers, not from JSON
        return value
    raise ValueError(f"not an RFC 3339 date-time with an offset, such as {EXAMPLE}")


# A date-time a client sends (a query parameter, a body field): only what the OpenAPI
# ``format: date-time`` says, an RFC 3339 string; pydantic alone takes numbers (Unix time) and
# times without an offset.
DateTime = Annotated[datetime, BeforeValidator(_date_time)]
