"""The change events the kinds declare (issue 27), on collections built by hand: what each
compares, and the conditions endpoints set. The jobs that make them: test_change_events."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from seojobs.engine.changes import event_data
from seojobs.engine.registry import Kind, Registry
from seojobs.kinds.geo_lookup.reads import CHANGES as GEO
from seojobs.kinds.rank_check.reads import CHANGES as RANKS
from seojobs.kinds.rank_check.reads import RankFilters
from seojobs.kinds.web_vitals.reads import CHANGES as VITALS
from seojobs.reads import ChangeEvent
from seojobs.records import CollectionRecord

AT = datetime(2026, 12, 5, tzinfo=UTC)


def collected(kind: str, n: int, data: dict[str, Any]) -> CollectionRecord:
    return CollectionRecord(n, 1, kind, "s", n, data, True, AT)


def heard(
    event: ChangeEvent, before: Any, after: Any, filters: Any = None
) -> dict[str, Any] | None:
    old = collected(event.kind, 1, before) if before is not None else None
    new = collected(event.kind, 2, after)
    changed = event.compare(old, new)
    if changed is None:
        return None
    data = event_data(event, old, new, changed)
    conditions = filters or (event.filters() if event.filters else None)
    if event.matches is not None and not event.matches(conditions, data):
        return None
    return data


def rank(position: int | None, *features: str, target: str = "example.com") -> dict[str, Any]:
    return {"keyword": "k", "target": target, "match": "domain", "position": position,
            "features": list(features)}  # fmt: skip


@pytest.mark.parametrize(
    ("before", "after", "filters", "change"),
    [
        (rank(8), rank(3), None, "moved"),
        (rank(None), rank(40), None, "entered"),
        (rank(2), rank(None), RankFilters(min_change=50), "left"),
        (rank(3, "people_also_ask"), rank(3, "featured_snippet"), None, None),
        (rank(3), rank(3, "videos"), RankFilters(min_change=2), "not sent"),
        (rank(8), rank(6), RankFilters(min_change=3), "not sent"),
        (rank(30), rank(12), RankFilters(top=10), "not sent"),
        (rank(11), rank(10), RankFilters(top=10), "moved"),
        (rank(5), rank(5), None, "not sent"),
        (rank(5), rank(3, target="other.com"), None, "not sent"),  # another target's check
    ],
)
def test_rank_changed(before: Any, after: Any, filters: Any, change: str | None) -> None:
    [event] = RANKS
    data = heard(event, before, after, filters)
    if change == "not sent":
        assert data is None
        return
    assert data is not None and data["change"] == change
    assert (data["before"]["position"], data["after"]["position"]) == (
        before["position"],
        after["position"],
    )


def test_rank_features_won_and_lost() -> None:
    [event] = RANKS
    data = heard(event, rank(3, "people_also_ask"), rank(3, "featured_snippet"))
    assert data is not None
    assert (data["features_won"], data["features_lost"]) == (
        ["featured_snippet"],
        ["people_also_ask"],
    )


def test_the_first_check_of_a_keyword_sends_nothing() -> None:
    [event] = RANKS
    assert heard(event, None, rank(3)) is None


def vitals(lcp: str, cls: str, field_lcp: str | None = None) -> dict[str, Any]:
    lab = {"metrics": {"lcp": {"value": 1.0, "rating": lcp}, "cls": {"value": 0.1, "rating": cls}}}
    field = {"metrics": {"lcp": {"p75": 2.0, "rating": field_lcp}}} if field_lcp else None
    return {"url": "https://example.com/", "form_factor": "mobile", "lab": lab, "field": field}


def test_web_vitals_regressed_names_each_metric_whose_rating_got_worse() -> None:
    [event] = VITALS
    data = heard(event, vitals("good", "poor", "good"), vitals("poor", "good", "needs_improvement"))
    assert data is not None
    assert [
        (r["source"], r["metric"], r["rating_before"], r["rating_after"]) for r in data["regressed"]
    ] == [
        ("lab", "lcp", "good", "poor"),
        ("field", "lcp", "good", "needs_improvement"),
    ]
    assert heard(event, vitals("poor", "poor"), vitals("good", "needs_improvement")) is None
    assert heard(event, None, vitals("poor", "poor")) is None


def geo(cited: float, mentioned: float) -> dict[str, Any]:
    return {"prompt": "p", "provider": "openai", "cited_share": cited, "mentioned_share": mentioned}


def test_geo_visibility_changed_when_a_share_moved_by_the_endpoints_minimum() -> None:
    [event] = GEO
    assert event.filters is not None
    data = heard(event, geo(0.5, 1.0), geo(0.25, 1.0))
    assert data is not None and data["shares"] == {
        "cited_share": {"before": 0.5, "after": 0.25, "change": -0.25}
    }
    assert heard(event, geo(0.5, 1.0), geo(0.25, 1.0), event.filters(min_change=0.5)) is None
    assert heard(event, geo(0.5, 1.0), geo(0.5, 1.0)) is None


def test_an_event_type_is_declared_once() -> None:
    [event] = RANKS

    async def run(_ctx: Any) -> None:
        return None

    registry = Registry()
    first = Kind("a", RankFilters, run, changes=(ChangeEvent("x.changed", "a", event.compare),))
    registry.add(first)
    twice = Kind("b", RankFilters, run, changes=(ChangeEvent("x.changed", "b", event.compare),))
    with pytest.raises(ValueError, match="declared twice"):
        registry.add(twice)
    elsewhere = Kind("c", RankFilters, run, changes=(ChangeEvent("y.changed", "a", event.compare),))
    with pytest.raises(ValueError, match="names kind"):
        registry.add(elsewhere)
    assert list(registry.change_events()) == ["x.changed"]
