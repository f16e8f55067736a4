"""What a Lighthouse report (JSON, 12.x) says, in our shape, and how the vitals rate.

JSON paths: reference/browser_feasibility.md §3 and reference/seo_jobs.md §5.1. The headline
values (``audits[id].numericValue``) are Lantern's simulation under the default throttling;
``audits.metrics.details.items[0]`` also carries the ``observed*`` values of the page as
loaded, kept beside them.
"""

from __future__ import annotations

from typing import Any

from seojobs.browsers.slots import BrowserFailed

# Our name -> (the audit, the simulated key and the observed key in ``metrics``). Lighthouse
# has no observed TBT; TTFB's audit (server-response-time) is itself the observed value.
METRICS: dict[str, tuple[str, str, str | None]] = {
    "lcp": ("largest-contentful-paint", "largestContentfulPaint", "observedLargestContentfulPaint"),
    "cls": ("cumulative-layout-shift", "cumulativeLayoutShift", "observedCumulativeLayoutShift"),
    "tbt": ("total-blocking-time", "totalBlockingTime", None),
    "fcp": ("first-contentful-paint", "firstContentfulPaint", "observedFirstContentfulPaint"),
    "speed_index": ("speed-index", "speedIndex", "observedSpeedIndex"),
    "ttfb": ("server-response-time", "timeToFirstByte", None),
}

# web-vitals thresholds (good up to the first, poor above the second). TBT has none in
# web-vitals: Lighthouse's mobile scoring curve has its p10 at 200 ms and median at 600 ms.
THRESHOLDS: dict[str, tuple[float, float]] = {
    "lcp": (2500, 4000),
    "cls": (0.1, 0.25),
    "inp": (200, 500),
    "fcp": (1800, 3000),
    "ttfb": (800, 1800),
    "tbt": (200, 600),
}
GOOD, NEEDS_IMPROVEMENT, POOR = "good", "needs_improvement", "poor"


# The report says the run failed (``runtimeError``) or is not a report at all; or the slot
# failed (timeout, dead worker): one error for both.
LighthouseFailed = BrowserFailed


def rating(metric: str, value: float | None) -> str | None:
    """good / needs_improvement / poor for a metric with thresholds; None otherwise."""
    limits = THRESHOLDS.get(metric)
    if limits is None or value is None:
        return None
    if value <= limits[0]:
        return GOOD
    return NEEDS_IMPROVEMENT if value <= limits[1] else POOR


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _opportunities(audits: dict[str, Any]) -> list[dict[str, Any]]:
    """Audits that failed (score < 0.9) and estimate savings, largest saving first."""
    found = []
    for audit_id, audit in audits.items():
        if not isinstance(audit, dict):
            continue
        details = audit.get("details") or {}
        score = _num(audit.get("score"))
        savings_ms = _num(details.get("overallSavingsMs"))
        savings_bytes = _num(details.get("overallSavingsBytes"))
        if details.get("type") != "opportunity" or score is None or score >= 0.9:
            continue
        if not savings_ms and not savings_bytes:
            continue
        found.append(
            {
                "id": audit_id,
                "title": audit.get("title"),
                "score": score,
                "display_value": audit.get("displayValue"),
                "savings_ms": savings_ms,
                "savings_bytes": savings_bytes,
            }
        )
    return sorted(found, key=lambda o: (-(o["savings_ms"] or 0), -(o["savings_bytes"] or 0)))


def _check(report: Any) -> dict[str, Any]:
    if not isinstance(report, dict) or not isinstance(report.get("audits"), dict):
        raise LighthouseFailed("lighthouse_error", "Lighthouse wrote no report")
    error = report.get("runtimeError")
    if isinstance(error, dict) and error.get("code"):
        message = f"Lighthouse: {error.get('code')}: {error.get('message', '')}".strip()
        raise LighthouseFailed("lighthouse_error", message)
    return report


def lab(report: Any) -> dict[str, Any]:
    """The lab data of one run: score, metrics (value, observed, simulated, rating),
    opportunities, Lighthouse version, warnings. Raises :class:`LighthouseFailed`."""
    report = _check(report)
    audits: dict[str, Any] = report["audits"]
    items = ((audits.get("metrics") or {}).get("details") or {}).get("items") or [{}]
    summary = items[0] if isinstance(items[0], dict) else {}
    metrics: dict[str, Any] = {}
    for name, (audit_id, simulated, observed) in METRICS.items():
        audit = audits.get(audit_id) or {}
        value = _num(audit.get("numericValue"))
        metrics[name] = {
            "value": value,
            "score": _num(audit.get("score")),
            "simulated": _num(summary.get(simulated)),
            "observed": _num(summary.get(observed)) if observed else None,
            "rating": rating(name, value),
        }
    metrics["ttfb"]["observed"] = metrics["ttfb"]["value"]
    performance = (report.get("categories") or {}).get("performance") or {}
    score = _num(performance.get("score"))
    if score is None:
        raise LighthouseFailed("lighthouse_error", "the report has no performance score")
    settings = report.get("configSettings") or {}
    errored = sorted(
        audit_id
        for audit_id, audit in audits.items()
        if isinstance(audit, dict) and audit.get("scoreDisplayMode") == "error"
    )
    return {
        "performance_score": round(score * 100),
        "metrics": metrics,
        "opportunities": _opportunities(audits),
        "lighthouse_version": report.get("lighthouseVersion"),
        "user_agent": (report.get("environment") or {}).get("hostUserAgent"),
        "final_url": report.get("finalDisplayedUrl"),
        "form_factor": settings.get("formFactor"),
        "throttling_method": settings.get("throttlingMethod"),
        "run_warnings": [str(w) for w in report.get("runWarnings") or []],
        "errored_audits": errored,
        "fetched_at": report.get("fetchTime"),
    }


def rate_field(field: dict[str, Any] | None) -> dict[str, Any] | None:
    """CrUX field data with each metric's p75 rated."""
    if field is None:
        return None
    metrics = {
        name: {**values, "rating": rating(name, values.get("p75"))}
        for name, values in (field.get("metrics") or {}).items()
    }
    return {**field, "metrics": metrics}
