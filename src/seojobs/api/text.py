"""Single-line text a client sends (job titles, project and schedule names, cron expressions):
the rules of ``seojobs.textrules`` as the API's models declare them (for the OpenAPI document and
422 answers before any work). The services apply the same rules to every caller (issue 25.5).
v1 and v2 titles used to take CR and LF while the projects API refused them.
"""

from __future__ import annotations

from typing import Annotated, Final

from pydantic import AfterValidator, Field, StringConstraints

from seojobs.textrules import CONTROL as CONTROL
from seojobs.textrules import NAME_MAX, TITLE_MAX, name, one_line

# The same rule for the OpenAPI document; validation goes through one_line (a clearer message).
ONE_LINE_PATTERN: Final = r"^[^\u0000-\u001f\u007f-\u009f]*$"
_DOCUMENTED: Final = Field(json_schema_extra={"pattern": ONE_LINE_PATTERN})

Title = Annotated[
    str, StringConstraints(max_length=TITLE_MAX), _DOCUMENTED, AfterValidator(one_line)
]
# croniter takes "0 3 * * *\n" and tabs between fields; what is stored is shown as sent.
Cron = Annotated[str, StringConstraints(max_length=200), _DOCUMENTED, AfterValidator(one_line)]
# Names lose the ASCII whitespace around them (a newline pasted with a name is not part of it),
# and then are more than spaces and without control characters, as the pattern says.
_SPACES: Final = r"[\t\n\v\f\r ]*"
NAME_PATTERN: Final = (
    rf"^{_SPACES}[^\u0000-\u001f\u007f-\u009f]*[^\u0000-\u0020\u007f-\u009f]"
    rf"[^\u0000-\u001f\u007f-\u009f]*{_SPACES}$"
)

Name = Annotated[
    str,
    StringConstraints(min_length=1, max_length=NAME_MAX),
    Field(json_schema_extra={"pattern": NAME_PATTERN}),
    AfterValidator(name),
]
