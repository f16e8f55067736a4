"""The text rules (``seojobs.textrules``) as the services apply them: every door (API v1, v2,
projects API, dashboard, schedules, CLI through the API) gets the same ``Invalid`` naming the
field, before anything is stored or charged (issue 25.5)."""

from __future__ import annotations

from collections.abc import Callable

from seojobs.services.errors import Invalid
from seojobs.textrules import name, one_line, title_problem


def _checked(field: str, rule: Callable[[str], str], value: str) -> str:
    try:
        return rule(value)
    except ValueError as exc:
        raise Invalid(field, str(exc)) from None


def title(value: str | None) -> str | None:
    """A job's title as sent, or ``Invalid("title")``."""
    if value is None:
        return None
    problem = title_problem(value)
    if problem is not None:
        raise Invalid("title", problem)
    return value


def checked_name(value: str, field: str = "name") -> str:
    """A project or schedule name, trimmed, or ``Invalid(field)``."""
    return _checked(field, name, value)


def cron(value: str | None) -> str | None:
    """A cron expression is one line, like every other single-line text."""
    return None if value is None else _checked("cron", one_line, value)
