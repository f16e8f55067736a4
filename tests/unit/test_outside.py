"""``seojobs.outside``: the one rule for outside text (issue 25.1) and outside depth (25.2)."""

from __future__ import annotations

import json
from collections import namedtuple
from dataclasses import dataclass
from datetime import UTC, datetime

import pytest

from seojobs import jsontext
from seojobs.engine.host import RecordItems
from seojobs.outside import MAX_DEPTH, loads, storable, storable_json
from seojobs.records import ItemOutcome, NewFinding


def test_nul_and_lone_surrogates_become_the_replacement_character_everywhere() -> None:
    value = {
        "a\x00": ["x\ud800y", ("\udfff", 1, None, True)],
        "ok": {"deep": [{"k": "nul\x00"}]},
        "é": "café\x00",
    }
    assert storable(value) == {
        "a\ufffd": ["x\ufffdy", ("\ufffd", 1, None, True)],
        "ok": {"deep": [{"k": "nul\ufffd"}]},
        "é": "café\ufffd",
    }


def test_a_record_of_changes_is_cleaned_inside_its_dataclasses() -> None:
    finding = NewFinding("title_missing", "error", {"title": "t\x00"})
    outcome = ItemOutcome(
        item_id=1, failed=True, error_code="x", error_message="body\x00", findings=(finding,)
    )
    [change] = storable((RecordItems([outcome], {"failed": 1}),))
    [done] = change.outcomes
    assert done.error_message == "body\ufffd"
    assert done.findings[0].data == {"title": "t\ufffd"}
    assert outcome.error_message == "body\x00"  # the job's own record is left as it was


def test_a_clean_value_is_returned_as_it_is() -> None:
    value = {"a": ["b", {"c": "d"}], "n": 1}
    assert storable(value) is value
    outcome = ItemOutcome(item_id=1, failed=False, result={"title": "fine"})
    assert storable(outcome) is outcome


def test_what_json_cannot_say_plainly_is_still_walked() -> None:
    # storable first looks at the value encoded as JSON; these must reach the walk and come
    # out as the walk alone made them.
    when = datetime(2026, 1, 1, tzinfo=UTC)
    nested = {(1, 2): "t\x00", "at": when, "raw": b"\x00", "set": {"s\x00"}}
    assert storable(nested) == {(1, 2): "t\ufffd", "at": when, "raw": b"\x00", "set": {"s\x00"}}
    spelled = {"text": "a \\u0000 spelled out", "é": "ü"}  # JSON's own escape, as text
    assert storable(spelled) is spelled
    outcome = ItemOutcome(item_id=1, failed=False, result={"t": when, "k": ["\ud83d"]})
    assert storable(outcome).result == {"t": when, "k": ["\ufffd"]}
    assert storable(["x\x00", {"n": 1}]) == ["x\ufffd", {"n": 1}]


def test_a_named_tuple_and_a_slotted_dataclass_are_walked_too() -> None:
    # The encoder hands a tuple's subclass to its fallback and encodes dataclasses itself:
    # a NUL inside either must still be found.
    pair = namedtuple("pair", "a b")
    assert storable({"p": pair("x\x00", 1)}) == {"p": ("x\ufffd", 1)}

    @dataclass(frozen=True, slots=True)
    class Slotted:
        text: str
        more: tuple[str, ...]

    cleaned = storable([Slotted("a", ("b\ud800",))])
    assert cleaned == [Slotted("a", ("b\ufffd",))]
    big = {"n": 2**70, "t": "x\x00"}  # an integer past 64 bits: walked, not refused
    assert storable(big) == {"n": 2**70, "t": "x\ufffd"}


def test_storable_json_is_the_json_of_the_storable_value() -> None:
    # Encoded once when the value is storable already; otherwise as storable() made it.
    pair = namedtuple("pair", "a b")
    values = [
        {"a": [1, "é", None], "n": float("nan")},
        {"a\x00": ["x\ud800y"], "ok": "fine"},
        {"text": "a \\u0000 spelled out"},
        {1: 2**70, "t": "x\x00"},
        [pair("x\x00", 1), ItemOutcome(1, False, result={"k": "\udfff"})],
    ]
    for value in values:
        assert storable_json(value) == jsontext.dumps(storable(value)), value


def test_stored_json_text_is_compact_and_says_what_json_cannot_as_null_or_text() -> None:
    assert jsontext.dumps({"a": [1, "é"], "b": None}) == '{"a":[1,"é"],"b":null}'
    # NaN and infinities (Python's json.loads reads them from a provider) are null: JSON,
    # and PostgreSQL's jsonb, have no such numbers.
    assert jsontext.dumps({"x": float("nan"), "y": [float("inf")]}) == '{"x":null,"y":[null]}'
    # What the C encoder refuses, the standard library writes: keys that are not strings,
    # integers past 64 bits (and a NaN beside them is still null).
    assert json.loads(jsontext.dumps({1: 2**70, "z": float("-inf")})) == {"1": 2**70, "z": None}
    assert json.loads(jsontext.dumps({"d": {"k": (1, 2)}})) == {"d": {"k": [1, 2]}}


@pytest.mark.parametrize(
    "document",
    [
        "[" * 5000 + "]" * 5000,
        '{"a":' * 5000 + "1" + "}" * 5000,
        "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1),  # parses, but deeper than the bound
        b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1),
        '{"a": "[[[[{{{{", "b":' + "[" * MAX_DEPTH + "]" * MAX_DEPTH + "}",  # one level more
    ],
)
def test_json_nested_too_deep_is_a_value_error(document: str) -> None:
    with pytest.raises(ValueError, match="nested deeper than"):
        loads(document)


def test_json_within_the_bound_is_parsed() -> None:
    document = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    assert loads(document) == json.loads(document)
    assert loads(b'{"a": [1, {"b": null}]}') == {"a": [1, {"b": None}]}
    wide = json.dumps({"rows": [{"a": [1]} for _ in range(3 * MAX_DEPTH)], "s": "[{" * 100})
    assert loads(wide) == json.loads(wide)  # many openers, shallow: parsed


@pytest.mark.parametrize(
    "document",
    [
        b'{"id": 12345678901234567890, "small": -9223372036854775809}',  # past 64 bits
        b"[18446744073709551615, -9223372036854775808, 1234567890123456789]",
        b'{"a": NaN, "b": Infinity, "c": -Infinity, "d": 1e400}',
        b'"\\ud800 alone"',
        '\ufeff{"bom": 1}'.encode(),
        '{"x": "\u00e9"}'.encode("utf-16"),
        b'{"a": [1, 2.5, -0.0, 1E5, 5e-324, true, null], "a": "last"}',
        b'{"organic": [{"link": "http://a.test/p/1", "position": 1}], "credits": 1}',
        '{"text": "caf\u00e9 \\u0000"}',
    ],
)
def test_json_is_read_as_the_standard_library_reads_it(document: str | bytes) -> None:
    # orjson reads most documents; what it would read otherwise (an integer past 64 bits as a
    # float) or refuses is read by the standard library: the value and its types never change.
    assert repr(loads(document)) == repr(json.loads(document))
