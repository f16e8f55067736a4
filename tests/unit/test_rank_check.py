"""Rank checks without a network: params validation, which result is the target's, and the
reading of Serper's and DataForSEO's answers (malformed ones included)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from seojobs.kinds.rank_check.declared import items, subject
from seojobs.kinds.rank_check.match import first_match, on_domain, same_page, target_host
from seojobs.kinds.rank_check.params import RankCheckParams
from seojobs.providers import dataforseo_ranks, serper_ranks
from seojobs.providers.base import ProviderError
from seojobs.providers.ranks import Organic, RankQuery

# -- params -----------------------------------------------------------------------------------


def params(**values: Any) -> RankCheckParams:
    return RankCheckParams.model_validate({"keywords": ["a"], "target": "example.com"} | values)


def refused(**values: Any) -> list[str]:
    with pytest.raises(ValidationError) as caught:
        params(**values)
    return [".".join(str(p) for p in e["loc"]) for e in caught.value.errors()]


def test_keywords_are_trimmed_and_deduplicated_whatever_their_case() -> None:
    made = params(keywords=[" Garden Hose ", "garden hose", "HOSE reel", "Garden HOSE"])
    assert made.keywords == ["Garden Hose", "HOSE reel"]  # the first spelling kept


def test_defaults_and_normalised_values() -> None:
    made = params(target="WWW.Bücher.DE", location="02826", language="DE")
    assert (made.target, made.location, made.language) == ("www.xn--bcher-kva.de", 2826, "de")
    assert (made.match, made.device, made.depth, made.provider) == ("domain", "desktop", 100, None)
    page = params(target="https://bücher.de/café", match="exact_url")  # an IRI: as its URI
    assert page.target == "https://xn--bcher-kva.de/caf%C3%A9"
    assert params(location="London,England,United Kingdom").location.startswith("London")


@pytest.mark.parametrize(
    ("values", "field"),
    [
        ({"keywords": []}, "keywords"),
        ({"keywords": ["x"] * 101}, "keywords"),
        ({"keywords": ["\t"]}, "keywords.0"),
        ({"keywords": ["a\nb"]}, "keywords.0"),
        ({"keywords": ["k" * 81]}, "keywords.0"),
        ({"target": "localhost"}, "target"),
        ({"target": "https://"}, "target"),
        ({"target": "example.com/page"}, "target"),
        ({"target": "127.0.0.1"}, "target"),
        ({"match": "exact_url"}, "target"),  # a domain is no page
        ({"device": "tablet"}, "device"),
        ({"depth": 5}, "depth"),
        ({"depth": 1000}, "depth"),
        ({"location": 0}, "location"),
        ({"location": " "}, "location"),
        ({"language": "english"}, "language"),
        ({"provider": "serpapi"}, "provider"),
        ({"extra": 1}, "extra"),
    ],
)
def test_bad_fields_are_named(values: dict[str, Any], field: str) -> None:
    assert field in refused(**values)


def test_one_item_per_keyword_with_its_market_and_device_and_a_case_free_subject() -> None:
    made = params(keywords=["Garden hose", "reel"], device="mobile", location=2276)
    assert items(made) == [
        {"keyword": "Garden hose", "location": 2276, "language": "en", "device": "mobile"},
        {"keyword": "reel", "location": 2276, "language": "en", "device": "mobile"},
    ]
    assert subject("mobile", 2276, "en", "Garden Hose") == "mobile/2276/en/garden hose"


# -- matching ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "target", "found"),
    [
        ("https://example.com/x", "example.com", True),
        ("http://WWW.Example.com/", "example.com", True),
        ("https://blog.example.com/a", "example.com", True),
        ("https://a.b.example.com/", "www.example.com", True),  # www. ignored on the target
        ("https://example.com./a", "example.com", True),  # a trailing dot
        ("https://example.com/", "https://www.example.com/some/page", True),  # a URL's host
        ("https://notexample.com/", "example.com", False),
        ("https://example.com.evil.example/", "example.com", False),
        ("https://example.org/", "example.com", False),
        ("https://example.com/", "blog.example.com", False),  # the parent is not the subdomain
        ("not a url", "example.com", False),
        ("https://xn--bcher-kva.de/", "xn--bcher-kva.de", True),
    ],
)
def test_domain_matching(url: str, target: str, found: bool) -> None:
    assert on_domain(url, target_host(target)) is found


@pytest.mark.parametrize(
    ("url", "found"),
    [
        ("https://example.com/page/", True),
        ("https://example.com/page", True),  # the trailing slash
        ("http://www.example.com/page", True),  # scheme and www.
        ("https://example.com/page?utm_source=x&gclid=1", True),  # tracking parameters
        ("https://EXAMPLE.com/%70age#top", True),  # case, escapes, a fragment
        ("https://example.com/page/other", False),
        ("https://example.com/Page", False),
        ("https://example.com/page?id=2", False),
        ("https://blog.example.com/page", False),
        ("ftp://example.com/page", False),
    ],
)
def test_exact_url_matching(url: str, found: bool) -> None:
    assert same_page(url, "https://example.com/page/") is found


def test_the_best_placed_match_wins() -> None:
    organic = (
        Organic("https://other.example/", None, 1),
        Organic("https://blog.example.com/", "Blog", 2, 5),
        Organic("https://example.com/", "Home", 3, 6),
    )
    assert first_match(organic, "example.com", "domain") == organic[1]
    assert first_match(organic, "https://example.com", "exact_url") == organic[2]
    assert first_match(organic, "other.example.net", "domain") is None
    assert first_match((), "example.com", "domain") is None


# -- Serper -----------------------------------------------------------------------------------


QUERY = RankQuery("garden hose", 2826, "en", "desktop", 50)


def test_serper_request_by_country_or_location_name() -> None:
    assert serper_ranks.request_body(QUERY) == {
        "q": "garden hose",
        "hl": "en",
        "num": 50,
        "gl": "gb",
    }
    named = RankQuery("x", "Austin,Texas,United States", "en", "desktop", 10)
    assert serper_ranks.request_body(named)["location"] == "Austin,Texas,United States"
    assert serper_ranks.unsupported("desktop", 2840) is None
    assert "desktop results only" in (serper_ranks.unsupported("mobile", 2840) or "")
    assert "no country code" in (serper_ranks.unsupported("desktop", 1023191) or "")


def test_serper_answer_is_read_with_its_features() -> None:
    serp = serper_ranks.parse(
        {
            "searchParameters": {"q": "garden hose"},
            "organic": [
                {"title": "One", "link": "https://a.example/", "position": 1},
                {"link": "https://b.example/"},  # no position, no title
            ],
            "peopleAlsoAsk": [{"question": "?"}],
            "answerBox": {"title": "snippet"},
            "relatedSearches": [],  # empty: not shown
            "credits": 1,
        }
    )
    assert serp.organic == (
        Organic("https://a.example/", "One", 1),
        Organic("https://b.example/", None, 2),
    )
    assert serp.features == ("featured_snippet", "people_also_ask")
    assert serp.detail == {"credits": 1}
    assert serper_ranks.parse({"searchParameters": {}}).organic == ()  # nothing found


@pytest.mark.parametrize(
    "body",
    [
        [],
        "text",
        {"credits": 1},
        {"organic": {"link": "https://a.example/"}},
        {"organic": [{"title": "no link"}]},
        {"organic": ["https://a.example/"]},
    ],
)
def test_a_malformed_serper_answer_is_refused(body: Any) -> None:
    with pytest.raises(ProviderError) as caught:
        serper_ranks.parse(body)
    assert (caught.value.code, caught.value.fatal) == ("malformed_response", False)


# -- DataForSEO -------------------------------------------------------------------------------


def dfs(items: Any, status: int = 20000, task_status: int = 20000) -> dict[str, Any]:
    result = [{"keyword": "garden hose", "check_url": "https://www.google.com/s", "items": items}]
    task = {"id": "t1", "cost": 0.002, "status_code": task_status, "status_message": "x",
            "result": result}  # fmt: skip
    return {"status_code": status, "status_message": "Ok.", "tasks": [task]}


def test_dataforseo_task_escapes_the_keyword_and_sends_the_market() -> None:
    query = RankQuery("100% c++", "London,England,United Kingdom", "en", "mobile", 30)
    assert dataforseo_ranks.task_of(query) == {
        "keyword": "100%25 c%2B%2B",
        "location_name": "London,England,United Kingdom",
        "language_code": "en",
        "device": "mobile",
        "depth": 30,
    }
    assert dataforseo_ranks.task_of(QUERY)["location_code"] == 2826


def test_dataforseo_items_give_organic_ranks_and_features() -> None:
    serp = dataforseo_ranks.parse(
        dfs(
            [
                {"type": "ai_overview", "rank_group": 1, "rank_absolute": 1},
                {"type": "organic", "rank_group": 1, "rank_absolute": 2,
                 "url": "https://a.example/", "title": "A", "domain": "a.example"},
                {"type": "people_also_ask", "rank_group": 1, "rank_absolute": 3},
                {"type": "map", "rank_group": 1, "rank_absolute": 4},
                {"type": "organic", "rank_absolute": 5, "url": "https://b.example/"},
                {"type": "something_new"},
            ]
        )
    )  # fmt: skip
    assert serp.organic == (
        Organic("https://a.example/", "A", 1, 2),
        Organic("https://b.example/", None, 2, 5),  # no rank_group: counted
    )
    assert serp.features == ("ai_overview", "people_also_ask", "local_pack")
    assert serp.detail == {
        "task_id": "t1",
        "task_cost": 0.002,
        "check_url": "https://www.google.com/s",
    }
    empty = dataforseo_ranks.parse(dfs(None, task_status=40102))
    assert empty.organic == () and empty.features == ()
    assert dataforseo_ranks.parse(dfs(None)).organic == ()  # items null: an empty page


@pytest.mark.parametrize(
    ("body", "code", "fatal"),
    [
        (dfs([], status=40100), "provider_auth_failed", True),
        (dfs([], task_status=40210), "provider_quota_exhausted", True),
        (dfs([], task_status=40501), "provider_rejected", False),
        (dfs([], task_status=50000), "upstream_error", False),
        ([], "malformed_response", False),
        ({"status_code": "20000"}, "malformed_response", False),
        ({"status_code": 20000, "tasks": []}, "malformed_response", False),
        ({"status_code": 20000, "tasks": [{"status_code": 20000, "result": []}]},
         "malformed_response", False),
        (dfs({"type": "organic"}), "malformed_response", False),
        (dfs([{"type": "organic", "url": None}]), "malformed_response", False),
        (dfs(["organic"]), "malformed_response", False),
    ],
)  # fmt: skip
def test_dataforseo_failures(body: Any, code: str, fatal: bool) -> None:
    with pytest.raises(ProviderError) as caught:
        dataforseo_ranks.parse(body)
    assert (caught.value.code, caught.value.fatal) == (code, fatal)
