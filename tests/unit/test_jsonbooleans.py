"""Where a JSON Schema admits a value only as a number, a boolean is found, at any depth,
through references, unions, arrays and maps; where any alternative takes a boolean, or a
number cannot appear at all, nothing is."""

from __future__ import annotations

from typing import Any

from seojobs.jsonbooleans import Schema, booleans_as_numbers

NUMBER = {"type": "number"}
INTEGER = {"type": "integer", "minimum": 1}


def obj(**properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties}


def test_a_boolean_where_only_a_number_fits_is_found() -> None:
    assert booleans_as_numbers(True, NUMBER) == [()]
    assert booleans_as_numbers(False, INTEGER) == [()]
    assert booleans_as_numbers(1, INTEGER) == []
    assert booleans_as_numbers(True, {"type": ["integer", "boolean"]}) == []
    assert booleans_as_numbers(True, {"type": "string"}) == []  # refused by the model as a string
    assert booleans_as_numbers(True, {}) == []  # anything goes


def test_unions_refuse_only_when_no_alternative_takes_a_boolean() -> None:
    optional = {"anyOf": [INTEGER, {"type": "null"}]}
    assert booleans_as_numbers(True, optional) == [()]
    assert booleans_as_numbers(True, {"anyOf": [INTEGER, {"type": "string"}]}) == [()]
    assert booleans_as_numbers(True, {"anyOf": [INTEGER, {"type": "boolean"}]}) == []
    assert booleans_as_numbers(True, {"oneOf": [INTEGER, {}]}) == []


def test_objects_arrays_maps_and_references_are_walked() -> None:
    schema = {
        "$defs": {"Inner": obj(depth=INTEGER, name={"type": "string"})},
        **obj(
            inner={"$ref": "#/$defs/Inner"},
            list={"type": "array", "items": NUMBER},
            pair={"type": "array", "prefixItems": [{"type": "string"}, NUMBER]},
            map={"type": "object", "additionalProperties": NUMBER},
        ),
    }
    document = {
        "inner": {"depth": True, "name": "x"},
        "list": [1, False, 2.5],
        "pair": ["a", True],
        "map": {"a": 1, "b": True},
        "unknown": True,
    }
    assert booleans_as_numbers(document, schema) == [
        ("inner", "depth"),
        ("list", 1),
        ("map", "b"),
        ("pair", 1),
    ]


def test_an_openapi_documents_components_and_a_recursive_schema() -> None:
    components = {
        "Tree": obj(
            size=INTEGER, children={"type": "array", "items": {"$ref": "#/components/schemas/Tree"}}
        )
    }
    schema = Schema({"$ref": "#/components/schemas/Tree"}, components)
    tree = {"size": 1, "children": [{"size": True, "children": [{"size": False}]}]}
    assert schema.booleans_as_numbers(tree, ("body",)) == [
        ("body", "children", 0, "children", 0, "size"),
        ("body", "children", 0, "size"),
    ]


def test_parts_without_numbers_are_not_walked() -> None:
    schema = Schema(obj(urls={"type": "array", "items": {"type": "string"}}, n=INTEGER))
    urls = schema.root["properties"]["urls"]
    assert not schema.holds_numbers(urls)
    assert schema.booleans_as_numbers({"urls": [True] * 3, "n": 2}) == []
