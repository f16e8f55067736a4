"""A job's form, built from its type's params JSON Schema (what ``GET /v1/job-types`` serves):
strings are text boxes, numbers number boxes with their bounds, booleans check boxes, enums
drop-downs, arrays of strings a text area with one per line; any other shape is a JSON text
area. The form's answers become params again, for the services to validate."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, Final

PREFIX: Final = "p_"  # form field names: p_<param>, clear of csrf_token and type


@dataclass
class Field:
    name: str
    label: str
    widget: str  # text, number, checkbox, select, lines, json
    required: bool
    description: str = ""
    minimum: float | None = None
    maximum: float | None = None
    integer: bool = False
    options: list[Any] = field(default_factory=list)
    value: str = ""  # what the form shows (the default, or what was sent)
    checked: bool = False
    error: str | None = None

    @property
    def input_name(self) -> str:
        return PREFIX + self.name


def _resolve(schema: dict[str, Any], defs: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """The schema behind ``$ref``/``allOf`` wrappers and optional (``anyOf`` with null)
    unions, and whether null was allowed."""
    nullable = False
    for _ in range(5):
        if "$ref" in schema:
            schema = {**defs.get(schema["$ref"].rsplit("/", 1)[-1], {}), **_outer(schema)}
        elif len(schema.get("allOf", ())) == 1:
            schema = {**schema["allOf"][0], **_outer(schema)}
        elif "anyOf" in schema:
            others = [s for s in schema["anyOf"] if s.get("type") != "null"]
            if len(others) != 1:
                break
            nullable = nullable or len(others) < len(schema["anyOf"])
            schema = {**others[0], **_outer(schema)}
        else:
            break
    return schema, nullable


def _outer(schema: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in schema.items() if k in ("default", "description", "title")}


def fields(schema: dict[str, Any]) -> list[Field]:
    """The form's fields, in the schema's order."""
    defs = schema.get("$defs", {})
    required = set(schema.get("required", ()))
    found = []
    for name, raw in schema.get("properties", {}).items():
        spec, _nullable = _resolve(raw, defs)
        made = Field(
            name=name,
            label=str(spec.get("title") or name),
            widget=_widget(spec, defs),
            required=name in required,
            description=str(spec.get("description", "")),
        )
        kind = spec.get("type")
        if made.widget == "number":
            made.integer = kind == "integer"
            made.minimum = spec.get("minimum", spec.get("exclusiveMinimum"))
            made.maximum = spec.get("maximum", spec.get("exclusiveMaximum"))
        if made.widget == "select":
            made.options = list(spec["enum"])
        _show_default(made, spec.get("default"))
        found.append(made)
    return found


def _widget(spec: dict[str, Any], defs: dict[str, Any]) -> str:
    kind = spec.get("type")
    if "enum" in spec:
        return "select"
    if kind == "boolean":
        return "checkbox"
    if kind in ("integer", "number"):
        return "number"
    if kind == "string":
        return "text"
    if kind == "array" and isinstance(spec.get("items"), dict):
        items, _ = _resolve(spec["items"], defs)
        if items.get("type") == "string":
            return "lines"
    return "json"


def _show_default(made: Field, default: Any) -> None:
    if default is None:
        return
    if made.widget == "checkbox":
        made.checked = bool(default)
    elif made.widget == "lines" and isinstance(default, list):
        made.value = "\n".join(str(v) for v in default)
    elif made.widget == "json":
        made.value = json.dumps(default)
    else:
        made.value = str(default)


def read(form_fields: list[Field], form: dict[str, str]) -> tuple[dict[str, Any], bool]:
    """The params the form's answers give, and whether all of them could be read. Each field
    keeps what was sent (shown again on an error); an unreadable one gets its ``error``."""
    params: dict[str, Any] = {}
    for made in form_fields:
        sent = form.get(made.input_name, "")
        made.value = sent
        if made.widget == "checkbox":
            made.checked = sent == "true"
            params[made.name] = made.checked
            continue
        if not sent.strip() and not made.required:
            continue  # the type's default
        try:
            params[made.name] = _value(made, sent)
        except ValueError as exc:
            made.error = f"{made.name}: {exc}"
    return params, all(f.error is None for f in form_fields)


def _value(made: Field, sent: str) -> Any:
    if made.widget == "number":
        try:
            number = int(sent) if made.integer else float(sent)
        except ValueError:
            number = math.nan
        if not math.isfinite(number):
            raise ValueError("must be a whole number" if made.integer else "must be a number")
        return number
    if made.widget == "select":
        for option in made.options:
            if str(option) == sent:
                return option
        raise ValueError(f"must be one of {', '.join(map(str, made.options))}")
    if made.widget == "lines":
        return [line.strip() for line in sent.splitlines() if line.strip()]
    if made.widget == "json":
        try:
            return json.loads(sent)
        except json.JSONDecodeError as exc:
            raise ValueError(f"is not valid JSON ({exc.msg}, line {exc.lineno})") from None
    return sent
