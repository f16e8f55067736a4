"""A kind's own settings: its pydantic-settings model (``Kind.settings``), with its own
environment prefix (``SEOJOBS_RANK_CHECK_``, so ``SEOJOBS_RANK_CHECK_CONCURRENCY`` keeps the name
it had in the central settings), built once per worker and handed to its jobs as
``ctx.kind_settings``.

Values given to the central ``Settings`` by their full names (``Settings(
rank_check_concurrency=1)``, as tests and scripts build them) are the kind's too: they override
its environment, as keyword arguments override the environment for the central settings.

A field that moved into a kind from the central settings keeps its old name: ``moved(new,
old)`` makes both its environment names (the kind's prefixed one first, which wins), and the
old name given to ``Settings`` (``Settings(check_diagnostics_only=True)``) reaches it too.
Code that holds only the central settings (the API's refusals, the CLI) reads a kind's with
``of(model, settings)``.
"""

from __future__ import annotations

from typing import Any

from pydantic import AliasChoices
from pydantic_settings import BaseSettings

PREFIX = "seojobs_"


def moved(new: str, old: str) -> AliasChoices:
    """A kind setting's environment names (``seojobs_`` included, any case): the kind's
    prefixed ``new`` one, then the ``old`` one it had in the central settings."""
    return AliasChoices(new.upper(), old.upper())


def _aliases(field: Any) -> list[str]:
    alias = field.validation_alias
    return [str(c) for c in alias.choices] if isinstance(alias, AliasChoices) else []


def overrides(model: type[BaseSettings], settings: Any) -> dict[str, Any]:
    """The values of ``model``'s fields given to the central settings under their full names
    (a moved field's new or old one), keyed as ``model`` takes them."""
    prefix = str(model.model_config.get("env_prefix") or "").lower().removeprefix(PREFIX)
    given: dict[str, Any] = getattr(settings, "kind_overrides", None) or {}
    if not prefix or not given:
        return {}
    found: dict[str, Any] = {}
    for name, field in model.model_fields.items():
        aliases = _aliases(field)
        names = [prefix + name, *(a.lower().removeprefix(PREFIX) for a in aliases)]
        value = next((given[n] for n in names if n in given), _MISSING)
        if value is not _MISSING:
            found[aliases[0] if aliases else name] = value
    return found


_MISSING = object()


def build(model: type[BaseSettings], settings: Any) -> BaseSettings:
    """The kind's settings: its environment, under what the central settings were given."""
    return model(**overrides(model, settings))


def of(model: type[BaseSettings], settings: Any) -> Any:
    """The kind's settings for these central settings, built once per settings object (the
    environment is read when they are first asked for, as a worker's are)."""
    built: dict[tuple[type[BaseSettings], int], BaseSettings] | None = getattr(
        settings, "kind_built", None
    )
    if built is None:
        return build(model, settings)
    key = (model, id(getattr(settings, "kind_overrides", None)))  # a copy given new values
    if key not in built:
        built[key] = build(model, settings)
    return built[key]
