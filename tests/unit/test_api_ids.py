"""The one parser of ids, cursors, pages and limits: ASCII digits within the range, else
ValueError (the API answers it as a 422 naming the field; tests/integration/test_api_ids.py)."""

from __future__ import annotations

import pytest

from seojobs.api.ids import MAX_ID, parse_id, whole_number

REFUSED = [
    "²",  # isdigit() is true, int() raises
    "٣",  # Arabic-Indic three: int() reads 3
    "\uff11",  # fullwidth one: int() reads 1
    "-1",
    "+5",
    " 5",
    "5 ",
    "5\n",
    "1_0",
    "5.0",
    "0x10",
    "1e3",
    "",
    "0",
    str(MAX_ID + 1),
    "9" * 20,
    "9" * 5000,  # int() raises past 4,300 digits
    0,
    -1,
    MAX_ID + 1,
    True,  # a bool is an int to Python, never an id
    1.5,
    0.0,
    float(MAX_ID),  # 2**63 once a float: past the range
    float("inf"),
    float("nan"),
    None,
    b"5",
]


@pytest.mark.parametrize("value", REFUSED, ids=repr)
def test_anything_but_ascii_digits_in_range_is_refused(value: object) -> None:
    with pytest.raises(ValueError, match=f"a whole number from 1 to {MAX_ID} in ASCII digits"):
        parse_id(value)


@pytest.mark.parametrize(
    ("value", "number"),
    [
        ("1", 1),
        ("007", 7),
        ("0" * 40 + "12", 12),
        (str(MAX_ID), MAX_ID),
        (5, 5),
        (MAX_ID, MAX_ID),
        # JSON Schema's integers include integral floats (schemathesis sends 900.0)
        (900.0, 900),
        (1.0, 1),
        (2.0**62, 2**62),
    ],
)
def test_ids_are_read(value: object, number: int) -> None:
    assert parse_id(value) == number


def test_ranges_are_the_fields() -> None:
    assert whole_number("0", 0, 10) == 0  # pages and report cursors start at 0
    with pytest.raises(ValueError, match="from 1 to 1000"):
        whole_number("1001", 1, 1000)
