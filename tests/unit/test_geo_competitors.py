"""GEO competitors (issue 29.4): each competitor's citations and mentions beside the
project's, the brand's order among the tracked names, the share of voice and its weights, and
``geo.visibility_changed`` when a competitor's visibility or the share of voice moves."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from seojobs.kinds.geo_lookup.matching import analyse, summary
from seojobs.kinds.geo_lookup.reads import VisibilityFilters, event_row, moved_enough, visibility
from seojobs.kinds.geo_lookup.voice import points, share_of_voice
from seojobs.providers.ai_search import Answer, Citation
from seojobs.records import CollectionRecord

ZETA = [{"domain": "zeta.example", "names": ["Zeta Tools"]}]
REDIRECT = "https://vertexaisearch.cloud.google.com/grounding-api-redirect/abc"


def answer(text: str, *urls: str) -> Answer:
    return Answer(text, tuple(Citation(u) for u in urls), "m")


def test_a_competitor_is_cited_and_named_beside_the_project_in_order() -> None:
    seen = analyse(
        answer(
            "Zeta-Tools and then ACME; zeta tools again.",
            "https://review.example/",
            "https://blog.zeta.example/x",
            "https://acme.example/",
        ),
        "acme.example",
        ["Acme"],
        "t",
        ZETA,
    )
    assert (seen["citation_position"], seen["brand_position"], seen["mention_count"]) == (3, 2, 1)
    assert seen["competitors"] == [
        {
            "domain": "zeta.example",
            "cited": True,
            "citation_position": 2,
            "mentioned": True,
            "mention_count": 2,
            "mention_position": 1,
        }
    ]


def test_a_redirect_citation_counts_for_the_site_it_names() -> None:
    cited = Answer("Acme.", (Citation(REDIRECT, "acme.example", "acme.example"),), "m")
    seen = analyse(cited, "acme.example", ["Acme"], "t", ZETA)
    assert seen["citations"][0]["domain"] == "acme.example"
    assert seen["citation_position"] == 1 and seen["brand_position"] == 1


def test_a_prompt_summary_gives_each_competitor_its_shares() -> None:
    answers = [
        analyse(
            answer("Zeta Tools.", "https://zeta.example/"), "acme.example", ["Acme"], "t", ZETA
        ),
        analyse(answer("Acme.", "https://acme.example/"), "acme.example", ["Acme"], "t", ZETA),
    ]
    made = summary(answers, ZETA)
    assert made["brand_position"] == 1
    [zeta] = made["competitors"]
    assert (zeta["cited_share"], zeta["mentioned_share"], zeta["citation_position"]) == (
        0.5,
        0.5,
        1,
    )


def test_share_of_voice_weighs_positions_as_documented() -> None:
    row: dict[str, Any] = {
        "prompt": "q",
        "provider": "gemini",
        "cited_share": 1.0,
        "citation_position": 2,
        "mentioned_share": 0.5,
        "brand_position": 1,
        "domain_cited": True,
        "brand_mentioned": True,
        "competitors": [
            {
                "domain": "zeta.example",
                "cited_share": 1.0,
                "citation_position": 1,
                "mentioned_share": 0.0,
                "mention_position": None,
                "cited": True,
                "mentioned": False,
            }
        ],
    }
    assert points(row) == pytest.approx(0.5 * 1.0 / 2 + 0.5 * 0.5 / 1)
    shares = share_of_voice([row], "acme.example", ["zeta.example"])
    assert shares["project"]["share"] == pytest.approx(0.5 / 1.0, abs=1e-4)
    assert shares["competitors"][0]["share"] == pytest.approx(0.5, abs=1e-4)
    assert shares["project"]["by_provider"] == {"gemini": 0.5}
    empty = share_of_voice([], None, [])
    assert (empty["project"]["share"], empty["answers"]) == (0.0, 0)


def record(subject: str, data: dict[str, Any], n: int) -> CollectionRecord:
    return CollectionRecord(n, 1, "geo_lookup", subject, n, data, True, datetime.now(UTC))


def test_a_competitor_overtaking_the_project_is_a_visibility_change() -> None:
    prompt = {"prompt": "q", "provider": "anthropic", "cited_share": 1.0, "mentioned_share": 1.0}
    before = {
        **prompt,
        "competitors": [{"domain": "zeta.example", "cited_share": 0.0, "mentioned_share": 1.0}],
    }
    after = {
        **prompt,
        "competitors": [{"domain": "zeta.example", "cited_share": 1.0, "mentioned_share": 1.0}],
    }
    changed = visibility(record("anthropic q", before, 1), record("anthropic q", after, 2))
    assert changed == {
        "prompt": "q",
        "provider": "anthropic",
        "shares": {},
        "competitors": {
            "zeta.example": {"cited_share": {"before": 0.0, "after": 1.0, "change": 1.0}}
        },
    }
    assert moved_enough(VisibilityFilters(min_change=0.5), changed)
    assert moved_enough(VisibilityFilters(min_change=1.0), changed)
    was = {"project": {"share": 0.8}, "competitors": [{"domain": "zeta.example", "share": 0.2}]}
    now = {"project": {"share": 0.3}, "competitors": [{"domain": "zeta.example", "share": 0.7}]}
    voiced = visibility(record("share-of-voice", was, 3), record("share-of-voice", now, 4))
    assert voiced is not None
    assert voiced["shares"]["share_of_voice"]["change"] == -0.5
    assert voiced["ahead"] == ["zeta.example"]
    assert event_row(record("share-of-voice", now, 4))["project"] == {"share": 0.3}
    assert visibility(record("anthropic q", prompt, 1), record("anthropic q", prompt, 2)) is None
