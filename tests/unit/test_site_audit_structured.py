"""Microdata and RDFa read into JSON-LD's shape, bounded on hostile markup; schema.org's
offline vocabulary (types, inherited properties); and the page rules over all three syntaxes,
one finding per item and property (issue 30.2)."""

from __future__ import annotations

import json
from typing import Any

from seojobs.kinds.site_audit import vocabulary
from seojobs.kinds.site_audit.checks import page_findings
from seojobs.kinds.site_audit.params import Thresholds
from seojobs.kinds.site_audit.structured import (
    MAX_ITEMS,
    MAX_OPEN,
    MAX_VALUE,
    has_items,
    parse_items,
)
from tests.unit.test_site_audit_checks import _page, html

PRODUCT = (
    '<div itemscope itemtype="https://schema.org/Product">'
    '<h1 itemprop="name">An <b>anvil</b></h1>'
    '<img itemprop="image" src="/anvil.png">'
    '<div itemprop="offers" itemscope itemtype="http://schema.org/Offer">'
    '<meta itemprop="price" content="9.99"><link itemprop="availability" '
    'href="https://schema.org/InStock"><time itemprop="priceValidUntil" datetime="2027-01-01">'
    "next year</time></div></div>"
)


def _found(body: str, head: str = "") -> dict[str, list[Any]]:
    found: dict[str, list[Any]] = {}
    for f in page_findings(_page(html("sd", head=head, body=body)), Thresholds()):
        found.setdefault(f.code, []).append(f.data["evidence"])
    return found


def test_microdata_items_nest_and_take_values_from_the_right_attribute() -> None:
    items = parse_items(PRODUCT)
    assert [i.as_json_ld() for i in items.microdata] == [
        {
            "@type": "Product",
            "name": "An anvil",
            "image": "/anvil.png",
            "offers": {
                "@type": "Offer",
                "price": "9.99",
                "availability": "https://schema.org/InStock",
                "priceValidUntil": "2027-01-01",
            },
        }
    ]
    assert items.microdata[0].schema_org and items.rdfa == []


def test_rdfa_lite_items_with_vocab_or_prefix() -> None:
    markup = (
        '<div vocab="https://schema.org/" typeof="Event"><span property="name">Gig</span>'
        '<div property="location" typeof="Place"><span property="name">Hall</span></div>'
        '<a property="url" href="/gig">here</a></div>'
        '<div typeof="schema:Person"><span property="schema:name">Ann</span></div>'
        '<div vocab="http://example.org/" typeof="Thing"><span property="name">x</span></div>'
        '<meta property="og:title" content="not an item">'
    )
    items = parse_items(markup)
    assert [i.as_json_ld() for i in items.rdfa] == [
        {
            "@type": "Event",
            "name": "Gig",
            "location": {"@type": "Place", "name": "Hall"},
            "url": "/gig",
        },
        {"@type": "Person", "name": "Ann"},
        {"@type": "Thing", "name": "x"},
    ]
    assert [i.schema_org for i in items.rdfa] == [True, True, False]


def test_strays_and_untyped_items_are_counted() -> None:
    items = parse_items('<span itemprop="name">x</span><div itemscope><b itemprop="a">y</b></div>')
    assert items.stray_properties == ["name"]
    assert items.untyped_items == 1
    assert not has_items("<p>plain</p>") and has_items(PRODUCT)


def test_hostile_markup_stays_bounded_and_never_raises() -> None:
    many = '<div itemscope itemtype="https://schema.org/Thing"></div>' * (MAX_ITEMS * 3)
    assert len(parse_items(many).microdata) == MAX_ITEMS
    long = '<div itemscope itemtype="https://schema.org/Thing"><div><div>'
    long += '<span itemprop="name">' + "z" * 100_000 + "</span>"
    assert len(parse_items(long).microdata[0].properties["name"][0]) == MAX_VALUE
    # Nesting past MAX_OPEN elements: what lies deeper is dropped, nothing raised.
    deep = '<div itemscope itemtype="https://schema.org/Thing">' + "<div>" * (MAX_OPEN + 10)
    deep += '<span itemprop="name">lost</span>'
    assert parse_items(deep).microdata[0].properties == {}
    for junk in ("<div itemscope itemtype=", "<<<>>>&#xffffffff;", "</div></span>" * 50):
        parse_items(junk)  # no exception


def test_the_vocabulary_knows_types_and_inherited_properties() -> None:
    assert vocabulary.known_type("Restaurant") and not vocabulary.known_type("GardenGadget")
    restaurant = vocabulary.properties_of("Restaurant")
    assert {"servesCuisine", "address", "name", "openingHoursSpecification"} <= restaurant
    assert "recipeIngredient" not in restaurant
    assert "recipeIngredient" in vocabulary.properties_of("Recipe")
    blocks = [{"@context": "https://schema.org", "@type": "Person", "name": "A", "colour": "x"}]
    assert list(vocabulary.unknown(blocks)) == [
        {"item": "block 1", "type": "Person", "property": "colour"}
    ]
    # Another vocabulary's terms are not schema.org's to judge.
    assert list(vocabulary.unknown([{"@context": "http://example.org", "@type": "Zz"}])) == []


def test_one_finding_per_item_and_property_in_every_syntax() -> None:
    rdfa = '<div vocab="https://schema.org/" typeof="Event"><span property="name">Gig</span></div>'
    found = _found(PRODUCT + rdfa)
    required = found["rich_result_required_missing"]
    # The microdata Product is complete; the RDFa Event lacks startDate and location.
    assert sorted((e["syntax"], e["type"], e["property"]) for e in required) == [
        ("rdfa", "Event", "location"),
        ("rdfa", "Event", "startDate"),
    ]
    assert {e["item"] for e in required} == {"rdfa item 1 (Gig)"}


def test_vocabulary_findings_name_the_item_and_the_term() -> None:
    head = '<script type="application/ld+json">{}</script>'.format(
        json.dumps({"@context": "https://schema.org", "@type": "GardenGadget", "name": "Trug"})
    )
    body = '<div itemscope itemtype="https://schema.org/Person"><i itemprop="colour">g</i></div>'
    found = _found(body, head)
    assert found["schema_type_unknown"] == [
        {"syntax": "json-ld", "item": "block 1", "type": "GardenGadget"}
    ]
    assert found["schema_property_unknown"] == [
        {"syntax": "microdata", "item": "microdata item 1", "type": "Person", "property": "colour"}
    ]
    clean = _found(PRODUCT)
    assert not {"schema_type_unknown", "schema_property_unknown"} & set(clean)
