"""The regexes the OpenAPI document states match exactly what the parsers take: a value built
from the schema is never refused (schemathesis' positive_data_acceptance)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seojobs.api.ids import MAX_ID, digits_pattern, id_list_pattern, parse_ids, whole_number
from seojobs.api.problems import Problem
from seojobs.kinds.urls import URL_PATTERN, check_url

RANGES = [(1, MAX_ID), (0, 2**31 - 1), (1, 1000), (1, 65535), (1, 9), (0, 10)]


def _takes(value: str, lo: int, hi: int) -> bool:
    try:
        whole_number(value, lo, hi)
    except ValueError:
        return False
    return True


@pytest.mark.parametrize(("lo", "hi"), RANGES)
def test_digits_pattern_is_exactly_whole_number(lo: int, hi: int) -> None:
    pattern = re.compile(f"^{digits_pattern(lo, hi)}$")
    edges = [hi - 1, hi, hi + 1, hi * 10, lo, lo - 1, 10 ** len(str(hi)) - 1]
    values = [str(n) for n in range(0, 1100)] + [str(n) for n in edges if n >= 0]
    values += ["0" + str(hi), "00", "", "0001", "-1", "+1", "1.0", "٣", " 1"]
    for value in values:
        assert bool(pattern.match(value)) == _takes(value, lo, hi), value


@given(st.from_regex(id_list_pattern(5), fullmatch=True))
@settings(max_examples=300, database=None)
def test_every_id_list_the_pattern_allows_is_taken(ids: str) -> None:
    parse_ids(ids, most=5)


@pytest.mark.parametrize("ids", ["1,2,3,4,5,6", "0", "1,x", str(MAX_ID + 1), "1 ,2"])
def test_id_lists_the_parser_refuses_do_not_match(ids: str) -> None:
    assert not re.match(id_list_pattern(5), ids)
    with pytest.raises(Problem):
        parse_ids(ids, most=5)


@given(st.from_regex(URL_PATTERN, fullmatch=True).filter(lambda url: len(url) <= 2048))
@settings(max_examples=500, database=None)
def test_every_url_the_pattern_allows_is_taken(url: str) -> None:
    check_url(url)


@pytest.mark.parametrize(
    "url",
    [
        "",
        "ftp://a.com",
        "http://",
        "http://a.com:0",
        "http://a.com:65536",
        "http://u@a.com",
        "http://a.com/a b",
        "//a.com",
        "http://a.com:x",
    ],
)
def test_urls_refused_do_not_match(url: str) -> None:
    assert not re.match(URL_PATTERN, url)
    with pytest.raises(ValueError):
        check_url(url)
