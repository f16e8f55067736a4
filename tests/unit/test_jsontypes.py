"""Where a JSON Schema expects a number or a boolean, a value of another JSON type that pydantic
would convert (true -> 1, 0 -> false, "5" -> 5, "yes" -> true) is found, at any depth, through
references, unions, arrays and maps; where an alternative takes the value as it is, or nothing
convertible is expected, nothing is."""

from __future__ import annotations

from typing import Any

from seojobs.jsontypes import Schema, coercions

NUMBER = {"type": "number"}
INTEGER = {"type": "integer", "minimum": 1}
BOOLEAN = {"type": "boolean"}
STRING = {"type": "string"}


def obj(**properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties}


def where(value: Any, schema: dict[str, Any]) -> list[Any]:
    return [loc for loc, _why in coercions(value, schema)]


def test_what_pydantic_would_convert_is_found_with_what_was_expected() -> None:
    assert coercions(True, NUMBER) == [((), "must be a number, not true or false")]
    assert coercions("5", INTEGER) == [((), "must be an integer, not a string")]
    assert coercions(0, BOOLEAN) == [((), "must be true or false, not a number")]
    assert coercions("yes", BOOLEAN) == [((), "must be true or false, not a string")]
    expected = "must be an integer or true or false, not a string"
    assert coercions("1", {"type": ["integer", "boolean"]}) == [((), expected)]


def test_values_of_an_admitted_type_or_left_to_the_model_are_not() -> None:
    assert where(1, INTEGER) == [] and where(2.5, NUMBER) == [] and where(False, BOOLEAN) == []
    assert where(1.0, INTEGER) == []  # JSON Schema's integer takes 1.0
    assert where(True, {"type": ["integer", "boolean"]}) == []
    assert where(True, STRING) == [] and where(5, STRING) == []  # the model refuses these
    assert where({"a": 1}, INTEGER) == []  # likewise
    assert where(True, {}) == [] and where(None, INTEGER) == []


def test_unions_refuse_only_when_no_alternative_takes_the_value() -> None:
    optional = {"anyOf": [INTEGER, {"type": "null"}]}
    assert where(True, optional) == [()]
    assert where(True, {"anyOf": [INTEGER, STRING]}) == [()]  # pydantic: int takes true
    assert where("5", {"anyOf": [INTEGER, STRING]}) == []
    assert where(True, {"anyOf": [INTEGER, BOOLEAN]}) == []
    assert where(True, {"oneOf": [INTEGER, {}]}) == []


def test_objects_arrays_maps_and_references_are_walked() -> None:
    schema = {
        "$defs": {"Inner": obj(depth=INTEGER, name=STRING, on=BOOLEAN)},
        **obj(
            inner={"$ref": "#/$defs/Inner"},
            list={"type": "array", "items": NUMBER},
            pair={"type": "array", "prefixItems": [STRING, NUMBER]},
            map={"type": "object", "additionalProperties": NUMBER},
        ),
    }
    document = {
        "inner": {"depth": True, "name": "x", "on": 1},
        "list": [1, False, "2.5"],
        "pair": ["a", True],
        "map": {"a": 1, "b": True},
        "unknown": True,
    }
    assert where(document, schema) == [
        ("inner", "depth"),
        ("inner", "on"),
        ("list", 1),
        ("list", 2),
        ("map", "b"),
        ("pair", 1),
    ]


def test_an_openapi_documents_components_and_a_recursive_schema() -> None:
    tree = obj(size=INTEGER, children={"type": "array", "items": {"$ref": "#/components/x/Tree"}})
    schema = Schema({"$ref": "#/components/schemas/Tree"}, {"Tree": tree})
    document = {"size": 1, "children": [{"size": True, "children": [{"size": "2"}]}]}
    assert [loc for loc, _why in schema.coercions(document, ("body",))] == [
        ("body", "children", 0, "children", 0, "size"),
        ("body", "children", 0, "size"),
    ]


def test_parts_expecting_no_number_or_boolean_are_not_walked() -> None:
    schema = Schema(obj(urls={"type": "array", "items": STRING}, n=INTEGER))
    assert not schema.expects_convertible(schema.root["properties"]["urls"])
    assert schema.coercions({"urls": [True] * 3, "n": 2}) == []
