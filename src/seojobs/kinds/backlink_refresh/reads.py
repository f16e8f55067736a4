"""Backlink reads: what the project's ``backlink_refresh`` jobs collected. Never starts one.

Each (donor, target) pair a job checked is a collection (subject: normalised donor, a space,
normalised target). ``backlinks`` serves the latest of every pair in subject order; its cursor
keeps the pairs as they stood at the first page. ``backlinks/history`` serves every check (of
one pair, or of one donor's or one target's pairs), newest first. Donors and targets are
matched loosely (scheme, ``www.``, a trailing slash, tracking parameters), which no SQL can
say: those filters test the rows in page order, before the page is cut.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, Field

from seojobs.kinds.backlink_refresh.match import host_of, on_site, same_page
from seojobs.kinds.backlink_refresh.params import normalised
from seojobs.kinds.urls import check_url
from seojobs.reads import (
    NEWEST_FIRST,
    ChangeEvent,
    FieldMatch,
    Filter,
    Key,
    Read,
    RowMatch,
    data_of,
    stamp,
)
from seojobs.records import CollectionRecord

HISTORY_FIELDS = ("first_seen", "last_checked", "last_changed", "previous_status")
DATA_DESCRIPTION = (
    "The check: `donor`, `target`, `match`, `link_status`, `reason`; the link that counts "
    "(the first without nofollow/sponsored/ugc, else the first): `href_raw`, `href`, `rel` "
    "(tokens, lowercased), `anchor_text` (or the image's alt), `is_image_link`, `nofollow` "
    "(its rel or the page's); `page_nofollow` (meta robots or X-Robots-Tag), "
    "`link_count_to_target`, `links` (up to 20 matching links); the donor: `status_code`, "
    "`final_url`, `redirect_chain`, `indexable`, `indexability_reason`, `canonical`, "
    "`canonical_state`, `robots_txt_state`, `fetch_error_kind`; `checked_at` and the history "
    "fields."
)


class Backlink(BaseModel):
    job_id: int | None = Field(description="The job that checked it (null once pruned).")
    collected_at: str | None
    donor: str
    target: str
    link_status: str = Field(description="found, missing, donor_error, donor_redirected, blocked")
    first_seen: str | None = Field(description="When the link was first found (null: never).")
    last_checked: str | None
    last_changed: str | None = Field(
        description="When `link_status` took its value (the first check, or the one that saw "
        "it change)."
    )
    previous_status: str | None = Field(description="`link_status` before its last change.")
    data: dict[str, Any] = Field(description=DATA_DESCRIPTION)


class BacklinkPage(BaseModel):
    data: list[Backlink]
    next_cursor: str | None


def row(found: CollectionRecord) -> dict[str, Any]:
    data = data_of(found)
    return {
        **stamp(found),
        "donor": data.get("donor"),
        "target": data.get("target"),
        "link_status": data.get("link_status"),
        **{name: data.get(name) for name in HISTORY_FIELDS},
        "data": data,
    }


def stored(url: str) -> str:
    """The URL as a job stored it (IRIs as the URI they map to), normalised."""
    try:
        return normalised(check_url(url))
    except ValueError:
        return url  # no job took it: nothing is found


def _same(field: str) -> RowMatch:
    def test(data: Mapping[str, Any], wanted: Any) -> bool:
        return same_page(str(data.get(field) or ""), str(wanted))

    return RowMatch(test)


def _donor_on(data: Mapping[str, Any], domain: Any) -> bool:
    host = host_of(str(data.get("donor") or ""))
    return host is not None and on_site(host, str(domain))


LINK_STATUS = Filter(
    "link_status",
    Literal["found", "missing", "donor_error", "donor_redirected", "blocked"],
    "Only pairs whose latest check has this `link_status`.",
    FieldMatch("link_status"),
)
TARGET = Filter(
    "target",
    str,
    "Only pairs of this target (scheme, `www.`, a trailing slash and tracking parameters ignored).",
    _same("target"),
    prepare=stored,
    max_length=2048,
)
DONOR_DOMAIN = Filter(
    "donor_domain",
    str,
    "Only pairs whose donor is on this host or its subdomains (`www.` ignored).",
    RowMatch(_donor_on),
    max_length=253,
    pattern=r"^[A-Za-z0-9.\-]+$",
)
PAIR = (
    "Only checks of this donor / target, as the job's params gave them (both: one pair's history)."
)
READS = (
    Read(
        "backlinks",
        "list_backlinks",
        "backlink_refresh",
        Backlink,
        response=BacklinkPage,
        to_row=row,
        filters=(LINK_STATUS, TARGET, DONOR_DOMAIN),
        orders={"subject": (Key("subject", "subject"),)},
        description="The latest check of every (donor, target) pair the project's completed "
        "`backlink_refresh` jobs checked, in donor order, with `first_seen`, `last_checked` "
        "and `last_changed`. Never starts a job: 404 until one has completed.",
        tags=("backlinks",),
    ),
    Read(
        "backlinks/history",
        "list_backlink_history",
        "backlink_refresh",
        Backlink,
        response=BacklinkPage,
        to_row=row,
        source="history",
        filters=(
            Filter(
                "donor", str, PAIR, _same("donor"), prepare=stored, max_length=2048, named="for"
            ),
            Filter(
                "target", str, PAIR, _same("target"), prepare=stored, max_length=2048, named="to"
            ),
        ),
        orders=NEWEST_FIRST,
        empty=("rows",),
        summary="Backlink History",
        description="Every completed check of one (donor, target) pair (of one donor's or one "
        "target's pairs, or of every pair), newest first. 404 until one has completed.",
        tags=("backlinks",),
    ),
)


# -- what changed (webhooks: backlink.lost, backlink.new, backlink.changed) ------------------

# Why a link that was found is not any more, by the pair's new status.
LOST_REASONS = {
    "missing": "link_removed",
    "donor_error": "page_gone",
    "donor_redirected": "page_gone",
    "blocked": "blocked",
}


def _pair(before: CollectionRecord | None, after: CollectionRecord) -> tuple[Any, Any] | None:
    if before is None:
        return None
    return data_of(before), data_of(after)


def _about(new: Mapping[str, Any]) -> dict[str, Any]:
    return {"donor": new.get("donor"), "target": new.get("target")}


def lost(before: CollectionRecord | None, after: CollectionRecord) -> dict[str, Any] | None:
    """A link found at the previous check is not found now: ``reason`` is ``link_removed``
    (the page no longer links), ``page_gone`` (no page, or it redirects elsewhere) or
    ``blocked`` (robots.txt keeps us out); ``detail`` says it in words."""
    pair = _pair(before, after)
    if pair is None or pair[0].get("link_status") != "found":
        return None
    status = pair[1].get("link_status")
    if status == "found":
        return None
    reason = LOST_REASONS.get(str(status), "page_gone")
    return {**_about(pair[1]), "reason": reason, "detail": pair[1].get("reason")}


def new(before: CollectionRecord | None, after: CollectionRecord) -> dict[str, Any] | None:
    """A link not found at the previous check is found now (``reason``: ``link_added``, or
    ``page_back`` when the donor gave no page before). The first check of a pair sends none."""
    pair = _pair(before, after)
    if pair is None or pair[1].get("link_status") != "found":
        return None
    status = pair[0].get("link_status")
    if status == "found":
        return None
    reason = "link_added" if status == "missing" else "page_back"
    return {**_about(pair[1]), "reason": reason, "detail": pair[1].get("reason")}


def changed(before: CollectionRecord | None, after: CollectionRecord) -> dict[str, Any] | None:
    """A link found at both checks that is now nofollow (``now_nofollow``) or followed
    (``now_followed``), or whose donor is now noindex (``now_noindex``) or indexable
    (``now_indexable``): ``reasons`` lists them."""
    pair = _pair(before, after)
    if pair is None or {pair[0].get("link_status"), pair[1].get("link_status")} != {"found"}:
        return None
    old, now = pair
    reasons = []
    if bool(old.get("nofollow")) != bool(now.get("nofollow")):
        reasons.append("now_nofollow" if now.get("nofollow") else "now_followed")
    if old.get("indexable") is not False and now.get("indexable") is False:
        reasons.append("now_noindex")
    elif old.get("indexable") is False and now.get("indexable") is True:
        reasons.append("now_indexable")
    return {**_about(now), "reasons": reasons} if reasons else None


CHANGES = (
    ChangeEvent(
        "backlink.lost", "backlink_refresh", lost, to_row=row, description=lost.__doc__ or ""
    ),
    ChangeEvent("backlink.new", "backlink_refresh", new, to_row=row, description=new.__doc__ or ""),
    ChangeEvent(
        "backlink.changed",
        "backlink_refresh",
        changed,
        to_row=row,
        description=changed.__doc__ or "",
    ),
)
