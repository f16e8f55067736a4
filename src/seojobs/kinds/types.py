"""Field types shared by the kinds' params (and the API models that mirror them)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator


def _not_a_boolean(value: Any) -> Any:
    # pydantic reads true/false as 1/0 for an int field; JSON Schema's "integer" does not.
    if isinstance(value, bool):
        raise ValueError("must be a number, not true or false")
    return value


Int = Annotated[int, BeforeValidator(_not_a_boolean)]
"""A whole number: what JSON Schema calls ``integer`` (a boolean is not one)."""
Number = Annotated[float, BeforeValidator(_not_a_boolean)]
"""What JSON Schema calls ``number`` (a boolean is not one)."""
