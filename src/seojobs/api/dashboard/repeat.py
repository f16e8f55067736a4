"""The "repeat on a schedule" part of a job form: a schedulable type's form can create a
collection schedule instead of one job (the same params, plus a name and either every N days
or a UTC cron expression). Read here; the services validate and store it as
``POST /v1/projects/{id}/schedules`` does."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from pydantic import TypeAdapter, ValidationError

from seojobs.api.text import Name

NAME: Final = TypeAdapter(Name)
FIELDS: Final = ("name", "every_days", "cron")
PREFIX: Final = "s_"  # form field names: s_name, s_every_days, s_cron


def checked_name(value: str) -> tuple[str, str | None]:
    """A name as the API takes it (trimmed), and why it cannot be one, naming the field (None
    when it can): project and schedule names alike."""
    try:
        return str(NAME.validate_python(value)), None
    except ValidationError as exc:
        return value, "name: " + "; ".join(str(e["msg"]) for e in exc.errors())


@dataclass
class Repeat:
    """What the form sent (``values``, shown again on a refusal), what it means, and the
    error of each field (``errors``: by field name, ``schedule`` for the pair of intervals)."""

    values: dict[str, str] = field(default_factory=lambda: dict.fromkeys(FIELDS, ""))
    errors: dict[str, str] = field(default_factory=dict)
    name: str = ""
    every_days: float | None = None
    cron: str | None = None

    @property
    def messages(self) -> list[str]:
        return list(self.errors.values())

    def refuse(self, name: str, message: str) -> str:
        """Mark ``name`` (one of FIELDS, else the interval pair) refused; the line to list."""
        key = name if name in FIELDS else "schedule"
        line = f"{name}: {message}"
        self.errors[key] = line if key not in self.errors else f"{self.errors[key]}; {line}"
        return line


def read(form: Mapping[str, str]) -> Repeat:
    """The schedule fields of ``form``; ``errors`` says what cannot be read."""
    repeat = Repeat(values={name: form.get(PREFIX + name, "") for name in FIELDS})
    repeat.name, error = checked_name(repeat.values["name"])
    if error is not None:
        repeat.errors["name"] = error
    days = repeat.values["every_days"].strip()
    if days:
        try:
            repeat.every_days = float(days)
        except ValueError:
            repeat.refuse("every_days", "must be a number of days, e.g. 1 or 0.5")
        else:
            if not math.isfinite(repeat.every_days):
                repeat.refuse("every_days", "must be a finite number of days")
    repeat.cron = repeat.values["cron"].strip() or None
    if not days and repeat.cron is None:
        repeat.refuse("schedule", "give every N days or a cron expression")
    elif days and repeat.cron is not None:
        repeat.refuse("schedule", "give every N days or a cron expression, not both")
    return repeat
