"""Job kinds: one module per job type. ``load_registry`` gathers built-ins and plug-ins."""

from __future__ import annotations

from seojobs.engine.registry import Registry
from seojobs.settings import Settings


def load_registry(settings: Settings) -> Registry:
    registry = Registry()
    # Built-in kinds register here as they are added (index_submit, index_check, ...).
    registry.load_plugins(settings.plugins)
    return registry
