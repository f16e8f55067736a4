"""Backlink analysis reads: the project's last completed analysis of a target (or the newest
of any target), its links, its referring domains and anchors, the links lost since the
analysis before it, and every analysis's summary over time. Never starts a job."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, Field

from seojobs.kinds.domain_lookup.params import normalise_domain
from seojobs.reads import NEWEST_FIRST, Filter, Key, Read, RowMatch, SubjectMatch, data_of, stamp
from seojobs.records import CollectionRecord

KIND = "backlink_analysis"
MAX_COUNT = 2**63 - 1


class LinkOut(BaseModel):
    url_from: str = Field(description="The page the link is on.")
    domain_from: str
    url_to: str = Field(description="The URL it points to.")
    anchor: str | None = Field(description="Its anchor text (an image's alt for image links).")
    item_type: str | None = Field(description="anchor, image, meta, canonical, alternate, redirect")
    dofollow: bool
    rel: list[str] = Field(description="Its rel attributes (nofollow, ugc, sponsored, ...).")
    first_seen: str | None
    last_seen: str | None
    is_lost: bool = Field(description="The index found it removed, or its page gone.")
    is_broken: bool = Field(description="It points to a page that answers 4xx or 5xx.")
    new: bool = Field(description="Live now and not live in the previous analysis.")
    rank: int | None
    domain_from_rank: int | None
    page_from_rank: int | None


class LostLinkOut(LinkOut):
    reason: Literal["lost", "gone"] = Field(
        description="`lost`: the index says removed; `gone`: no longer listed."
    )


class GroupOut(BaseModel):
    backlinks: int | None
    referring_domains: int | None
    referring_pages: int | None
    broken_backlinks: int | None
    rank: int | None
    backlinks_spam_score: int | None
    first_seen: str | None
    lost_date: str | None = Field(description="When its last link was lost (null: live).")


class DomainOut(GroupOut):
    domain: str | None


class AnchorOut(GroupOut):
    anchor: str | None


class Summary(BaseModel):
    backlinks: int | None
    referring_domains: int | None
    referring_main_domains: int | None
    referring_domains_nofollow: int | None
    referring_pages: int | None
    referring_ips: int | None
    broken_backlinks: int | None
    broken_pages: int | None
    rank: int | None
    backlinks_spam_score: int | None
    first_seen: str | None


class Day(BaseModel):
    date: str | None
    new_backlinks: int | None
    lost_backlinks: int | None
    new_referring_domains: int | None
    lost_referring_domains: int | None


class Header(BaseModel):
    job_id: int | None = Field(description="The job that analysed it (null once pruned).")
    collected_at: str
    target: str = Field(description="The domain (without `www.`) or page analysed.")
    provider: str
    include_subdomains: bool
    mode: str
    status: str
    summary: Summary = Field(description="The index's totals for the target.")
    new: int = Field(description="Links live now and not in the previous analysis.")
    lost: int = Field(description="Links live in the previous analysis, lost or gone now.")
    previous_job_id: int | None = Field(description="The analysis compared with (null: first).")
    timeline: list[Day] = Field(description="The index's new and lost links per day (domains).")


class LinkPage(Header):
    data: list[LinkOut]
    next_cursor: str | None


class LostPage(Header):
    data: list[LostLinkOut]
    next_cursor: str | None


class DomainPage(Header):
    data: list[DomainOut]
    next_cursor: str | None


class AnchorPage(Header):
    data: list[AnchorOut]
    next_cursor: str | None


class AnalysisRow(BaseModel):
    job_id: int | None
    collected_at: str
    target: str
    summary: Summary
    new: int
    lost: int
    links: int = Field(description="Links the analysis kept.")


class AnalysisHistory(BaseModel):
    data: list[AnalysisRow]
    next_cursor: str | None


HEADER_FIELDS = tuple(
    name for name in Header.model_fields if name not in ("job_id", "collected_at")
)


def header(found: CollectionRecord) -> dict[str, Any]:
    data = data_of(found)
    return {**stamp(found), **{name: data.get(name) for name in HEADER_FIELDS}}


def history_row(found: CollectionRecord) -> dict[str, Any]:
    data = data_of(found)
    shown = {name: data.get(name) for name in ("target", "summary", "new", "lost")}
    links = data.get("links")
    return {**stamp(found), **shown, "links": len(links) if isinstance(links, list) else 0}


def stored_target(value: str) -> str:
    """A target as a job stored it: a domain normalised (no ``www.``), a URL as given."""
    if "://" in value:
        return value
    try:
        return normalise_domain(value).removeprefix("www.")
    except ValueError:
        return value  # no job took it: nothing is found


def _the_target(value: Any, _values: Mapping[str, Any]) -> list[str]:
    return [str(value)]


TARGET = Filter(
    "target",
    str,
    "The domain or page analysed (default: the newest analysis of any target).",
    SubjectMatch(_the_target),
    prepare=stored_target,
    min_length=1,
    max_length=2048,
)


def _flag(field: str) -> RowMatch:
    def test(row: Mapping[str, Any], wanted: Any) -> bool:
        return bool(row.get(field)) is bool(wanted)

    return RowMatch(test)


def from_domain(row: Mapping[str, Any], wanted: Any) -> bool:
    host = str(row.get("domain_from") or "").lower()
    domain = str(wanted).lower()
    return host == domain or host.endswith("." + domain)


def _least(field: str) -> RowMatch:
    def test(row: Mapping[str, Any], least: Any) -> bool:
        return int(row.get(field) or 0) >= int(least)

    return RowMatch(test)


_RANK = Key("rank", "number", descending=True)
_BY_FROM = Key("url_from")
LINK_FILTERS = (
    TARGET,
    Filter("new", bool, "Only links new (true) or not (false) since the previous analysis.",
           _flag("new")),
    Filter("lost", bool, "Only links the index lists as lost (true) or live (false).",
           _flag("is_lost")),
    Filter("dofollow", bool, "Only dofollow (true) or nofollow (false) links.", _flag("dofollow")),
    Filter(
        "domain_from",
        str,
        "Only links from this host or its subdomains.",
        RowMatch(from_domain),
        max_length=253,
        pattern=r"^[A-Za-z0-9.\-]+$",
    ),
)  # fmt: skip


def _group_read(path: str, operation: str, name: str, row: type[BaseModel], page: Any) -> Read:
    by_name = Key(name)
    return Read(
        path,
        operation,
        KIND,
        row,
        response=page,
        to_row=header,
        source="one",
        elements=name + "s" if name == "anchor" else "referring_domains",
        orders={
            "backlinks": (Key("backlinks", "number", descending=True), by_name),
            "rank": (Key("rank", "number", descending=True), by_name),
            name: (by_name,),
        },
        sort_description=f"Most links or highest rank first, or by {name}.",
        filters=(
            TARGET,
            Filter(
                "min_backlinks",
                int,
                "Only those with at least this many links.",
                _least("backlinks"),
                ge=0,
                le=MAX_COUNT,
            ),
        ),
        description=f"The {name}s linking most to the target in the project's last completed "
        "`backlink_analysis` (of one target with `target`). Never starts a job: 404 until "
        "one has completed.",
        csv=(name, "backlinks", "referring_domains", "rank", "first_seen", "lost_date"),
        tags=("backlinks",),
    )


LINK_CSV = ("url_from", "url_to", "anchor", "dofollow", "first_seen", "last_seen", "is_lost", "new")
READS = (
    Read(
        "backlinks/analysis",
        "list_backlink_analysis",
        KIND,
        LinkOut,
        response=LinkPage,
        to_row=header,
        source="one",
        elements="links",
        orders={
            "rank": (_RANK, _BY_FROM),
            "first_seen": (Key("first_seen", descending=True), _BY_FROM),
            "domain": (Key("domain_from"), _BY_FROM),
        },
        sort_description="Strongest first (the index's rank), newest first, or by domain.",
        filters=LINK_FILTERS,
        description="The links the project's last completed `backlink_analysis` found (of one "
        "target with `target`), with the index's totals, `new` and `lost` since the analysis "
        "before, and `timeline`. Never starts a job: 404 until one has completed.",
        csv=LINK_CSV,
        tags=("backlinks",),
    ),
    Read(
        "backlinks/analysis/lost",
        "list_backlink_analysis_lost",
        KIND,
        LostLinkOut,
        response=LostPage,
        to_row=header,
        source="one",
        elements="lost_links",
        orders={"rank": (_RANK, _BY_FROM)},
        filters=(TARGET,),
        description="The links live in the previous analysis and lost (`reason: lost`) or no "
        "longer listed (`gone`) in the project's last completed `backlink_analysis`.",
        csv=(*LINK_CSV, "reason"),
        tags=("backlinks",),
    ),
    _group_read(
        "backlinks/analysis/referring-domains",
        "list_backlink_referring_domains",
        "domain",
        DomainOut,
        DomainPage,
    ),
    _group_read(
        "backlinks/analysis/anchors", "list_backlink_anchors", "anchor", AnchorOut, AnchorPage
    ),
    Read(
        "backlinks/analysis/history",
        "list_backlink_analysis_history",
        KIND,
        AnalysisRow,
        response=AnalysisHistory,
        to_row=history_row,
        source="history",
        filters=(TARGET,),
        orders=NEWEST_FIRST,
        empty=("rows",),
        summary="Backlink Analysis History",
        description="Every completed analysis's totals, new and lost (of one target with "
        "`target`), newest first. 404 until one has completed.",
        tags=("backlinks",),
    ),
)
