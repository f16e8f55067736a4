"""How the dashboard shows one web-vitals job (issue 28): per URL and form factor, each metric
with its lab value (Lighthouse) and field p75 (CrUX, when collected), each rated against the
published thresholds, which the table states; the opportunities with their savings; the
performance score's history as a chart."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from seojobs.engine.views import Chart, Collected, Column, DashboardView, JobView, Table
from seojobs.kinds.web_vitals.report import METRICS, THRESHOLDS, rating
from seojobs.records import CollectionRecord

NAMES = {
    "lcp": "Largest Contentful Paint",
    "cls": "Cumulative Layout Shift",
    "inp": "Interaction to Next Paint",
    "tbt": "Total Blocking Time",
    "fcp": "First Contentful Paint",
    "speed_index": "Speed Index",
    "ttfb": "Time to First Byte",
}


def _value(metric: str, value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if metric == "cls":
        return f"{value:.3f}"
    return f"{value / 1000:.2f} s" if value >= 1000 else f"{round(value)} ms"


def _thresholds(metric: str) -> str:
    limits = THRESHOLDS.get(metric)
    if limits is None:
        return "no published threshold"
    good, poor = (_value(metric, v) for v in limits)
    return f"good ≤ {good}, poor > {poor}"


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def metrics(collected: Sequence[Collected]) -> list[dict[str, Any]]:
    made = []
    for c in collected:
        data = c.data
        lab, field = _dict(data.get("lab")), _dict(data.get("field"))
        lab_metrics, field_metrics = _dict(lab.get("metrics")), _dict(field.get("metrics"))
        for metric in [*METRICS, *(m for m in field_metrics if m not in METRICS)]:
            measured, seen = _dict(lab_metrics.get(metric)), _dict(field_metrics.get(metric))
            if not measured and not seen:
                continue
            made.append(
                {
                    "url": data.get("url"),
                    "form_factor": data.get("form_factor"),
                    "metric": NAMES.get(metric, metric),
                    "lab": _value(metric, measured.get("value")),
                    "lab_rating": measured.get("rating"),
                    "field": _value(metric, seen.get("p75")),
                    "field_rating": seen.get("rating") or rating(metric, seen.get("p75")),
                    "thresholds": _thresholds(metric),
                }
            )
    return made


def opportunities(collected: Sequence[Collected]) -> list[dict[str, Any]]:
    made = []
    for c in collected:
        data = c.data
        for found in _dict(data.get("lab")).get("opportunities") or []:
            found = _dict(found)
            ms, size = found.get("savings_ms"), found.get("savings_bytes")
            made.append(
                {
                    "url": data.get("url"),
                    "form_factor": data.get("form_factor"),
                    "title": found.get("title") or found.get("id"),
                    "savings_ms": round(ms) if isinstance(ms, int | float) else None,
                    "savings_kib": round(size / 1024) if isinstance(size, int | float) else None,
                }
            )
    return made


def scores(collected: Sequence[Collected]) -> list[dict[str, Any]]:
    return [
        {
            "url": c.data.get("url"),
            "form_factor": c.data.get("form_factor"),
            "score": _dict(c.data.get("lab")).get("performance_score"),
            "previous": None
            if c.before is None
            else _dict(c.before.get("lab")).get("performance_score"),
        }
        for c in collected
    ]


def _score(data: Any) -> float | None:
    found = _dict(_dict(data).get("lab")).get("performance_score")
    return float(found) if isinstance(found, int | float) else None


def _page(data: Any) -> str:
    return f"{_dict(data).get('url')} ({_dict(data).get('form_factor')})"


PAGE = (Column("url", "Page", "url"), Column("form_factor", "Form factor"))


def summary(latest: Sequence[CollectionRecord]) -> tuple[str, list[tuple[str, float]]]:
    """The performance score of each page and form factor (the first ten)."""
    bars = [(_page(c.data), score) for c in latest[:10] if (score := _score(c.data)) is not None]
    return "Performance score (0-100) per page", bars


VIEW = DashboardView(
    title="Web vitals",
    columns=("url", "form_factor", "lab.performance_score"),
    summary=summary,
    job=JobView(
        "Web vitals",
        tables=(
            Table(
                "Performance score",
                (
                    *PAGE,
                    Column("score", "Score (0-100)", "number"),
                    Column("previous", "Previous", "number"),
                ),
                scores,
            ),
            Table(
                "Metrics against their thresholds",
                (
                    *PAGE,
                    Column("metric", "Metric"),
                    Column("lab", "Lab (Lighthouse)"),
                    Column("lab_rating", "Lab rating", "rating"),
                    Column("field", "Field p75 (CrUX)"),
                    Column("field_rating", "Field rating", "rating"),
                    Column("thresholds", "Thresholds (web.dev)"),
                ),
                metrics,
                about="Ratings follow the published Core Web Vitals thresholds; TBT has none "
                "there, so Lighthouse's mobile scoring curve (200 ms, 600 ms) stands in.",
            ),
            Table(
                "Opportunities",
                (
                    *PAGE,
                    Column("title", "Opportunity"),
                    Column("savings_ms", "Saves (ms)", "number"),
                    Column("savings_kib", "Saves (KiB)", "number"),
                ),
                opportunities,
                empty="Lighthouse found no opportunity with savings.",
            ),
        ),
        chart=Chart("Performance score", _score, "Score", top=100, subject_label=_page),
        rerun=True,
    ),
)
