"""The built-in kinds without plug-ins: the version directories of the tables they own (the
site audit's pages), which every migrated test database runs like ``seojobs migrate`` does.
Loading them also declares those tables with the store (``Kind.tables``)."""

from __future__ import annotations

from seojobs.kinds import load_registry
from seojobs.settings import Settings

REGISTRY = load_registry(Settings(database_url="sqlite://", plugins=[]))
MIGRATIONS = tuple(REGISTRY.migration_dirs())
