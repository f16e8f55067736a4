"""Whole numbers a client spells in a path, a query string or a body: ids, cursors, pages,
limits, v2 task ids. One parser for all of them.

Only ASCII digits, within the field's range. ``str.isdigit()`` is true of other scripts' digits
(``٣``, fullwidth U+FF11) and of superscripts (``²``, which ``int()`` then refuses); ``int()``
takes those digits, signs, spaces and underscores, and raises ValueError past 4,300 digits;
pydantic's lax int takes ``+5``, `` 5`` and ``1_000``. Each of those answered 500 or reached
the database as an id nobody wrote. A JSON number with an integral value (``5.0``) is the
integer it equals, as JSON Schema says.
"""

from __future__ import annotations

import functools
from typing import Final

from pydantic import BeforeValidator

from seojobs.api.problems import invalid
from seojobs.fielderrors import shown

MAX_ID: Final = 2**63 - 1  # the database's BIGINT


def whole_number(value: object, lo: int, hi: int) -> int:
    """``value`` (an int, an integral float such as ``900.0``, or a string of ASCII digits)
    as an int in ``lo..hi``; else ``ValueError`` saying what is expected (pydantic reports it
    against the field)."""
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, float) and value.is_integer():
        number = int(value)  # 900.0 (never inf or nan: they are not integral)
    elif isinstance(value, str) and value.isascii() and value.isdigit():
        digits = value.lstrip("0") or "0"
        if len(digits) > len(str(hi)):  # before int(): it refuses over 4,300 digits
            raise _not_whole(lo, hi)
        number = int(digits)
    else:
        raise _not_whole(lo, hi)
    if not lo <= number <= hi:
        raise _not_whole(lo, hi)
    return number


def _not_whole(lo: int, hi: int) -> ValueError:
    return ValueError(f"a whole number from {lo} to {hi} in ASCII digits")


def parse_id(value: object) -> int:
    return whole_number(value, 1, MAX_ID)


def digits(lo: int, hi: int) -> BeforeValidator:
    """For ``Annotated[int, Path(...) or Query(...), digits(lo, hi)]``: put it after the
    parameter marker, so the OpenAPI schema keeps ``minimum`` and ``maximum``."""
    return BeforeValidator(functools.partial(whole_number, lo=lo, hi=hi))


IdDigits: Final = digits(1, MAX_ID)


def parse_cursor(
    cursor: str | None, *, lo: int = 1, hi: int = MAX_ID, field: str = "cursor"
) -> int | None:
    """A list's ``cursor`` (the ``next_cursor`` of the previous page), or None."""
    if cursor is None:
        return None
    try:
        return whole_number(cursor, lo, hi)
    except ValueError:
        raise invalid(
            field, f"use the next_cursor of a previous page (got {shown(cursor)})"
        ) from None


def parse_ids(ids: str | None, *, most: int, field: str = "ids") -> list[int] | None:
    """Comma-separated ids (empty parts are skipped), at most ``most`` of them, or None."""
    if ids is None:
        return None
    parts = [part for part in ids.split(",") if part]
    if len(parts) > most:
        raise invalid(field, f"at most {most} ids (got {len(parts)})")
    found: list[int] = []
    bad: list[str] = []
    for part in parts:
        try:
            found.append(parse_id(part))
        except ValueError:
            bad.append(part)
    if bad:  # the first few bad ones, as sent
        listed = ", ".join(shown(part) for part in bad[:5])
        if len(bad) > 5:
            listed += f" and {len(bad) - 5} more"
        raise invalid(field, f"comma-separated whole numbers 1 to {MAX_ID} (got {listed})")
    return found


def _at_most(hi: str) -> list[str]:
    """Alternatives matching the digit strings (no leading zero) of the numbers 1..``hi``."""
    shorter = [f"[1-9][0-9]{{0,{len(hi) - 2}}}"] if len(hi) > 1 else []
    same: list[str] = []
    for i, digit in enumerate(hi):
        low = "1" if i == 0 else "0"
        if int(digit) > int(low):
            rest = len(hi) - i - 1
            tail = f"[0-9]{{{rest}}}" if rest else ""
            same.append(f"{hi[:i]}[{low}-{int(digit) - 1}]{tail}")
    return shorter + same + [hi]


def digits_pattern(lo: int, hi: int) -> str:
    """The regex (unanchored) of what ``whole_number`` takes as a string in ``lo..hi``
    (``lo`` 0 or 1): leading zeros included, so a schema-valid value is never refused."""
    if lo not in (0, 1):
        raise ValueError("lo must be 0 or 1")
    number = "|".join(_at_most(str(hi)))
    return f"0*(?:{number})" if lo == 1 else f"(?:0*(?:{number})|0+)"


def id_list_pattern(most: int) -> str:
    """The regex of ``parse_ids``: up to ``most`` ids between commas (empty parts skipped)."""
    one = digits_pattern(1, MAX_ID)
    return f"^,*(?:{one}(?:,+{one}){{0,{most - 1}}})?,*$"
