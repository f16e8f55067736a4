"""URL normalisation and "is this URL among the results" matching for the SERP checkers."""

from __future__ import annotations

import pytest

from seojobs.providers.urlmatch import MatchOptions, is_listed, match, normalise, site_query


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("HTTP://Example.COM", "http://example.com/"),
        ("http://example.com:80/a", "http://example.com/a"),
        ("https://example.com:443/a", "https://example.com/a"),
        ("https://example.com:8443/a", "https://example.com:8443/a"),
        ("http://example.com:443/a", "http://example.com:443/a"),
        ("https://example.com./a", "https://example.com/a"),
        ("https://example.com/a#frag", "https://example.com/a"),
        ("https://example.com/a?", "https://example.com/a"),
        ("https://user:pw@example.com/a", "https://example.com/a"),
        ("https://example.com/a/./b/../c", "https://example.com/a/c"),
        ("https://example.com/a/..", "https://example.com/"),
        ("https://example.com/a/.", "https://example.com/a/"),
        ("https://example.com/%7Euser/%41", "https://example.com/~user/A"),
        ("https://example.com/a%2fb", "https://example.com/a%2Fb"),
        ("https://example.com/caf\u00e9", "https://example.com/caf%C3%A9"),
        ("https://example.com/caf%c3%a9", "https://example.com/caf%C3%A9"),
        ("https://example.com/Path/CASE", "https://example.com/Path/CASE"),
        ("https://b\u00fccher.de/", "https://xn--bcher-kva.de/"),
        ("https://example.com/?b=2&a=1&a=0", "https://example.com/?a=0&a=1&b=2"),
        ("https://example.com/?q=a+b", "https://example.com/?q=a%20b"),
        ("https://[::1]:8080/x", "https://[::1]:8080/x"),
        ("  https://example.com/a  ", "https://example.com/a"),
    ],
)
def test_normalise(url: str, expected: str) -> None:
    assert normalise(url) == expected


@pytest.mark.parametrize(
    "url", ["ftp://example.com/a", "example.com/a", "https:///a", "https://example.com:99999/"]
)
def test_normalise_refuses_what_is_not_an_http_url(url: str) -> None:
    with pytest.raises(ValueError):
        normalise(url)


def test_site_query_is_scheme_less_and_normalised() -> None:
    assert site_query("HTTPS://WWW.Example.com/p?b=1&a=2#x") == "site:www.example.com/p?a=2&b=1"


def test_exact_match_reports_position_and_the_url_as_printed() -> None:
    found = match(
        "https://example.com/a", ["https://example.com/b", "HTTPS://EXAMPLE.COM:443/a#top"]
    )
    assert found.listed
    assert found.detail() == {
        "results": 2,
        "matched_url": "HTTPS://EXAMPLE.COM:443/a#top",
        "position": 2,
        "match": "exact",
    }


def test_trailing_slash_counts_by_default_and_is_reported() -> None:
    found = match("https://example.com/page", ["https://example.com/page/"])
    assert found.listed
    assert found.detail()["match"] == "lenient"
    assert found.detail()["differences"] == ["trailing_slash"]
    strict = MatchOptions(trailing_slash=False)
    assert not is_listed("https://example.com/page", ["https://example.com/page/"], strict)


@pytest.mark.parametrize(
    ("wanted", "result", "difference", "options"),
    [
        ("http://example.com/a", "https://example.com/a", "scheme", MatchOptions(scheme=True)),
        ("https://www.example.com/a", "https://example.com/a", "www", MatchOptions(www=True)),
        ("https://example.com/a", "https://www.example.com/a", "www", MatchOptions(www=True)),
        (
            "https://example.com/a?utm_source=x&id=1",
            "https://example.com/a?id=1",
            "tracking_params",
            MatchOptions(tracking_params=True),
        ),
        (
            "https://example.com/a?id=1",
            "https://example.com/a?gclid=abc&id=1",
            "tracking_params",
            MatchOptions(tracking_params=True),
        ),
    ],
)
def test_near_matches_do_not_count_unless_allowed(
    wanted: str, result: str, difference: str, options: MatchOptions
) -> None:
    found = match(wanted, [result])
    assert not found.listed
    assert found.detail()["near_match"] == {
        "url": result,
        "position": 1,
        "differences": [difference],
    }
    assert is_listed(wanted, [result], options)


@pytest.mark.parametrize(
    "result",
    [
        "https://example.com/a/b",  # a deeper page
        "https://example.com/ab",
        "https://example.com/A",  # paths are case-sensitive
        "https://example.com/a?id=2",  # another query value
        "https://example.com/a?id=1&page=2",  # an extra (non-tracking) parameter
        "https://example.com:8443/a",
        "https://shop.example.com/a",  # another subdomain is not "www"
        "https://example.org/a",
    ],
)
def test_other_pages_are_neither_matches_nor_near_matches(result: str) -> None:
    wanted = "https://example.com/a?id=1" if "id=" in result else "https://example.com/a"
    found = match(wanted, [result], MatchOptions(True, True, True, True))
    assert not found.listed
    assert "near_match" not in found.detail()


def test_exact_beats_lenient_and_lenient_hides_near() -> None:
    results = ["http://example.com/p", "https://example.com/p/", "https://example.com/p"]
    found = match("https://example.com/p", results)
    assert (found.detail()["position"], found.detail()["match"]) == (3, "exact")
    found = match("https://example.com/p", results[:2])
    assert found.detail()["position"] == 2
    assert "near_match" not in found.detail()


def test_the_closest_near_match_is_reported() -> None:
    found = match(
        "https://example.com/p",
        ["http://www.example.com/p", "http://example.com/p"],
    )
    assert found.detail()["near_match"]["position"] == 2


def test_junk_results_are_skipped() -> None:
    junk: list[object] = [None, 42, "", "not a url", "javascript:void(0)", {"link": "x"}]
    found = match("https://example.com/a", [*junk, "https://example.com/a"])
    assert found.listed and found.detail()["position"] == 7
    assert found.detail()["results"] == 7


def test_no_results() -> None:
    assert match("https://example.com/a", []).detail() == {"results": 0}


def test_an_invalid_wanted_url_raises() -> None:
    with pytest.raises(ValueError):
        match("mailto:someone@example.com", ["https://example.com/"])
