"""Job kinds: one module per job type. ``load_registry`` gathers built-ins and plug-ins."""

from __future__ import annotations

from pathlib import Path

from seojobs.engine.registry import Registry
from seojobs.settings import Settings

# The built-in kinds' own migration folders (their ``Kind.migrations``), known without loading
# the kinds: ``seojobs migrate`` and ``seojobs users`` need these and nothing else of them.
# tests/unit/test_registry.py checks them against load_registry's.
BUILTIN_MIGRATIONS = (str(Path(__file__).parent / "site_audit" / "migrations"),)


def migration_dirs(settings: Settings) -> list[str]:
    """Every kind's migration folders, as ``load_registry(settings).migration_dirs()``: the
    built-in kinds' from ``BUILTIN_MIGRATIONS``, the plug-ins' by registering them (loading
    the twelve built-in declarations cost such a command about a tenth of a CPU-second)."""
    plugins = Registry()
    plugins.load_plugins(settings.plugins)
    return [*BUILTIN_MIGRATIONS, *plugins.migration_dirs()]


def load_registry(settings: Settings) -> Registry:
    from seojobs.kinds import (
        backlink_analysis,
        backlink_refresh,
        domain_lookup,
        geo_lookup,
        index_check,
        index_submit,
        keyword_research,
        local_rank_check,
        rank_check,
        site_audit,
        tech_stack,
        web_vitals,
    )

    registry = Registry()
    registry.add(index_submit.KIND)
    registry.add(index_check.KIND)
    registry.add(site_audit.KIND)
    registry.add(domain_lookup.KIND)
    registry.add(tech_stack.KIND)
    registry.add(keyword_research.KIND)
    registry.add(rank_check.KIND)
    registry.add(web_vitals.KIND)
    registry.add(backlink_refresh.KIND)
    registry.add(geo_lookup.KIND)
    registry.add(backlink_analysis.KIND)
    registry.add(local_rank_check.KIND)
    registry.load_plugins(settings.plugins)
    return registry
