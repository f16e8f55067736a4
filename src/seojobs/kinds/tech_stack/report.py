"""What a tech-stack lookup stores: one result per page (its item), one collection per site.

A site (the subject: host, and port when not the scheme's default) gathers the pages of the
job on it: each technology once, with the highest confidence any page gave it, every version
seen, and the evidence that matched, each piece with the page it was found on.
"""

from __future__ import annotations

import re
from typing import Any

from seojobs.kinds.tech_stack.database import Fingerprints
from seojobs.kinds.tech_stack.matcher import Hit, Outcome

MAX_SITE_EVIDENCE = 20
_NUMBER = re.compile(r"(\d+)")


def version_key(version: str) -> tuple[tuple[int, int | str], ...]:
    """Natural order: 1.10 after 1.9, numbers before words."""
    return tuple((0, int(p)) if p.isdigit() else (1, p) for p in _NUMBER.split(version) if p)


def best_version(versions: list[str]) -> str | None:
    return max(versions, key=version_key) if versions else None


def _categories(ids: tuple[int, ...] | list[int], db: Fingerprints) -> list[dict[str, Any]]:
    found = []
    for cat in ids:
        category = db.categories.get(cat)
        found.append({"id": cat, "name": category.name if category else None})
    return found


def technology(hit: Hit, db: Fingerprints) -> dict[str, Any]:
    return {
        "name": hit.tech.name,
        "categories": _categories(hit.tech.cats, db),
        "version": best_version(hit.versions),
        "versions": sorted(hit.versions, key=version_key),
        "confidence": hit.confidence,
        "website": hit.tech.website,
        "evidence": hit.evidence,
        "implied_by": sorted(hit.implied_by),
    }


def page_result(
    url: str, final_url: str, status: int | None, outcome: Outcome, db: Fingerprints
) -> dict[str, Any]:
    techs = sorted(outcome.hits.values(), key=lambda h: h.tech.name.lower())
    return {
        "url": url,
        "final_url": final_url,
        "status": status,
        "technologies": [technology(hit, db) for hit in techs],
        "skipped": outcome.skipped,
    }


def _merge(into: dict[str, Any], page: dict[str, Any], tech: dict[str, Any]) -> None:
    into["confidence"] = max(into["confidence"], tech["confidence"])
    into["versions"] = sorted(set(into["versions"]) | set(tech["versions"]), key=version_key)
    into["version"] = best_version(into["versions"])
    into["implied_by"] = sorted(set(into["implied_by"]) | set(tech["implied_by"]))
    room = MAX_SITE_EVIDENCE - len(into["evidence"])
    into["evidence"] += [{"url": page["url"], **e} for e in tech["evidence"][: max(room, 0)]]
    if page["url"] not in into["pages"]:
        into["pages"].append(page["url"])


def site(subject: str, pages: list[dict[str, Any]]) -> dict[str, Any]:
    """The collection of one site from its pages' results (failed pages listed apart)."""
    techs: dict[str, dict[str, Any]] = {}
    for page in pages:
        for tech in page.get("technologies", []):
            into = techs.setdefault(
                tech["name"],
                {
                    **tech,
                    "versions": [],
                    "evidence": [],
                    "implied_by": [],
                    "pages": [],
                    "confidence": 0,
                },
            )
            _merge(into, page, tech)
    categories: dict[int, dict[str, Any]] = {}
    for tech in techs.values():
        for cat in tech["categories"]:
            entry = categories.setdefault(cat["id"], {**cat, "technologies": []})
            entry["technologies"].append(tech["name"])
    return {
        "host": subject,
        "pages": [
            {k: page.get(k) for k in ("url", "final_url", "status", "error")} for page in pages
        ],
        "technologies": sorted(techs.values(), key=lambda t: t["name"].lower()),
        "categories": sorted(categories.values(), key=lambda c: c["id"]),
        "skipped": [s for page in pages for s in page.get("skipped", [])],
    }
