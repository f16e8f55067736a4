"""A Lighthouse report in our shape, on a report recorded from a real run (Lighthouse 12.2.3,
Debian Chromium 156, a loopback page; trimmed to the fields read): metrics at the documented
JSON paths, failing opportunities with their savings, runtime errors as coded failures, the
web-vitals thresholds, CrUX answers, and Chromium's resolver rules."""

from __future__ import annotations

import copy
import ipaddress
import json
from pathlib import Path
from typing import Any

import pytest

from seojobs.kinds.web_vitals.measure import resolver_rules
from seojobs.kinds.web_vitals.report import LighthouseFailed, lab, rate_field, rating
from seojobs.providers.base import ProviderError
from seojobs.providers.crux import parse_record

RECORDED: dict[str, Any] = json.loads(
    (Path(__file__).parent / "lighthouse_report.json").read_text(encoding="utf-8")
)


def test_the_metrics_are_read_at_the_documented_paths() -> None:
    got = lab(RECORDED)
    audits = RECORDED["audits"]
    summary = audits["metrics"]["details"]["items"][0]
    assert got["performance_score"] == 100
    assert got["lighthouse_version"] == "12.2.3"
    assert got["form_factor"] == "mobile"
    assert got["throttling_method"] == "simulate"
    for name, audit in [
        ("lcp", "largest-contentful-paint"),
        ("cls", "cumulative-layout-shift"),
        ("tbt", "total-blocking-time"),
        ("fcp", "first-contentful-paint"),
        ("speed_index", "speed-index"),
        ("ttfb", "server-response-time"),
    ]:
        assert got["metrics"][name]["value"] == audits[audit]["numericValue"], name
    lcp = got["metrics"]["lcp"]
    assert lcp["observed"] == summary["observedLargestContentfulPaint"]
    assert lcp["simulated"] == summary["largestContentfulPaint"]
    assert got["metrics"]["ttfb"]["simulated"] == summary["timeToFirstByte"]
    assert got["metrics"]["ttfb"]["observed"] == audits["server-response-time"]["numericValue"]
    assert got["metrics"]["tbt"]["observed"] is None  # Lighthouse observes no TBT
    assert got["opportunities"] == []  # the small page fails none
    assert got["run_warnings"] == []


def test_failing_opportunities_are_kept_with_their_savings_largest_first() -> None:
    report = copy.deepcopy(RECORDED)
    report["audits"]["unused-javascript"].update(
        score=0.5,
        details={"type": "opportunity", "overallSavingsMs": 300, "overallSavingsBytes": 40000},
    )
    report["audits"]["uses-text-compression"].update(
        score=0,
        details={"type": "opportunity", "overallSavingsMs": 900, "overallSavingsBytes": 0},
    )
    # Passing (score >= 0.9) or saving nothing: not an opportunity.
    report["audits"]["unminified-css"].update(
        score=0.95, details={"type": "opportunity", "overallSavingsMs": 20}
    )
    found = lab(report)["opportunities"]
    assert [(o["id"], o["savings_ms"], o["savings_bytes"]) for o in found] == [
        ("uses-text-compression", 900.0, 0.0),
        ("unused-javascript", 300.0, 40000.0),
    ]


def test_a_runtime_error_or_no_report_is_a_coded_failure() -> None:
    report = copy.deepcopy(RECORDED)
    report["runtimeError"] = {"code": "NO_FCP", "message": "The page did not paint any content."}
    with pytest.raises(LighthouseFailed) as failed:
        lab(report)
    assert failed.value.code == "lighthouse_error"
    assert "NO_FCP" in failed.value.message
    with pytest.raises(LighthouseFailed):
        lab({"lighthouseVersion": "12.2.3"})
    report = copy.deepcopy(RECORDED)
    report["categories"]["performance"]["score"] = None  # Lighthouse's score of a failed run
    with pytest.raises(LighthouseFailed):
        lab(report)


def test_run_warnings_and_errored_audits_are_reported() -> None:
    # 12.2.3 with Chromium 156: six trace-based audits error (browser_feasibility.md §3); the
    # core metrics and the score are sound.
    assert lab(RECORDED)["errored_audits"] == [
        "largest-contentful-paint-element",
        "layout-shifts",
        "lcp-lazy-loaded",
        "non-composited-animations",
        "prioritize-lcp-image",
        "render-blocking-resources",
    ]
    report = copy.deepcopy(RECORDED)
    report["runWarnings"] = ["The page loaded too slowly to finish within the time limit."]
    report["audits"]["speed-index"]["scoreDisplayMode"] = "error"
    got = lab(report)
    assert got["run_warnings"] == report["runWarnings"]
    assert "speed-index" in got["errored_audits"] and len(got["errored_audits"]) == 7


@pytest.mark.parametrize(
    ("metric", "value", "wanted"),
    [
        ("lcp", 2500, "good"),
        ("lcp", 2501, "needs_improvement"),
        ("lcp", 4001, "poor"),
        ("cls", 0.1, "good"),
        ("cls", 0.25, "needs_improvement"),
        ("cls", 0.26, "poor"),
        ("inp", 200, "good"),
        ("inp", 501, "poor"),
        ("fcp", 1800, "good"),
        ("fcp", 3000, "needs_improvement"),
        ("ttfb", 800, "good"),
        ("ttfb", 1801, "poor"),
        ("tbt", 200, "good"),
        ("tbt", 600, "needs_improvement"),
        ("tbt", 601, "poor"),
        ("speed_index", 1000, None),
        ("lcp", None, None),
    ],
)
def test_ratings_follow_the_web_vitals_thresholds(
    metric: str, value: float | None, wanted: str | None
) -> None:
    assert rating(metric, value) == wanted


def test_a_crux_record_is_parsed_and_rated() -> None:
    answer = {
        "record": {
            "key": {"url": "https://example.com/", "formFactor": "PHONE"},
            "metrics": {
                "cumulative_layout_shift": {
                    "histogram": [
                        {"start": "0.00", "end": "0.10", "density": 0.8},
                        {"start": "0.10", "end": "0.25", "density": 0.1},
                        {"start": "0.25", "density": 0.1},
                    ],
                    "percentiles": {"p75": "0.12"},
                },
                "largest_contentful_paint": {"histogram": [], "percentiles": {"p75": 1900}},
                "round_trip_time": {"percentiles": {"p75": 120}},  # not one we keep
            },
            "collectionPeriod": {
                "firstDate": {"year": 2026, "month": 1, "day": 2},
                "lastDate": {"year": 2026, "month": 1, "day": 29},
            },
        }
    }
    field = rate_field(parse_record(answer))
    assert field is not None
    assert set(field["metrics"]) == {"cls", "lcp"}
    assert field["metrics"]["cls"]["p75"] == 0.12
    assert field["metrics"]["cls"]["rating"] == "needs_improvement"
    assert field["metrics"]["cls"]["histogram"][2] == {"start": 0.25, "end": None, "density": 0.1}
    assert field["metrics"]["lcp"]["rating"] == "good"
    assert field["collection_period"] == {"first_date": "2026-01-02", "last_date": "2026-01-29"}
    with pytest.raises(ProviderError):
        parse_record({"error": {"code": 404}})


def test_chromium_is_held_to_the_checked_address() -> None:
    v4 = (ipaddress.ip_address("93.184.215.14"),)
    v6 = (ipaddress.ip_address("2606:2800:21f:cb07:6820:80da:af6b:8b2c"),)
    assert resolver_rules("example.com", v4) == "MAP example.com 93.184.215.14, MAP * ~NOTFOUND"
    assert resolver_rules("example.com", v6) == (
        "MAP example.com [2606:2800:21f:cb07:6820:80da:af6b:8b2c], MAP * ~NOTFOUND"
    )
    assert resolver_rules("93.184.215.14", v4) == "MAP * ~NOTFOUND, EXCLUDE 93.184.215.14"
