"""The rules for single-line text, whichever door it comes through (issue 25.5): job titles,
project and schedule names, cron expressions, a site audit's ``user_agent``.

No control characters, C0 (U+0000-U+001F, so no CR, LF or tab either), DEL or C1
(U+007F-U+009F): these strings are shown in lists, CSV reports and terminals, or sent as an
HTTP header, where a line break or an escape sequence would forge lines or rewrite the screen.
The API's models declare them for the OpenAPI document (``seojobs.api.text``); the services
apply them again, so the dashboard, schedules and every other caller get the same answer.
"""

from __future__ import annotations

import re
from typing import Final

CONTROL: Final = re.compile("[\x00-\x1f\x7f-\x9f]")
TITLE_MAX: Final = 500
NAME_MAX: Final = 200
# Names lose the ASCII whitespace around them (a newline pasted with a name is not part of it).
AROUND: Final = " \t\n\v\f\r"


def one_line(value: str) -> str:
    """``value`` unchanged, or ``ValueError`` naming the first control character."""
    found = CONTROL.search(value)
    if found is not None:
        raise ValueError(
            f"control character U+{ord(found.group()):04X} at position {found.start()}; "
            "this text is one line without control characters"
        )
    return value


def title_problem(value: str) -> str | None:
    """Why ``value`` cannot be a job title, or None."""
    if len(value) > TITLE_MAX:
        return f"at most {TITLE_MAX} characters"
    try:
        one_line(value)
    except ValueError as exc:
        return str(exc)
    return None


def name(value: str) -> str:
    """A project or schedule name as stored: trimmed, one line, not blank."""
    trimmed = one_line(value.strip(AROUND))
    if not trimmed:
        raise ValueError("blank; a name needs a character other than spaces")
    if len(trimmed) > NAME_MAX:
        raise ValueError(f"at most {NAME_MAX} characters")
    return trimmed
