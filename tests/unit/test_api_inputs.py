"""The body check of the input gate: depth, NUL, lone surrogates and non-finite numbers,
located like pydantic locates errors (tests/integration/test_api_inputs.py walks the routes)."""

from __future__ import annotations

import math
from typing import Any

import pytest

from seojobs.api.inputs import MAX_DEPTH, body_errors


def locs(document: Any) -> list[tuple[str | int, ...]]:
    return [tuple(e["loc"]) for e in body_errors(document)]


def lists(levels: int) -> Any:
    value: Any = []
    for _ in range(levels - 1):
        value = [value]
    return value


def objects(levels: int) -> Any:
    value: Any = {}
    for _ in range(levels - 1):
        value = {"a": value}
    return value


def test_32_levels_pass_and_33_do_not() -> None:
    assert MAX_DEPTH == 32
    assert body_errors(lists(32)) == body_errors(objects(32)) == []
    # The body is level 1: level 33 is 32 steps down.
    assert locs(lists(33)) == [("body", *[0] * 32)]
    assert locs(objects(33)) == [("body", *["a"] * 32)]
    assert locs({"p": [{"q": lists(30)}]}) == [("body", "p", 0, "q", *[0] * 29)]
    assert body_errors({"p": [{"q": lists(29)}]}) == []
    assert body_errors(lists(1000))[0]["type"] == "too_deep"


@pytest.mark.parametrize("odd", ["\x00", "a\x00", "\ud800", "\udbff", "\udc00", "x\udfffy"])
def test_nul_and_lone_surrogates_are_found_in_keys_and_values(odd: str) -> None:
    named = "".join(
        f"\\u{ord(c):04x}" if c == "\x00" or "\ud800" <= c <= "\udfff" else c for c in odd
    )
    document = {"title": odd, "urls": ["ok", odd], "params": {"k": {odd: 1}, "v": [[odd]]}}
    assert locs(document) == [
        ("body", "title"),
        ("body", "urls", 1),
        ("body", "params", "k", named),  # escaped: the answer must itself encode
        ("body", "params", "v", 0, 0),
    ]
    assert locs(odd) == [("body",)]


def test_a_surrogate_pair_is_one_character_and_passes() -> None:
    assert body_errors({"emoji": "\U0001f600", "text": "Café ✓"}) == []


@pytest.mark.parametrize("number", [math.nan, math.inf, -math.inf])
def test_non_finite_numbers_are_found(number: float) -> None:
    assert locs({"a": [1, number], "b": 1.5e308, "c": 10**40}) == [("body", "a", 1)]
