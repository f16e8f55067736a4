"""Kinds declare their provider roles: which adapters serve them per engine, in what order. The
provider table (``seojobs providers``) reads the roles from the registry, a plug-in's too; the
shipped orders are what they were, and the settings of old still reorder them."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from seojobs.engine.registry import Kind, Registry
from seojobs.engine.roles import ProviderRole
from seojobs.kinds import load_registry
from seojobs.kinds.provider_table import rows
from seojobs.settings import Settings

# The orders seojobs shipped in its settings before kinds declared them.
SHIPPED = {
    "submission": {"google": ["google_indexing"], "bing": ["indexnow"], "yandex": ["indexnow"]},
    "index checks": {
        "google": ["url_inspection", "serper", "serpapi", "dataforseo"],
        "bing": ["serpapi", "dataforseo"],
        "yandex": ["serpapi", "dataforseo"],
    },
    "keywords": {"google": ["dataforseo", "google_ads"]},
    "rank checks": {"google": ["serper", "dataforseo"]},
    "AI search": {"ai": ["openai", "perplexity", "gemini", "anthropic"]},
    "local rank checks": {"google_maps": ["serpapi", "dataforseo", "serper"]},  # issue 29.2
}
NOTHING_SET = Settings(plugins=[])


def test_the_kinds_declare_the_shipped_orders_and_the_table_lists_them_in_order() -> None:
    registry = load_registry(NOTHING_SET)
    roles = registry.provider_roles()
    assert {role.name: role.orders(NOTHING_SET) for role in roles} == SHIPPED
    table = [
        (row.role, row.engine, [name for name, _ok in row.order])
        for row in rows(NOTHING_SET, registry)
    ]
    expected = [
        (role, engine, order)
        for role, by in SHIPPED.items()
        for engine, order in sorted(by.items())
    ]
    assert table == expected
    assert all(row.uses is None for row in rows(NOTHING_SET, registry))  # no key set


ROLE_SETTINGS = [
    # (old name, the kind's own name, value, role, engine, order)
    (
        "SEOJOBS_SUBMIT_PROVIDERS",
        "SEOJOBS_INDEX_SUBMIT_PROVIDERS",
        '{"bing": ["indexnow"]}',
        "submission",
        "bing",
        ["indexnow"],
    ),
    (
        "SEOJOBS_CHECK_PROVIDERS",
        "SEOJOBS_INDEX_CHECK_PROVIDERS",
        '{"google": ["serpapi"]}',
        "index checks",
        "google",
        ["serpapi"],
    ),
    (
        "SEOJOBS_KEYWORD_PROVIDERS",
        "SEOJOBS_KEYWORD_RESEARCH_PROVIDERS",
        '{"google": ["google_ads"]}',
        "keywords",
        "google",
        ["google_ads"],
    ),
    (
        "SEOJOBS_RANK_PROVIDERS",
        "SEOJOBS_RANK_CHECK_PROVIDERS",
        '{"google": ["dataforseo"]}',
        "rank checks",
        "google",
        ["dataforseo"],
    ),
    (
        "SEOJOBS_GEO_PROVIDERS",
        "SEOJOBS_GEO_LOOKUP_PROVIDERS",
        '["perplexity"]',
        "AI search",
        "ai",
        ["perplexity"],
    ),
]


@pytest.mark.parametrize(("old", "new", "value", "role", "engine", "order"), ROLE_SETTINGS)
@pytest.mark.parametrize("named", ["old", "new"])
def test_the_settings_of_old_and_the_kinds_own_reorder_a_role(
    monkeypatch: pytest.MonkeyPatch,
    named: str,
    old: str,
    new: str,
    value: str,
    role: str,
    engine: str,
    order: list[str],
) -> None:
    monkeypatch.setenv(old if named == "old" else new, value)
    monkeypatch.setenv("SEOJOBS_SERPAPI_KEY", "k")  # a provider key, by its name of old
    monkeypatch.setenv("SEOJOBS_PERPLEXITY_API_KEY", "k")
    settings = Settings(plugins=[])
    found = {r.name: r for r in load_registry(settings).provider_roles()}[role]
    assert found.orders(settings) == {engine: order}
    assert found.env == new  # what messages and the docs name


class _Params(BaseModel):
    pass


async def _nothing(_ctx: object) -> None:
    return None


def test_a_plugin_kinds_role_is_in_the_table_with_its_setting() -> None:
    maps = ProviderRole("maps", "maps_providers", {"google": ("serpapi", "dataforseo")})
    registry = Registry()
    registry.add(Kind("local_pack", _Params, _nothing, providers=(maps,)))
    settings = Settings(plugins=[], serpapi_key="k")
    [row] = rows(settings, registry)
    assert (row.role, row.engine, row.uses) == ("maps", "google", "serpapi")
    assert row.order == (("serpapi", True), ("dataforseo", False))
    assert row.jobs(settings) == "run"
