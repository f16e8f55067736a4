"""How the suite is ordered and marked for ``pytest -n N --dist loadgroup`` (scripts/test).

- Tests that share a module-scoped fixture (a server per store, a browser) form one group, so
  one worker sets it up once, instead of every worker setting it up again each time its next
  test comes from another module.
- The longest work goes first: a long test started last is what the whole run waits for.
  xdist hands work out in collection order (with ``--no-loadscope-reorder``), so the collection
  is sorted by an estimate of each unit's length, longest first.
- ``slow``: what the inner loop (``-m "not slow"``) leaves to CI: real processes and the
  browser (tests/e2e, tests/browser), the PostgreSQL cases (the same tests run on SQLite), the
  integration tests that start an app or a worker (each start costs a fraction of a second of
  CPU, hundreds of times over), the unit modules that take tens of seconds (``SLOW_UNIT``),
  and tests marked ``slow`` in their modules. The inner loop
  keeps the unit tests and the integration modules below the API that start neither
  (``INNER_LOOP``); a new integration module is left to CI until it is listed there.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
# Seconds, roughly, on the 2-core machine: only the order they give matters.
_FOLDER_COST = {"unit": 0.01, "integration": 1.0, "e2e": 6.0, "browser": 10.0}
_SLOW_COST = 20.0
_POSTGRES_FACTOR = 1.5
_SLOW_FOLDERS = ("e2e", "browser")
# Unit modules that take tens of seconds (generated examples, real clocks): left to CI, and
# started early there.
SLOW_UNIT = {"test_api_schema_patterns", "test_client_scheduler"}
# Integration modules in the inner loop: the store, the fetcher and the provider adapters
# against local fakes, without an app or a worker.
INNER_LOOP = {
    "test_cli_providers",
    "test_fastread",
    "test_fetch_client",
    "test_fetch_compression",
    "test_fetch_diagnostics",
    "test_fetch_guard",
    "test_fetch_http",
    "test_fetch_redirect_targets",
    "test_fetch_robots",
    "test_http_failures",
    "test_http_proxies",
    "test_kindrows",
    "test_maintenance",
    "test_provider_dataforseo",
    "test_provider_google_indexing",
    "test_provider_indexnow",
    "test_provider_rdap",
    "test_provider_serpapi",
    "test_provider_serper",
    "test_provider_url_inspection",
    "test_store_contract",
}


def _folder(item: pytest.Item) -> str:
    return _folder_of(item.path)


@functools.cache  # per module: resolving each item's path again was 0.25 CPU-s per collection
def _folder_of(path: Path) -> str:
    relative = path.resolve().relative_to(TESTS)
    return relative.parts[0] if len(relative.parts) > 1 else ""


def _on_postgres(item: pytest.Item) -> bool:
    callspec = getattr(item, "callspec", None)
    return callspec is not None and "postgresql" in callspec.params.values()


def _cost(item: pytest.Item) -> float:
    cost = _FOLDER_COST.get(_folder(item), 1.0)
    if item.get_closest_marker("slow") or item.path.stem in SLOW_UNIT:
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
        folder = _folder(item)
        left_to_ci = (folder == "integration" and item.path.stem not in INNER_LOOP) or (
            folder == "unit" and item.path.stem in SLOW_UNIT
        )
        if folder in _SLOW_FOLDERS or left_to_ci or _on_postgres(item):
            item.add_marker(pytest.mark.slow)


_GROUPS_LOST = pytest.StashKey[str]()


@pytest.hookimpl(trylast=True)  # after xdist has (or has not) renamed the grouped items
def pytest_collection_finish(session: pytest.Session) -> None:
    """``--dist loadgroup`` silently ignoring the groups fails every test, saying why: xdist
    marks a grouped test by appending ``@group`` to its node id, which a pytest that keeps node
    ids elsewhere (9.2) drops; each worker then sets up every module's shared server again."""
    if not getattr(session.config.option, "loadgroup", False):
        return  # not an xdist worker of a loadgroup run
    grouped = [item for item in session.items if item.get_closest_marker("xdist_group")]
    lost = [item.nodeid for item in grouped if "@" not in item.nodeid]
    if lost:
        session.config.stash[_GROUPS_LOST] = (
            f"--dist loadgroup ignores the xdist_group marks here ({len(lost)} of "
            f"{len(grouped)} grouped tests kept their node ids, e.g. {lost[0]}): "
            "this pytest and pytest-xdist do not work together (see pyproject.toml)"
        )


def pytest_runtest_setup(item: pytest.Item) -> None:
    lost = item.config.stash.get(_GROUPS_LOST, None)
    if lost is not None:
        pytest.fail(lost, pytrace=False)
