"""Single-line text a client sends (job titles, project and schedule names, cron expressions):
one rule on every surface.

No control characters, C0 (U+0000-U+001F, so no CR, LF or tab either), DEL or C1
(U+007F-U+009F): these strings are shown in lists, CSV reports and terminals, where a line
break or an escape sequence would forge lines or rewrite the screen. v1 and v2 titles used to
take CR and LF while the projects API refused them.
"""

from __future__ import annotations

import re
from typing import Annotated, Final

from pydantic import AfterValidator, Field, StringConstraints

CONTROL: Final = re.compile("[\x00-\x1f\x7f-\x9f]")
# The same rule for the OpenAPI document; validation goes through one_line (a clearer message).
ONE_LINE_PATTERN: Final = r"^[^\u0000-\u001f\u007f-\u009f]*$"


def one_line(value: str) -> str:
    found = CONTROL.search(value)
    if found is not None:
        raise ValueError(
            f"control character U+{ord(found.group()):04X} at position {found.start()}; "
            "this text is one line without control characters"
        )
    return value


_DOCUMENTED: Final = Field(json_schema_extra={"pattern": ONE_LINE_PATTERN})

Title = Annotated[str, StringConstraints(max_length=500), _DOCUMENTED, AfterValidator(one_line)]
# croniter takes "0 3 * * *\n" and tabs between fields; what is stored is shown as sent.
Cron = Annotated[str, StringConstraints(max_length=200), _DOCUMENTED, AfterValidator(one_line)]
# Names lose the ASCII whitespace around them (a newline pasted with a name is not part of it),
# and then are more than spaces and without control characters, as the pattern says.
_AROUND: Final = " \t\n\v\f\r"
_SPACES: Final = r"[\t\n\v\f\r ]*"
NAME_PATTERN: Final = (
    rf"^{_SPACES}[^\u0000-\u001f\u007f-\u009f]*[^\u0000-\u0020\u007f-\u009f]"
    rf"[^\u0000-\u001f\u007f-\u009f]*{_SPACES}$"
)


def _name(value: str) -> str:
    name = one_line(value.strip(_AROUND))
    if not name:
        raise ValueError("blank; a name needs a character other than spaces")
    return name


Name = Annotated[
    str,
    StringConstraints(min_length=1, max_length=200),
    Field(json_schema_extra={"pattern": NAME_PATTERN}),
    AfterValidator(_name),
]
