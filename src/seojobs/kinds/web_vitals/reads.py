"""Web-vitals reads: what the project's ``web_vitals`` jobs collected. Never starts one.

Each URL and form factor a job measured is a collection (subject ``"<form factor> <url>"``).
``web-vitals`` serves the latest of each, ``web-vitals/history`` every one (of a URL), newest
first.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, Field

from seojobs.kinds.urls import check_url
from seojobs.kinds.web_vitals.params import subject
from seojobs.reads import (
    NEWEST_FIRST,
    ChangeEvent,
    FieldMatch,
    Filter,
    Key,
    Read,
    SubjectMatch,
    data_of,
    stamp,
)
from seojobs.records import CollectionRecord

FORM_FACTORS = ("mobile", "desktop")
DATA_DESCRIPTION = (
    "`url`, `form_factor`; `lab`: `performance_score` (0-100), `metrics` (lcp, cls, tbt, fcp, "
    "speed_index, ttfb: `value` as Lighthouse reports it, `simulated`, `observed`, `score`, "
    "`rating` good / needs_improvement / poor where web-vitals has thresholds), "
    "`opportunities` (id, title, savings_ms, savings_bytes), `lighthouse_version`, "
    "`run_warnings`, `errored_audits`; `field`: CrUX p75 and histograms with ratings and the "
    "`collection_period` (null without SEOJOBS_CRUX_API_KEY or when CrUX has no data)."
)


class Vitals(BaseModel):
    job_id: int | None = Field(description="The job that collected it (null once pruned).")
    collected_at: str | None
    url: str
    form_factor: str
    data: dict[str, Any] = Field(description=DATA_DESCRIPTION)


class VitalsList(BaseModel):
    data: list[Vitals]


class VitalsPage(BaseModel):
    data: list[Vitals]
    next_cursor: str | None


def row(found: CollectionRecord) -> dict[str, Any]:
    data = data_of(found)
    return {
        **stamp(found),
        "url": data.get("url"),
        "form_factor": data.get("form_factor"),
        "data": data,
    }


def stored(url: str) -> str:
    """The URL as a job stored it (IRIs as the URI they map to)."""
    try:
        return check_url(url)
    except ValueError:
        return url  # no job took it: nothing is found


def _measured(url: Any, values: Mapping[str, Any]) -> list[str]:
    factor = values.get("form_factor")
    return [subject(f, str(url)) for f in ((factor,) if factor else FORM_FACTORS)]


FORM_FACTOR = Filter(
    "form_factor",
    Literal["mobile", "desktop"],
    "Only this form factor.",
    FieldMatch("form_factor"),
    selects=False,
)
URL = Filter(
    "url",
    str,
    "Only this page, as the job's `urls` gave it.",
    SubjectMatch(_measured),
    prepare=stored,
    max_length=2048,
    named="for",
)
READS = (
    Read(
        "web-vitals",
        "get_web_vitals",
        "web_vitals",
        Vitals,
        response=VitalsList,
        to_row=row,
        filters=(FORM_FACTOR,),
        orders={"subject": (Key("subject", "subject"),)},
        paged=False,
        description="The latest measurement of every URL and form factor the project's "
        "completed `web_vitals` jobs measured, with each metric rated. Never starts a job: "
        "404 until one has completed.",
        tags=("web-vitals",),
    ),
    Read(
        "web-vitals/history",
        "list_web_vitals_history",
        "web_vitals",
        Vitals,
        response=VitalsPage,
        to_row=row,
        source="history",
        filters=(URL, FORM_FACTOR),
        orders=NEWEST_FIRST,
        empty=("rows",),
        summary="Web Vitals History",
        description="Every completed measurement of `url` (of every URL without it; of one "
        "form factor, if given), newest first. 404 until one has completed.",
        tags=("web-vitals",),
    ),
)


# -- what changed (webhooks: web_vitals.regressed) --------------------------------------------

RATINGS = ("good", "needs_improvement", "poor")


def _metrics(data: Mapping[str, Any], source: str) -> Mapping[str, Any]:
    part = data.get(source)
    metrics = part.get("metrics") if isinstance(part, dict) else None
    return metrics if isinstance(metrics, dict) else {}


def regressed(before: CollectionRecord | None, after: CollectionRecord) -> dict[str, Any] | None:
    """A metric's rating got worse since the page's previous measurement (good ->
    needs_improvement -> poor), in the lab (Lighthouse) or the field (CrUX p75): ``regressed``
    lists each with its ratings and values before and after."""
    if before is None:
        return None
    old, new = data_of(before), data_of(after)
    found = []
    for source, value in (("lab", "value"), ("field", "p75")):
        was, now = _metrics(old, source), _metrics(new, source)
        for metric in sorted(now):
            a, b = was.get(metric), now.get(metric)
            if not isinstance(a, dict) or not isinstance(b, dict):
                continue
            rated = a.get("rating") in RATINGS and b.get("rating") in RATINGS
            if rated and RATINGS.index(b["rating"]) > RATINGS.index(a["rating"]):
                found.append(
                    {
                        "source": source,
                        "metric": metric,
                        "rating_before": a["rating"],
                        "rating_after": b["rating"],
                        "value_before": a.get(value),
                        "value_after": b.get(value),
                    }
                )
    if not found:
        return None
    return {"url": new.get("url"), "form_factor": new.get("form_factor"), "regressed": found}


CHANGES = (
    ChangeEvent(
        "web_vitals.regressed",
        "web_vitals",
        regressed,
        to_row=row,
        description=regressed.__doc__ or "",
    ),
)
