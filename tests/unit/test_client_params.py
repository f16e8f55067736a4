"""``submit --type``'s params from the command line (``cli_params``): pure, no server."""

from __future__ import annotations

from typing import Any

import pytest

from seojobs.client.cli_common import UsageProblem
from seojobs.client.cli_params import add_urls, json_or_text, parse_params


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        ("5", 5),
        ("-1.5", -1.5),
        (" 7 ", 7),
        ("true", True),
        ("false", False),
        ("null", None),
        ("[1, 2]", [1, 2]),
        ('["https://a.example/", "https://b.example/"]', ["https://a.example/", "https://b.example/"]),
        ('{"depth": 2, "follow": true}', {"depth": 2, "follow": True}),
        ('"5"', "5"),  # quoted: a string
        ("bing", "bing"),
        ("", ""),
        ("hello world", "hello world"),
        ("https://a.example/x?y=1", "https://a.example/x?y=1"),
        ("[1, 2", "[1, 2"),  # not JSON: the text
        ("tru", "tru"),
    ],
)  # fmt: skip
def test_a_value_is_json_when_it_parses_else_text(raw: str, value: Any) -> None:
    assert json_or_text(raw) == value
    assert type(json_or_text(raw)) is type(value)


@pytest.mark.parametrize(
    "raw",
    ["NaN", "Infinity", "-Infinity", "1e999", "-1e400", "[1, NaN]", '{"a": Infinity}', "[1e309]"],
)
def test_what_json_cannot_carry_stays_text(raw: str) -> None:
    # Python's json reads these (as nan and inf), but no JSON body can carry them.
    assert json_or_text(raw) == raw


def test_pairs_split_at_the_first_equals_sign_and_keys_are_trimmed() -> None:
    params, text = parse_params([" q =a=b", "n=3", "empty=", "list=[1]"])
    assert params == {"q": "a=b", "n": 3, "empty": "", "list": [1]}
    assert text == {"q": "a=b", "n": "3", "empty": "", "list": "[1]"}


def test_every_malformed_pair_is_reported_at_once() -> None:
    with pytest.raises(UsageProblem) as caught:
        parse_params(["ok=1", "novalue", "=5", " =x", "ok=2", "fine=3"])
    message = str(caught.value)
    assert "nothing was sent" in message
    assert "'novalue': use KEY=VALUE" in message and "'=5': use KEY=VALUE" in message
    assert "' =x': use KEY=VALUE" in message and "--param ok: given twice" in message
    assert "fine" not in message


def test_urls_join_the_params_once() -> None:
    params: dict[str, Any] = {"engine": "bing"}
    add_urls(params, [])
    assert params == {"engine": "bing"}
    add_urls(params, ["https://a.example/"])
    assert params == {"engine": "bing", "urls": ["https://a.example/"]}
    with pytest.raises(UsageProblem, match="urls: given both"):
        add_urls(params, ["https://b.example/"])
