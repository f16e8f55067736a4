"""A kind's own settings: its pydantic-settings model (``Kind.settings``), with its own
environment prefix (``SEOJOBS_RANK_CHECK_``, so ``SEOJOBS_RANK_CHECK_CONCURRENCY`` keeps the name
it had in the central settings), built once per worker and handed to its jobs as
``ctx.kind_settings``.

Values given to the central ``Settings`` by their full names (``Settings(
rank_check_concurrency=1)``, as tests and scripts build them) are the kind's too: they override
its environment, as keyword arguments override the environment for the central settings.
"""

from __future__ import annotations

from typing import Any

from pydantic_settings import BaseSettings

PREFIX = "seojobs_"


def overrides(model: type[BaseSettings], settings: Any) -> dict[str, Any]:
    """The values of ``model``'s fields given to the central settings under their full names."""
    prefix = str(model.model_config.get("env_prefix") or "").lower().removeprefix(PREFIX)
    given: dict[str, Any] = getattr(settings, "kind_overrides", None) or {}
    if not prefix:
        return {}
    found = {
        key.removeprefix(prefix): value for key, value in given.items() if key.startswith(prefix)
    }
    return {name: value for name, value in found.items() if name in model.model_fields}


def build(model: type[BaseSettings], settings: Any) -> BaseSettings:
    """The kind's settings: its environment, under what the central settings were given."""
    return model(**overrides(model, settings))
