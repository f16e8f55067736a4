"""URL normalisation and "is this URL among the results" matching for the SERP checkers."""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Iterator

import pytest

from seojobs.providers.urlmatch import (
    MatchOptions,
    host,
    is_listed,
    match,
    normalise,
    parse,
    site_query,
)


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


def _outcome(read: Callable[[str], str], url: str) -> str:
    try:
        return read(url)
    except ValueError:
        return "<ValueError>"


def _parsed_host(url: str) -> str:
    return parse(url).host


_TRICKY_HOSTS = (
    "example.com",
    "EXAMPLE.Com",
    "example.com.",
    "example.com..",
    "www.example.co.uk",
    "xn--bcher-kva.de",
    "bücher.de",
    "BÜCHER.de",
    "straße.de",
    "xn--n3h.example",
    "127.0.0.1",
    "[::1]",
    "[2001:DB8::1]",
    "[::1",
    "::1]",
    "[v1.x]",
    "[not-ipv6]",
    ".",
    "",
    "-",
    "a-.b",
    "exa%6Dple.com",
    "exa%2Fmple.com",
    "exa mple.com",
    "exa\tmple.com",
    "example.com\\evil.com",
    "user@example.com",
    "user:pw@example.com",
    "a@b@example.com",
    "@example.com",
    "example.com@",
    "ex_ample.com",
    "\uff45\uff58\uff41\uff4d\uff50\uff4c\uff45.com",
    "exam\u2100ple.com",
)
_TRICKY_PORTS = ("", ":", ":80", ":443", ":0", ":65535", ":65536", ":99999999", ":-1")
_TRICKY_PORTS += (":8a", ": 80", ":\uff18\uff10", ":80:81", ":0080")
_TRICKY_TAILS = ("", "/", "/a/../b?q=%zz#f", "?q", "#f", "\\path", "/ä", "/%2e%2e/", "\n", " ")
_TRICKY_SCHEMES = ("http://", "https://", "HttpS://", "ftp://", "http:/", "//", " http://")
_TRICKY_SCHEMES += ("\thttp://", "http\n://", "https:\\\\")


def _tricky_urls() -> Iterator[str]:
    for scheme, name, port, tail in itertools.product(
        _TRICKY_SCHEMES, _TRICKY_HOSTS, _TRICKY_PORTS, _TRICKY_TAILS
    ):
        yield f"{scheme}{name}{port}{tail}"
    # And noise: random strings over the characters that change a URL's reading.
    alphabet = "hHtTpPsS:/.?#@[]\\%:0123456789aAéß-_ \t\n"
    rng = random.Random(29)
    for _ in range(5_000):
        body = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 24)))
        yield rng.choice(("http://", "https://", "")) + body


def test_host_is_exactly_the_parsed_host_over_tricky_urls() -> None:
    """``host`` reads plain URLs without the full parse; over every tricky spelling (case,
    IDN, ports, userinfo, trailing dots, escapes, IPv6, backslashes, whitespace) it gives what
    ``parse(url).host`` gives, or raises as it raises."""
    compared = fast = 0
    for url in _tricky_urls():
        parse.cache_clear()
        got = _outcome(host, url)
        if parse.cache_info().misses == 0:
            fast += 1
        assert got == _outcome(_parsed_host, url), url
        compared += 1
    assert compared > 40_000 and fast > 2_000  # both paths taken, many times


def test_a_plain_urls_host_needs_no_parse() -> None:
    parse.cache_clear()
    assert host("https://WWW.Example.com.:8443/a/../b?q=1#f") == "www.example.com"
    assert host("HTTP://127.0.0.1/") == "127.0.0.1"
    assert parse.cache_info().misses == 0
    assert host("https://bücher.de/") == "xn--bcher-kva.de"  # not plain: parsed
    with pytest.raises(ValueError):
        host("https://example.com:65536/")
