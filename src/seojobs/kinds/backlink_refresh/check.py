"""One pair's check: the donor fetched (robots.txt first) and diagnosed, its links read, the
target looked for among them; and what the pair's history makes of it.

``link_status``: ``found`` / ``missing`` (the donor answered with an HTML page that does or
does not link to the target), ``blocked`` (robots.txt disallows our user agent on the donor),
``donor_redirected`` (the donor redirected to another page: the links are that page's, but
the link is no longer where it was placed), ``donor_error`` (no page: a fetch error, robots.txt
unreachable, an HTTP error status, or a document that is not HTML).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from seojobs.fetch import Diagnostics, FetchResult, RobotsVerdict, diagnose
from seojobs.kinds.backlink_refresh.links import Link, parse_links, resolve
from seojobs.kinds.backlink_refresh.match import matches, same_page
from seojobs.kinds.backlink_refresh.params import (
    BLOCKED,
    DONOR_ERROR,
    DONOR_REDIRECTED,
    FOUND,
    MISSING,
)

QUALIFIERS = frozenset({"nofollow", "sponsored", "ugc"})  # the rel values Google defines
MAX_LISTED = 20  # matching links listed per pair (all are counted)


@dataclass(frozen=True)
class DonorPage:
    """What a donor's fetch gave: its diagnostics, robots.txt's verdict and its links (each
    with its absolute URL). Kept per job, so pairs that share a donor fetch it once."""

    diagnostics: Diagnostics
    robots: RobotsVerdict | None
    links: tuple[tuple[Link, str], ...]
    is_html: bool

    @classmethod
    def of(cls, fetched: FetchResult, robots: RobotsVerdict | None) -> DonorPage:
        diagnostics = diagnose(fetched, robots)
        links: list[tuple[Link, str]] = []
        if fetched.ok and fetched.is_html:
            found = parse_links(fetched.text)
            for link in found.links:
                url = resolve(fetched.final_url, found.base_href, link.href)
                if url is not None:
                    links.append((link, url))
        return cls(diagnostics, robots, tuple(links), fetched.ok and fetched.is_html)

    @property
    def page_nofollow(self) -> bool:
        d = self.diagnostics
        return d.meta_robots.nofollow() or d.x_robots_tag.nofollow()


def _unreachable(page: DonorPage) -> tuple[str, str] | None:
    """(status, reason) when the donor gave no page to read."""
    d, robots = page.diagnostics, page.robots
    if d.fetch_error_kind is not None:
        return DONOR_ERROR, d.verdict_reason
    if d.http_status is None:  # not fetched: robots.txt kept us out
        if robots is not None and robots.state == "unreachable":
            return DONOR_ERROR, d.verdict_reason
        agent = robots.user_agent if robots is not None else "our user agent"
        return BLOCKED, f"robots.txt disallows {agent} on the donor"
    if d.http_status >= 300:
        return DONOR_ERROR, f"HTTP {d.http_status}"
    if not page.is_html:
        return DONOR_ERROR, f"Not an HTML page ({d.content_type or 'no content type'})"
    return None


def link_status(page: DonorPage, donor: str, found: bool) -> tuple[str, str]:
    unreachable = _unreachable(page)
    if unreachable is not None:
        return unreachable
    d = page.diagnostics
    if d.redirect_chain and not same_page(d.final_url, donor):
        return DONOR_REDIRECTED, f"The donor redirects to {d.final_url}"
    if found:
        return FOUND, "The donor links to the target"
    return MISSING, "No link to the target on the donor"


def _link_dict(link: Link, url: str) -> dict[str, Any]:
    return {
        "href_raw": link.href,
        "href": url,
        "rel": list(link.rel),
        "anchor_text": link.anchor_text,
        "is_image_link": link.is_image_link,
    }


def _best(found: list[tuple[Link, str]]) -> tuple[Link, str] | None:
    """The link that counts: the first without a qualifying rel, else the first."""
    for link, url in found:
        if not QUALIFIERS & set(link.rel):
            return link, url
    return found[0] if found else None


def pair_result(
    page: DonorPage, donor: str, target: str, mode: str, checked_at: str
) -> dict[str, Any]:
    """A pair's result (the item's, and the collection's before its history fields)."""
    found = [(link, url) for link, url in page.links if matches(url, target, mode)]
    status, reason = link_status(page, donor, bool(found))
    best = _best(found)
    rel = list(best[0].rel) if best else []
    d = page.diagnostics
    return {
        "donor": donor,
        "target": target,
        "match": mode,
        "link_status": status,
        "reason": reason,
        "href_raw": best[0].href if best else None,
        "href": best[1] if best else None,
        "rel": rel,
        "anchor_text": best[0].anchor_text if best else None,
        "is_image_link": best[0].is_image_link if best else None,
        "page_nofollow": page.page_nofollow,
        "nofollow": bool(best) and ("nofollow" in rel or page.page_nofollow),
        "link_count_to_target": len(found),
        "links": [_link_dict(link, url) for link, url in found[:MAX_LISTED]],
        "status_code": d.http_status,
        "final_url": d.final_url,
        "redirect_chain": [hop.to_dict() for hop in d.redirect_chain],
        "indexable": d.indexable,
        "indexability_reason": d.verdict_reason,
        "canonical": d.canonical.url,
        "canonical_state": d.canonical.state,
        "robots_txt_state": page.robots.state if page.robots else None,
        "fetch_error_kind": d.fetch_error_kind,
        "checked_at": checked_at,
    }


def with_history(result: dict[str, Any], previous: Any) -> dict[str, Any]:
    """``result`` with the pair's history: ``first_seen`` (when the link was first found;
    null while it never was), ``last_checked``, ``last_changed`` (when ``link_status`` took
    its value: the first check, or the check that saw it change) and ``previous_status``
    (the status before that change; null until one)."""
    before = previous if isinstance(previous, dict) else {}
    status, checked_at = result["link_status"], result["checked_at"]
    changed = bool(before) and before.get("link_status") != status
    first_seen = before.get("first_seen") or (checked_at if status == FOUND else None)
    return {
        **result,
        "first_seen": first_seen,
        "last_checked": checked_at,
        "last_changed": checked_at if changed or not before else before.get("last_changed"),
        "previous_status": before.get("link_status") if changed else before.get("previous_status"),
    }
