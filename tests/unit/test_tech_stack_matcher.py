"""The tech-stack matcher on our own fingerprint file (tests/fakes/fingerprints.json): every
pattern field read from one response, tags (confidence, version, the ternary), requires,
implies and excludes; bad patterns reported and skipped; garbage databases refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from seojobs.fetch.result import FetchResult, make_headers
from seojobs.kinds.tech_stack import database
from seojobs.kinds.tech_stack.matcher import Limits, match
from seojobs.kinds.tech_stack.page import bounded, read_page
from seojobs.kinds.tech_stack.patterns import Pattern, required_literal, split_tags
from seojobs.kinds.tech_stack.report import page_result
from tests.conftest import TEST_FINGERPRINTS
from tests.fakes.tech_site import CART, EXPECTED, HOME, HOME_HEADERS, SLOW, found

LIMITS = Limits(timeout=0.25, budget=60.0)


def db() -> database.Fingerprints:
    return database.parse(json.loads(Path(TEST_FINGERPRINTS).read_text()))


def response(url: str, html: str, headers: dict[str, str]) -> FetchResult:
    return FetchResult(
        url=url,
        final_url=url,
        status=200,
        headers=make_headers([("Content-Type", "text/html"), *headers.items()]),
        body=html.encode(),
    )


def looked_up(url: str, html: str, headers: dict[str, str]) -> dict[str, Any]:
    fetched = response(url, html, headers)
    fingerprints = db()
    return page_result(
        url, url, 200, match(fingerprints, read_page(fetched, 500_000), LIMITS), fingerprints
    )


def test_every_matcher_field_and_relation_on_the_home_page() -> None:
    result = looked_up("http://site.test/", HOME, HOME_HEADERS)
    assert found(result["technologies"]) == EXPECTED["/"]
    by_name = {t["name"]: t for t in result["technologies"]}
    assert by_name["Rubyish"]["implied_by"] == ["CookieShop"]
    assert by_name["Rubyish"]["evidence"] == []  # nothing of its own matched
    assert by_name["PHPish"]["implied_by"] == ["PressCMS"]
    assert by_name["PressCMS"]["categories"] == [{"id": 1, "name": "CMS"}]
    assert by_name["PHPish"]["categories"] == [{"id": 27, "name": "Programming languages"}]
    cookie = by_name["CookieShop"]["evidence"]
    assert cookie == [
        {"field": "cookies", "pattern": "", "name": "cshop_session", "value": "abc123"}
    ]
    jfoo = by_name["jFoo"]["evidence"][0]
    assert (jfoo["field"], jfoo["value"], jfoo["version"]) == (
        "scriptSrc",
        "/static/jfoo-3.7.1.min.js",
        "3.7.1",
    )
    cdn = sorted((e["field"], e["confidence"]) for e in by_name["MaybeCDN"]["evidence"])
    assert cdn == [("headers", 40), ("scriptSrc", 40)]
    meta = by_name["PressCMS"]["evidence"][0]
    assert (meta["field"], meta["name"], meta["value"]) == ("meta", "generator", "PressCMS 6.4.1")
    assert by_name["InlineTracker"]["evidence"][0]["field"] == "scripts"


def test_requires_and_excludes_depend_on_what_else_is_on_the_page() -> None:
    result = looked_up("http://site.test/shop/cart", CART, {"Server": "nginxish"})
    assert found(result["technologies"]) == EXPECTED["/shop/cart"]
    url = {t["name"]: t for t in result["technologies"]}["UrlShop"]["evidence"][0]
    assert (url["field"], url["value"]) == ("url", "http://site.test/shop/cart")


def test_a_catastrophic_pattern_times_out_is_reported_and_the_rest_still_match() -> None:
    result = looked_up("http://site.test/slow", SLOW, {"Server": "nginxish"})
    assert found(result["technologies"]) == EXPECTED["/slow"]
    assert {(s["technology"], s["reason"]) for s in result["skipped"]} == {
        ("Catastrophic", "timeout")
    }


def test_a_pattern_that_does_not_compile_is_reported_not_matched() -> None:
    bad = db().bad_patterns()
    assert len(bad) == 1 and bad[0].startswith("BrokenPattern.html: does not compile")
    assert Pattern.parse("(unclosed").usable is False


@pytest.mark.parametrize(
    ("raw", "text", "wanted"),
    [
        ("v([\\d.]+)\\;version:\\1", "v1.2", "1.2"),
        ("w(=x)?\\;version:\\1?2.x:1.x", "w=x", "2.x"),
        ("w(=x)?\\;version:\\1?2.x:1.x", "w", "1.x"),
        ("w(=x)?\\;version:\\1?yes:", "w", None),
        ("w(=x)?\\;version:\\1?:none", "w=x", None),
        ("(\\d)-(\\d)\\;version:v\\1.\\2", "3-4", "v3.4"),
        ("(\\d)\\;version:\\3", "1", None),  # a group the pattern does not have
    ],
)
def test_version_syntax(raw: str, text: str, wanted: str | None) -> None:
    pattern = Pattern.parse(raw)
    assert pattern.version(pattern.search(text, 1.0)) == wanted


def test_tags() -> None:
    assert split_tags("a([\\d.]+)\\;version:\\1\\;confidence:30") == (
        "a([\\d.]+)",
        split_tags("x\\;confidence:30\\;version:\\1")[1],
    )
    assert split_tags("x\\;confidence:abc")[1].confidence == 100
    assert split_tags("x\\;confidence:900")[1].confidence == 100


@pytest.mark.parametrize(
    ("document", "says"),
    [
        ([], "expected a JSON object"),
        ({"categories": {}}, "no `technologies`"),
        ({"technologies": {"A": {"cats": [1], "html": "<a"}}}, "no `categories`"),
        ({"technologies": {"A": {"cats": [1]}}, "categories": {}}, "not one technology"),
        ({"technologies": {"A": {"html": "<a"}}, "categories": {"x": {}}}, "category 'x'"),
    ],
)
def test_garbage_is_refused_with_a_message(document: Any, says: str) -> None:
    with pytest.raises(database.InvalidDatabase, match=says):
        database.parse(document)


def test_malformed_entries_are_reported_and_the_rest_kept() -> None:
    parsed = database.parse(
        {
            "technologies": {
                "Fine": {"cats": [1], "html": "<fine"},
                "NotAnObject": 5,
                "BadCats": {"cats": "one", "html": "<b"},
                "BadHeaders": {"cats": [1], "headers": ["x"]},
            },
            "categories": {"1": {"name": "CMS"}},
        }
    )
    assert set(parsed.technologies) == {"Fine", "BadCats", "BadHeaders"}
    assert parsed.problems == [
        "NotAnObject: not an object",
        "BadCats.cats: not a list of category ids",
        "BadHeaders.headers: not an object of name -> pattern",
    ]


def test_a_missing_database_names_the_command(tmp_path: Path) -> None:
    with pytest.raises(database.FingerprintsMissing, match="seojobs fingerprints update"):
        database.load(str(tmp_path / "none.json"))


@pytest.mark.parametrize(
    ("expression", "literal"),
    [
        ('<link[^>]+?href="[^"]+wp-content', "wp-content"),
        ("jfoo[.-]([\\d.]+)(?:\\.min)?\\.js", "jfoo"),
        ("window\\.inlineTracker\\s*=", "window.inlinetracker"),  # casefolded
        ("colou?r-box", "r-box"),  # the u may be missing
        ("aaab+cd", "aaab"),  # b+: at least one b, then the run ends
        ("ab{2}cdef", "cdef"),  # a repeat count is no literal
        ("abc\\{def", "abc{def"),
        ("Straße-xyz", "e-xyz"),  # runs of ASCII only
        ("abc|defgh", None),  # either side may match
        ("x\\x41yz", None),  # an escape that runs on past its letter
        ("(x+x+)+y", None),
        ("ab", None),  # too short to be worth it
    ],
)
def test_the_literal_a_pattern_requires(expression: str, literal: str | None) -> None:
    assert required_literal(expression) == literal


def test_a_page_without_a_patterns_literal_is_not_searched() -> None:
    # A catastrophic expression that requires a literal: searched (and timing out) only on
    # the page that holds the literal.
    fingerprints = database.parse(
        {
            "technologies": {"Slow": {"cats": [1], "html": "(x+x+)+y[^<]*needle"}},
            "categories": {"1": {"name": "CMS"}},
        }
    )
    runs = "<p>" + "x" * 5000 + "</p>"
    for html, skipped in ((runs, []), (runs + "<p>needle</p>", ["timeout"])):
        page = read_page(response("http://site.test/", html, {}), 500_000)
        outcome = match(fingerprints, page, LIMITS)
        assert [s["reason"] for s in outcome.skipped] == skipped


def test_a_long_page_is_searched_at_its_start_and_its_end() -> None:
    html = "<head>" + "a" * 1000 + "MIDDLE" + "b" * 1000 + "<!-- footer --></html>"
    kept = bounded(html, 400)
    assert kept.startswith("<head>") and kept.endswith("<!-- footer --></html>")
    assert "MIDDLE" not in kept and len(kept) == 401  # and the line between
    assert bounded("short", 400) == "short"
