"""Page rules about structured data in all three syntaxes (JSON-LD, microdata, RDFa):
Google's rich-result properties and schema.org's vocabulary, one finding per item and
property (issue 30.2)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from seojobs.kinds.site_audit import richresults, vocabulary
from seojobs.kinds.site_audit.check import SAMPLE, Check, Evidence, N, Rules, W, html
from seojobs.kinds.site_audit.page import PageFacts
from seojobs.kinds.site_audit.params import Thresholds

MAX_FINDINGS = SAMPLE * 5  # per page and check: a page of 500 bad items is not 500 findings
_CONTEXT = "https://schema.org"


def sources(f: PageFacts) -> Iterator[tuple[str, str, list[Any]]]:
    """(syntax, how its items are named, its items as parsed JSON-LD) for each syntax the
    page uses; microdata and RDFa items of other vocabularies than schema.org are left out."""
    if f.json_ld:
        good, _bad = f.json_ld_values()
        yield "json-ld", "block", good
    if f.items is not None:
        for syntax, items in (("microdata", f.items.microdata), ("rdfa", f.items.rdfa)):
            found = [{"@context": _CONTEXT, **i.as_json_ld()} for i in items if i.schema_org]
            if found:
                yield syntax, f"{syntax} item", found


def _each(test: Callable[[str, list[Any]], list[dict[str, str]]]) -> Callable[..., Evidence]:
    def rule(f: PageFacts, _t: Thresholds) -> Evidence:
        if not f.json_ld and f.items is None:
            return None  # most pages: no structured data at all
        found = [
            {"syntax": syntax, **lack}
            for syntax, label, values in sources(f)
            for lack in test(label, values)
        ]
        return found[:MAX_FINDINGS] or None

    return rule


def _rich(which: int) -> Callable[..., Evidence]:
    """One finding per rich-result item and missing property: 0 Google's required, 1 its
    recommended ones."""
    return _each(lambda label, values: richresults.missing(values, label)[which])


def _unknown(kind: str) -> Callable[..., Evidence]:
    def test(label: str, values: list[Any]) -> list[dict[str, str]]:
        return [u for u in vocabulary.unknown(values, label) if ("property" in u) == (kind == "p")]

    return _each(test)


def _stray(f: PageFacts, _t: Thresholds) -> Evidence:
    stray = f.items.stray_properties if f.items else []
    return {"itemprops": stray[:SAMPLE]} if stray else None


def _untyped(f: PageFacts, _t: Thresholds) -> Evidence:
    count = f.items.untyped_items if f.items else 0
    return {"items": count} if count else None


RULES: Rules = [
    (
        Check(
            "rich_result_required_missing",
            W,
            "A rich-result item (Product, Event, Recipe, ...) lacks a property Google requires.",
        ),
        html(_rich(0)),
    ),
    (
        Check(
            "rich_result_recommended_missing",
            N,
            "A rich-result item lacks a property Google recommends.",
        ),
        html(_rich(1)),
    ),
    (
        Check(
            "schema_type_unknown",
            W,
            "A structured data item names a type that schema.org does not define.",
        ),
        html(_unknown("t")),
    ),
    (
        Check(
            "schema_property_unknown",
            W,
            "A structured data item has a property that schema.org does not define for its type.",
        ),
        html(_unknown("p")),
    ),
    (
        Check(
            "microdata_property_outside_item",
            N,
            "A microdata itemprop outside any itemscope: no item has it.",
        ),
        html(_stray),
    ),
    (
        Check(
            "microdata_item_untyped",
            N,
            "A microdata itemscope without itemtype: search engines cannot tell what it is.",
        ),
        html(_untyped),
    ),
]
