"""How the suite is ordered and marked for ``pytest -n N --dist loadgroup`` (scripts/test).

- Tests that share a module-scoped fixture (a server per store, a browser) form one group, so
  one worker sets it up once, instead of every worker setting it up again each time its next
  test comes from another module.
- The longest work goes first: a long test started last is what the whole run waits for.
  xdist hands work out in collection order (with ``--no-loadscope-reorder``), so the collection
  is sorted by an estimate of each unit's length, longest first.
- ``slow``: what the inner loop (``-m "not slow"``) leaves to CI: real processes and the
  browser (tests/e2e, tests/browser), the PostgreSQL cases (the same tests run on SQLite), and
  tests marked ``slow`` in their modules.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
# Seconds, roughly, on the 2-core machine: only the order they give matters.
_FOLDER_COST = {"unit": 0.01, "integration": 1.0, "e2e": 6.0, "browser": 10.0}
_SLOW_COST = 20.0
_POSTGRES_FACTOR = 1.5
_SLOW_FOLDERS = ("e2e", "browser")


def _folder(item: pytest.Item) -> str:
    relative = item.path.resolve().relative_to(TESTS)
    return relative.parts[0] if len(relative.parts) > 1 else ""


def _on_postgres(item: pytest.Item) -> bool:
    callspec = getattr(item, "callspec", None)
    return callspec is not None and "postgresql" in callspec.params.values()


def _cost(item: pytest.Item) -> float:
    cost = _FOLDER_COST.get(_folder(item), 1.0)
    if item.get_closest_marker("slow"):
        cost = max(cost, _SLOW_COST)
    return cost * (_POSTGRES_FACTOR if _on_postgres(item) else 1.0)


def _group(item: pytest.Item) -> str | None:
    """The module and module-scoped parameters of the module-scoped fixtures ``item`` uses."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return None
    scoped = [
        name
        for name in item.fixturenames
        if (defs := info.name2fixturedefs.get(name)) and defs[-1].scope in ("module", "class")
    ]
    if not scoped:
        return None
    callspec = getattr(item, "callspec", None)
    params = [str(callspec.params[name]) for name in scoped if callspec and name in callspec.params]
    return "-".join([item.nodeid.split("::")[0], *params])


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups into the node ids
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    units: dict[str, list[pytest.Item]] = defaultdict(list)
    for item in items:
        group = _group(item)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
        units[group or item.nodeid].append(item)
    ordered = sorted(units.values(), key=lambda unit: -sum(map(_cost, unit)))
    items[:] = [item for unit in ordered for item in unit]
    for item in items:
        if _folder(item) in _SLOW_FOLDERS or _on_postgres(item):
            item.add_marker(pytest.mark.slow)
