"""What changed between two analyses of a target (webhooks, issue 27): links the index lists
now and did not before (``backlink_analysis.new``), and links live before that are lost or no
longer listed (``backlink_analysis.lost``). The links a donor page has or not are
``backlink_refresh``'s events (``backlink.*``); these are the index's view, one event per
analysis with the links in it. The first analysis of a target sends none."""

from __future__ import annotations

from typing import Any

from seojobs.kinds.backlink_analysis.declared import compared
from seojobs.kinds.backlink_analysis.reads import KIND, header
from seojobs.reads import ChangeEvent, data_of
from seojobs.records import CollectionRecord

MAX_LISTED = 100  # links an event lists (the counts are whole; the reads page the rest)
LISTED_FIELDS = ("url_from", "url_to", "anchor", "dofollow", "first_seen", "rank")


def _listed(link: dict[str, Any], *extra: str) -> dict[str, Any]:
    return {name: link.get(name) for name in (*LISTED_FIELDS, *extra)}


def _compared(
    before: CollectionRecord | None, after: CollectionRecord
) -> tuple[str, list[dict[str, Any]], list[Any]] | None:
    if before is None:
        return None
    now = data_of(after)
    links = [link for link in now.get("links") or [] if isinstance(link, dict)]
    marked, lost = compared([{**link, "is_lost": bool(link.get("is_lost"))} for link in links],
                            data_of(before))  # fmt: skip
    return str(now.get("target")), marked, lost


def new(before: CollectionRecord | None, after: CollectionRecord) -> dict[str, Any] | None:
    """The index lists links live now that the previous analysis of the target did not:
    ``new`` (how many) and ``links`` (the strongest 100: ``url_from``, ``url_to``,
    ``anchor``, ``dofollow``, ``first_seen``, ``rank``)."""
    found = _compared(before, after)
    if found is None:
        return None
    target, marked, _lost = found
    fresh = [link for link in marked if link["new"]]
    if not fresh:
        return None
    return {"target": target, "new": len(fresh), "links": [_listed(x) for x in fresh[:MAX_LISTED]]}


def lost(before: CollectionRecord | None, after: CollectionRecord) -> dict[str, Any] | None:
    """Links live in the previous analysis of the target are lost now: ``lost`` (how many)
    and ``links`` (the first 100, each with ``reason``: ``lost``, the index saw it removed, or
    ``gone``, no longer listed)."""
    found = _compared(before, after)
    if found is None:
        return None
    target, _marked, gone = found
    if not gone:
        return None
    shown = [_listed(x, "reason") for x in gone[:MAX_LISTED]]
    return {"target": target, "lost": len(gone), "links": shown}


CHANGES = (
    ChangeEvent(f"{KIND}.new", KIND, new, to_row=header, description=new.__doc__ or ""),
    ChangeEvent(f"{KIND}.lost", KIND, lost, to_row=header, description=lost.__doc__ or ""),
)
