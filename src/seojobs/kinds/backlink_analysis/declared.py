"""What a backlink analysis declares, loaded when the registry is: the refusal at creation,
its collections' subject and how one analysis compares with the previous (its change events
use it). The handler and the adapter (``run``) are loaded at a worker's first analysis."""

from __future__ import annotations

from typing import Any

from seojobs.engine.registry import Refusal
from seojobs.kinds import providers
from seojobs.kinds.backlink_analysis.params import BacklinkAnalysisParams

PROVIDER = "dataforseo"


def subject(params: BacklinkAnalysisParams) -> str:
    """What a collection is about: the target as DataForSEO is asked about it."""
    return params.target


def refusal(_params: BacklinkAnalysisParams, settings: Any) -> Refusal | None:
    """Refused at creation when DataForSEO is not configured (nothing else serves it)."""
    return providers.unconfigured(settings, PROVIDER, "domain")


def link_key(link: dict[str, Any]) -> str:
    """A link's identity across analyses: the page it is on and the URL it points to."""
    return f"{link.get('url_from')} {link.get('url_to')}"


def compared(links: list[dict[str, Any]], before: Any) -> tuple[list[dict[str, Any]], list[Any]]:
    """Each link marked ``new`` (live now, not live in the previous analysis: every live link
    of the first analysis is new) and the links that were live before and are lost or gone
    now (each with ``reason``: ``lost`` the index says removed, ``gone`` no longer listed)."""
    previous = before.get("links", []) if isinstance(before, dict) else []
    was_live = {link_key(p): p for p in previous if isinstance(p, dict) and not p.get("is_lost")}
    now = {link_key(link): link for link in links}
    marked = [
        {**link, "new": not link["is_lost"] and link_key(link) not in was_live} for link in links
    ]
    lost = []
    for key, link in was_live.items():
        current = now.get(key)
        if current is None:
            lost.append({**link, "new": False, "reason": "gone"})
        elif current["is_lost"]:
            lost.append({**current, "new": False, "reason": "lost"})
    return marked, lost
