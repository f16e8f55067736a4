"""Google's rich-result requirements on JSON-LD: every type with all its properties is
clean; without each required (or recommended) property, a finding names the item and the
property; items are found nested and in @graph; a hostile block stays bounded."""

from __future__ import annotations

import json
from typing import Any

import pytest

from seojobs.kinds.site_audit.checks import page_findings
from seojobs.kinds.site_audit.page import parse_page
from seojobs.kinds.site_audit.params import Thresholds
from seojobs.kinds.site_audit.richresults import MAX_NODES, RICH_TYPES, missing
from tests.unit.test_site_audit_checks import _page, html


def _complete(kind: str) -> dict[str, Any]:
    required, recommended = RICH_TYPES[kind]
    node: dict[str, Any] = {"@type": kind}
    for names in (*required, *recommended):
        node[names.split("|")[0]] = "x"
    return node


def _codes_of(blocks: list[Any]) -> dict[str, list[Any]]:
    """Each code's evidences: one finding per item and property (issue 30.2)."""
    scripts = "".join(
        f'<script type="application/ld+json">{json.dumps(b)}</script>' for b in blocks
    )
    page = _page(html("rich", head=scripts))
    found: dict[str, list[Any]] = {}
    for f in page_findings(page, Thresholds()):
        found.setdefault(f.code, []).append(f.data["evidence"])
    return found


@pytest.mark.parametrize("kind", sorted(RICH_TYPES))
def test_a_complete_item_is_clean(kind: str) -> None:
    assert missing([{"@context": "https://schema.org", **_complete(kind)}]) == ([], [])


@pytest.mark.parametrize(
    ("kind", "prop", "which"),
    [
        (kind, names, which)
        for kind, lists in sorted(RICH_TYPES.items())
        for which, names_list in enumerate(lists)
        for names in names_list
    ],
)
def test_each_missing_property_is_named(kind: str, prop: str, which: int) -> None:
    node = {**_complete(kind), "name": "The item"}
    del node[prop.split("|")[0]]
    item = "block 1" if prop == "name" else "block 1 (The item)"
    found = missing([{"@context": "https://schema.org", **node}])
    assert found[which] == [{"type": kind, "item": item, "property": prop}]
    assert found[1 - which] == []


def test_items_are_found_nested_and_in_graphs_and_reported_per_page() -> None:
    product = {**_complete("Product"), "offers": {"@type": "Offer", "priceCurrency": "EUR"}}
    blocks = [{"@context": "https://schema.org", "@graph": [product, {"@type": "Event"}]}]
    evidence = _codes_of(blocks)
    required = evidence["rich_result_required_missing"]
    assert {
        "syntax": "json-ld",
        "type": "Offer",
        "item": "block 1.@graph[0].offers",
        "property": "price|priceSpecification",
    } in required
    assert {(m["type"], m["property"]) for m in required if m["type"] == "Event"} == {
        ("Event", "name"),
        ("Event", "startDate"),
        ("Event", "location"),
    }
    assert "availability" in {m["property"] for m in evidence["rich_result_recommended_missing"]}
    # A page without rich-result types has neither finding.
    assert "rich_result_required_missing" not in _codes_of([{"@context": "x", "@type": "Thing"}])


def test_a_hostile_block_is_walked_within_bounds() -> None:
    wide = [{"@type": "Event"} for _ in range(MAX_NODES * 4)]
    required, _recommended = missing([wide])
    assert len(required) == 3 * MAX_NODES
    facts = parse_page(html("x"))
    assert facts.json_ld == [] or isinstance(facts.json_ld, list)
