"""Local rank checks without a network: which listing is the business's (place id, registrable
domain, normalised name), the grid's points and summary, the params' rules, the change
event's comparison, and the reading of SerpApi's, DataForSEO's and Serper's documented
answers (malformed ones, errors and no results included)."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import ValidationError

from seojobs.kinds.local_rank_check import grid
from seojobs.kinds.local_rank_check.declared import centre_point, items, subject
from seojobs.kinds.local_rank_check.match import Business, find, normalised
from seojobs.kinds.local_rank_check.params import LocalRankCheckParams
from seojobs.kinds.local_rank_check.reads import CHANGES, LocalRankFilters
from seojobs.kinds.local_rank_check.run import keyword_row
from seojobs.providers import dataforseo_local, serpapi_local, serper_local
from seojobs.providers.base import ProviderError
from seojobs.providers.local_ranks import LocalQuery, Place, count, number
from seojobs.records import CollectionRecord

# -- matching ---------------------------------------------------------------------------------

ACME = Place(3, "Acme Plumbing - Downtown", "ChIJacme", "111", "https://www.shop.acme.co.uk/x")
LISTED = (
    Place(1, "Acme Plumbingworks", "ChIJother", "222", "https://acme.co.uk.evil.example/"),
    Place(2, "Café Acme", None, None, None),
    ACME,
    Place(4, "Shop", "ChIJsub", None, "https://co.uk/"),
)


@pytest.mark.parametrize(
    ("business", "expected"),
    [
        (Business(place_id="ChIJacme"), (3, "place_id")),
        (Business(place_id="111"), (3, "place_id")),  # the CID
        (Business(place_id="ChIJacme", names=("Café Acme",)), (3, "place_id")),  # id first
        (Business(domain="acme.co.uk"), (3, "domain")),  # not the look-alike host at 1
        (Business(domain="blog.acme.co.uk"), (3, "domain")),  # registrable: acme.co.uk
        (Business(domain="co.uk"), None),  # a public suffix is no one's site
        (Business(names=("CAFE-acme",)), (2, "name")),  # case, accents, punctuation
        (Business(names=("acme plumbing",)), (3, "name")),  # words: not "Plumbingworks"
        (Business(names=("acme plumb",)), None),
        (Business(place_id="nope", domain="none.example"), None),
        (Business(), None),
    ],
)
def test_the_business_is_found_by_place_id_then_domain_then_name(
    business: Business, expected: tuple[int, str] | None
) -> None:
    found = find(LISTED, business)
    got = (found[0].position, found[1]) if found else None
    assert got == expected


def test_names_are_normalised() -> None:
    assert normalised("  Café  DÉJÀ-vu & Co. ") == "cafe deja vu co"
    assert normalised("Straße") == "strasse"


# -- grid -------------------------------------------------------------------------------------


def test_a_grid_is_centred_evenly_spaced_and_a_square_on_the_ground() -> None:
    found = grid.points(60.0, 10.0, 5, 4.0)
    assert len(found) == 25 and found[12] == (60.0, 10.0)
    lat_step = 2.0 / grid.KM_PER_DEGREE  # 4 km over two steps
    assert found[2][0] == round(60.0 + 2 * lat_step, 6)  # the north row first
    assert found[22][0] == round(60.0 - 2 * lat_step, 6)
    # a km of longitude at 60° N is twice the degrees of one at the equator
    assert found[14][1] == round(10.0 + 2 * lat_step / math.cos(math.radians(60)), 6)
    across = grid.points(0.0, 179.99, 3, 5.0)
    assert all(-180 <= lon < 180 for _lat, lon in across)  # wrapped at the antimeridian
    assert grid.points(89.99, 0.0, 3, 50.0)[0][0] == 90.0  # clamped at the pole


def test_a_grids_summary() -> None:
    assert grid.summary([1, 2, 4, None]) == {
        "points_answered": 4,
        "average_position": 2.33,
        "top3_share": 0.5,
        "found_share": 0.75,
    }
    assert grid.summary([None, None]) == {
        "points_answered": 2,
        "average_position": None,
        "top3_share": 0.0,
        "found_share": 0.0,
    }


# -- params -----------------------------------------------------------------------------------


def params(**values: Any) -> LocalRankCheckParams:
    base = {"keywords": ["a"], "latitude": 1.5, "longitude": 2.5, "domain": "Acme.co.uk"}
    return LocalRankCheckParams.model_validate(base | values)


def refused(**values: Any) -> list[str]:
    with pytest.raises(ValidationError) as caught:
        params(**values)
    return [".".join(str(p) for p in e["loc"]) for e in caught.value.errors()]


def test_items_are_keywords_times_points_and_subjects_name_where() -> None:
    made = params(keywords=["Plumber", "plumber", "drain"], grid={"size": 3, "radius_km": 1})
    assert made.keywords == ["Plumber", "drain"] and made.points == 9
    found = items(made)
    assert len(found) == 18 and centre_point(made) == 4
    assert found[4] == {"keyword": "Plumber", "point": 4, "latitude": 1.5, "longitude": 2.5}
    assert subject(made, "Plumber") == "1.5,2.5,14z/en/maps/plumber"
    at_place = params(latitude=None, longitude=None, location="Austin, TX", surface="local_pack")
    assert items(at_place) == [{"keyword": "a", "point": 0, "location": "Austin, TX"}]
    assert subject(at_place, "a") == "austin, tx/en/local_pack/a"


@pytest.mark.parametrize(
    ("values", "field"),
    [
        ({"latitude": None}, "latitude"),
        ({"location": "Austin"}, "location"),
        ({"grid": {"size": 3, "radius_km": 1}, "latitude": None, "longitude": None,
          "location": "Austin"}, "grid"),
        ({"surface": "local_pack"}, "surface"),
        ({"domain": None}, "place_id"),
        ({"grid": {"size": 7, "radius_km": 1}, "keywords": [f"k{n}" for n in range(11)]}, "grid"),
        ({"keywords": [f"k{n}" for n in range(21)]}, "keywords"),
        ({"grid": {"size": 4, "radius_km": 1}}, "grid.size"),
        ({"grid": {"size": 3, "radius_km": 0}}, "grid.radius_km"),
        ({"place_id": "ChIJ x"}, "place_id"),
        ({"zoom": 2}, "zoom"),
    ],
)  # fmt: skip
def test_params_are_refused_naming_the_field(values: dict[str, Any], field: str) -> None:
    assert field in refused(**values)


# -- what a keyword comes to, and its change event --------------------------------------------


def search(point: int, position: int | None) -> dict[str, Any]:
    return {"keyword": "a", "point": point, "latitude": 1.0, "longitude": 2.0,
            "position": position, "provider": "serper", "above": []}  # fmt: skip


def test_a_keyword_is_its_centre_with_its_grid_summed_up() -> None:
    made = params(grid={"size": 3, "radius_km": 1})
    searches = [search(n, p) for n, p in enumerate([1, 2, 3, 4, 5, None, None, 1])]  # 8 of 9
    row = keyword_row(made, searches, failed=1)
    assert row is not None and row["position"] == 5  # point 4, the centre
    assert row["grid"]["points_failed"] == 1 and row["grid"]["points_answered"] == 8
    assert row["grid"]["average_position"] == round(16 / 6, 2)
    assert keyword_row(made, [s for s in searches if s["point"] != 4], failed=2) is None


def collection(n: int, **data: Any) -> CollectionRecord:
    base = {"keyword": "a", "business": {"domain": "acme.co.uk"}, "position": 5, "grid": None}
    return CollectionRecord(n, 1, "local_rank_check", "s", n, base | data, True,
                            datetime.now(UTC))  # fmt: skip


@pytest.mark.parametrize(
    ("before", "after", "change"),
    [
        ({}, {}, None),
        ({}, {"position": 2}, "moved"),
        ({"position": None}, {"position": 2}, "entered"),
        ({}, {"position": None}, "left"),
        ({"grid": {"average_position": 3.0}}, {"grid": {"average_position": 2.5}}, "grid"),
        ({"business": {"domain": "other.example"}}, {"position": 1}, None),  # another business
    ],
)
def test_local_rank_changed_compares_the_centre_and_the_grids_average(
    before: dict[str, Any], after: dict[str, Any], change: str | None
) -> None:
    [event] = CHANGES
    found = event.compare(collection(1, **before), collection(2, **after))
    if change is None:
        assert found is None
    else:
        assert found is not None
        assert found["change"] == (None if change == "grid" else change)
    assert event.compare(None, collection(2)) is None


def test_local_rank_changed_filters() -> None:
    [event] = CHANGES
    assert event.matches is not None
    moved = {"change": "moved", "moved_by": 2, "position_before": 7, "position_after": 5}
    assert event.matches(LocalRankFilters(), moved)
    assert not event.matches(LocalRankFilters(min_change=3), moved)
    assert not event.matches(LocalRankFilters(top=4), moved)
    grid_only = {"change": None, "moved_by": None, "position_before": 5, "position_after": 5}
    assert event.matches(LocalRankFilters(), grid_only)
    assert not event.matches(LocalRankFilters(min_change=2), grid_only)


# -- the providers' answers -------------------------------------------------------------------

POINT = LocalQuery("plumber", "en", latitude=30.1, longitude=-97.2, zoom=13)
PLACE = LocalQuery("plumber", "de", location="Berlin,Germany", zoom=12)


def test_requests_say_where_each_providers_way() -> None:
    assert serpapi_local.request_params(POINT) == {"engine": "google_maps", "type": "search",
        "q": "plumber", "hl": "en", "ll": "@30.1,-97.2,13z"}  # fmt: skip
    assert serpapi_local.request_params(PLACE)["location"] == "Berlin,Germany"
    assert serpapi_local.request_params(PLACE)["z"] == "12"
    pack = LocalQuery("plumber", "en", location="Austin", surface="local_pack")
    assert serpapi_local.request_params(pack) == {"engine": "google", "q": "plumber",
                                                  "hl": "en", "location": "Austin"}  # fmt: skip
    assert dataforseo_local.task_of(POINT)["location_coordinate"] == "30.1,-97.2,13z"
    assert dataforseo_local.task_of(PLACE)["location_name"] == "Berlin,Germany"
    assert dataforseo_local.task_of(LocalQuery("50%+off", "en", "x"))["keyword"] == "50%25%2Boff"
    assert serper_local.request_body(POINT) == {"q": "plumber", "hl": "en", "ll": "@30.1,-97.2,13z"}
    assert serper_local.request_body(PLACE)["location"] == "Berlin,Germany"


def test_serpapi_answers() -> None:
    maps = serpapi_local.parse({"local_results": [
        {"position": 1, "title": "A", "place_id": "ChIJa", "data_cid": "1", "rating": 4.5,
         "reviews": 10, "type": "Plumber", "types": ["Plumber", "Contractor"],
         "website": "https://a.example/"},
        {"title": "B", "reviews": "(1,204)"},
    ]}, "maps")  # fmt: skip
    a, b = maps.places
    assert (a.place_id, a.cid, a.rating, a.reviews, a.categories) == (
        "ChIJa", "1", 4.5, 10, ("Plumber", "Contractor"))  # fmt: skip
    assert (b.position, b.reviews) == (2, 1204)
    one = serpapi_local.parse({"place_results": {"title": "Only", "place_id": "ChIJo"}}, "maps")
    assert [(p.position, p.place_id) for p in one.places] == [(1, "ChIJo")]
    pack = serpapi_local.parse({"local_results": {"places": [
        {"position": 1, "title": "P", "place_id": "9217580661049740855",
         "links": {"website": "https://p.example/"}}]}}, "local_pack")  # fmt: skip
    assert (pack.places[0].cid, pack.places[0].website) == (
        "9217580661049740855",
        "https://p.example/",
    )
    empty = {"error": "Google hasn't returned any results for this query."}
    assert serpapi_local.parse(empty, "maps").places == ()
    for bad, code in [({"error": "Search failed"}, "upstream_error"),
                      ({"local_results": {}}, "malformed_response"),
                      ({"local_results": [{"position": 1}]}, "malformed_response"),
                      ([], "malformed_response")]:  # fmt: skip
        with pytest.raises(ProviderError) as caught:
            serpapi_local.parse(bad, "maps")
        assert caught.value.code == code


def dfs(items: Any, code: int = 20000) -> dict[str, Any]:
    task = {"id": "t1", "status_code": code, "status_message": "x", "cost": 0.002,
            "result": [{"items": items}]}  # fmt: skip
    return {"status_code": 20000, "status_message": "Ok.", "tasks": [task]}


def test_dataforseo_answers() -> None:
    found = dataforseo_local.parse(dfs([
        {"type": "maps_paid_item", "title": "Ad"},
        {"type": "maps_search", "rank_group": 1, "title": "A", "place_id": "ChIJa",
         "cid": "1", "domain": "a.example", "url": None,
         "rating": {"value": 4.2, "votes_count": 7}, "category": "Plumber",
         "additional_categories": ["Contractor"]},
    ]))  # fmt: skip
    [a] = found.places
    assert (a.position, a.website, a.rating, a.reviews, a.categories) == (
        1, "https://a.example/", 4.2, 7, ("Plumber", "Contractor"))  # fmt: skip
    assert found.detail == {"task_id": "t1", "task_cost": 0.002}
    assert dataforseo_local.parse(dfs(None, 40102)).places == ()
    cases = [
        (dfs([], 40100), "provider_auth_failed", True),
        (dfs([], 40210), "provider_quota_exhausted", True),
        (dfs([], 40202), "upstream_error", False),
        (dfs([], 40501), "provider_rejected", False),
        (dfs([{"type": "maps_search"}]), "malformed_response", False),
    ]
    for body, code, fatal in cases:
        with pytest.raises(ProviderError) as caught:
            dataforseo_local.parse(body)
        assert (caught.value.code, caught.value.fatal) == (code, fatal)


def test_serper_answers() -> None:
    place = {"position": 1, "title": "A", "placeId": "ChIJa", "cid": "1", "rating": 4.1,
             "ratingCount": 12, "type": "Plumber", "types": ["Plumber"]}  # fmt: skip
    found = serper_local.parse({"searchParameters": {}, "credits": 3, "places": [place]})
    [a] = found.places
    assert (a.place_id, a.cid, a.reviews, a.categories, found.detail) == (
        "ChIJa", "1", 12, ("Plumber",), {"credits": 3})  # fmt: skip
    assert serper_local.parse({"searchParameters": {}}).places == ()
    for bad in ({}, {"places": {}}, {"places": [{"position": 1}]}, "x"):
        with pytest.raises(ProviderError) as caught:
            serper_local.parse(bad)
        assert caught.value.code == "malformed_response"


def test_values_are_bounded() -> None:
    # (Keys cleared from errors: every adapter's, tests/unit/test_provider_secrets.py.)
    assert (number(True), number(float("nan")), number(4), count(-1), count("12a")) == (
        None, None, 4.0, None, None)  # fmt: skip


def test_names_keep_their_first_spelling_in_order() -> None:
    made = params(names=["Acme", "Beta", "ACME", "Gamma"])
    assert made.names == ["Acme", "Beta", "Gamma"]
