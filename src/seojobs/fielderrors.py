"""What a refused field's message says, on every surface: what is wrong and the value that was
sent (truncated), without the validation library's prefixes ("Value error, ").

Pydantic's own message names the rule (``Input should be a valid string``) and a validator's
names its reason; neither shows the value, so a client with 10,000 URLs could not tell which
one was meant without counting. The value is shown as JSON (what the client wrote), cut at
:data:`SHOWN` characters, with anything that could not be encoded escaped and a URL's
credentials left out.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Final

from pydantic import ValidationError
from pydantic_core import PydanticCustomError

SHOWN: Final = 80
# Prefixes pydantic puts before a validator's own message.
_PREFIXES: Final = ("Value error, ", "Assertion failed, ")
_UNENCODABLE: Final = re.compile("[\ud800-\udfff]")
# A URL's user:password@ (after "//", before the path): never echoed.
_CREDENTIALS: Final = re.compile(r"(?<=//)[^/?#\s\"]*@")


def shown(value: Any) -> str:
    """``value`` as JSON, at most :data:`SHOWN` characters (an ellipsis marks a cut)."""
    text = json.dumps(value, ensure_ascii=False, default=repr)
    text = _UNENCODABLE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    text = _CREDENTIALS.sub("…@", text)
    return text if len(text) <= SHOWN else text[: SHOWN - 1] + "…"


def message(error: Mapping[str, Any]) -> str:
    """The message of one pydantic error (``ValidationError.errors()`` item): its reason, and
    the value unless the field is missing (pydantic's input is then the enclosing object)."""
    text = str(error.get("msg", "invalid"))
    for prefix in _PREFIXES:
        text = text.removeprefix(prefix)
    if "input" not in error or error.get("type") == "missing":
        return text
    return f"{text} (got {shown(error['input'])})"


def field_error(model: type[Any], field: str, message: str) -> ValidationError:
    """A ``ValidationError`` naming ``field`` of ``model`` with ``message``: what a model's own
    validator raises for a rule across fields (one of two given), so the error names the field
    a client should change, not the params as a whole."""
    error = PydanticCustomError("field", message)
    return ValidationError.from_exception_data(
        model.__name__, [{"type": error, "loc": (field,), "input": None}]
    )
