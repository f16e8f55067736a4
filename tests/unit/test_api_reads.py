"""The read router's cursors and its refusal of two reads on one path or operation id."""

from __future__ import annotations

import re
from typing import Any

import pytest

from seojobs.api import reads
from seojobs.api.problems import Problem
from seojobs.engine import Kind, Read, Registry
from seojobs.reads import Collected
from seojobs.services import NotFound
from tests.acme import KIND as ACME


@pytest.mark.parametrize(
    "position", [[7], [42, 0, 1.5, 9], [42, 1, 0, 9], [5, "keyword", "desktop", "", 3]]
)
def test_a_position_comes_back_from_its_cursor(position: list[Any]) -> None:
    cursor = reads.encode(position)
    assert cursor is not None and re.fullmatch(reads.CURSOR_PATTERN, cursor)
    assert reads.decode(cursor) == position


def test_a_history_cursor_is_the_last_rows_id() -> None:
    assert reads.encode([123]) == "123"
    assert reads.encode(None) is None


@pytest.mark.parametrize("odd", ["x", "0", "-1", "1_0", "9" * 20, "c", "c+", "½", "c" + "A" * 2001])
def test_what_is_no_cursors_form_is_422_naming_the_cursor(odd: str) -> None:
    with pytest.raises(Problem) as refused:
        reads.decode(odd)
    assert refused.value.status == 422
    assert refused.value.extra["errors"][0]["field"] == "cursor"


# "[]", "{}", '["a", true]', '[1, {"a": 1}]' and bytes that are no JSON
@pytest.mark.parametrize("odd", ["cW10", "ce30", "cWyJhIiwgdHJ1ZV0", "cWzEsIHsiYSI6IDF9XQ", "cx"])
def test_a_cursor_naming_no_position_is_404(odd: str) -> None:
    with pytest.raises(NotFound):
        reads.decode(odd)


def test_two_reads_of_one_path_are_refused_when_the_app_is_built() -> None:
    registry = Registry()
    registry.add(ACME)
    again = Read(ACME.reads[0].path, "list_other", "other_kind", Collected)
    registry.add(Kind("other_kind", ACME.params, ACME.handler, reads=(again,)))
    with pytest.raises(ValueError, match="acme/sites"):
        reads.router(registry)
