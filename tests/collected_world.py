"""A project with collected data of every kind that has reads, written through the store as a
worker would publish it (no provider is called), for the tests of the declared reads."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from sqlalchemy import insert

from seojobs.services import Services
from seojobs.store.coltypes import utcnow
from seojobs.store.results import subject_key
from seojobs.store.tables import collections, jobs

_clock = [0]


def publish(services: Services, project_id: int, kind: str, subject: str, data: Any) -> int:
    """One published collection (of no job: as after pruning); returns its id. Each is a
    second after the one before, so the order of ``collected_at`` is the order of ids."""
    _clock[0] += 1
    values = {
        "project_id": project_id,
        "kind": kind,
        "subject": subject_key(subject),
        "job_id": None,
        "data": data,
        "committed": True,
        "collected_at": utcnow().replace(microsecond=0) + timedelta(seconds=_clock[0]),
    }
    with services.db.write() as conn:
        found: int = conn.execute(insert(collections).values(**values)).inserted_primary_key[0]
    return found


def ranking(n: int, device: str = "desktop", position: int | None = None) -> dict[str, Any]:
    return {
        "keyword": f"Keyword {n:03d}",
        "location": 2840,
        "language": "en",
        "device": device,
        "target": "example.com",
        "match": "domain",
        "position": position,
        "rank_absolute": position,
        "url": None if position is None else f"https://example.com/{n}",
        "title": None,
        "features": ["people_also_ask"],
        "results": 100,
        "depth": 100,
        "provider": "serper",
        "checked_at": "2026-01-01T00:00:00Z",
    }


def vitals(n: int, form_factor: str) -> dict[str, Any]:
    return {
        "url": f"https://example.com/page/{n}",
        "form_factor": form_factor,
        "lab": {"performance_score": 50 + n % 50, "metrics": {}},
        "field": None,
    }


def geo(n: int, provider: str, cited: bool) -> dict[str, Any]:
    return {
        "prompt": f"best tool {n:03d}",
        "provider": provider,
        "model": "m1",
        "domain": "example.com",
        "brand": ["Example"],
        "domain_cited": cited,
        "citation_position": 1 if cited else None,
        "brand_mentioned": cited,
        "mention_count": int(cited),
        "cited_share": float(cited),
        "mentioned_share": float(cited),
        "repeats": 1,
        "checked_at": "2026-01-01T00:00:00Z",
        "answers": [],
    }


def backlink(n: int, status: str, donor_host: str = "donor.test") -> dict[str, Any]:
    return {
        "donor": f"https://{donor_host}/post/{n:03d}",
        "target": f"https://example.com/{n % 3}",
        "match": "url",
        "link_status": status,
        "first_seen": "2026-01-01T00:00:00Z" if status == "found" else None,
        "last_checked": "2026-01-02T00:00:00Z",
        "last_changed": "2026-01-01T00:00:00Z",
        "previous_status": None,
    }


def rank_subject(row: dict[str, Any]) -> str:
    return f"{row['device']}/{row['location']}/{row['language']}/{row['keyword'].casefold()}"


def backlink_subject(row: dict[str, Any]) -> str:
    return f"{row['donor']} {row['target']}"


def fill(services: Services, project_id: int) -> None:
    """Data of every built-in kind with reads, enough for pages of 2 with filters."""
    add: Callable[[str, str, Any], int] = lambda kind, subject, data: publish(  # noqa: E731
        services, project_id, kind, subject, data
    )
    for n in range(7):
        for device in ("desktop", "mobile"):
            row = ranking(n, device, None if n % 3 == 0 else 10 - n)
            add("rank_check", rank_subject(row), row)
    again = ranking(2, "desktop", 1)  # checked again: the newest counts
    add("rank_check", rank_subject(again), again)
    for n in range(6):
        for factor in ("mobile", "desktop"):
            row = vitals(n, factor)
            add("web_vitals", f"{factor} {row['url']}", row)
    add("web_vitals", "mobile https://example.com/page/1", vitals(1, "mobile"))
    for n in range(6):
        for provider in ("openai", "perplexity"):
            row = geo(n, provider, cited=n % 2 == 0)
            add("geo_lookup", f"{provider} {row['prompt']}", row)
    for n in range(7):
        status = ("found", "missing", "found", "donor_error")[n % 4]
        row = backlink(n, status, "blog.donor.test" if n % 2 else "other.test")
        add("backlink_refresh", backlink_subject(row), row)
    for host in ("example.com", "shop.example.com"):
        add("tech_stack", host, {"host": host, "technologies": [], "categories": [], "pages": []})
    for domain in ("example.com", "example.org"):
        add("domain_lookup", domain, {"domain": domain, "rdap": None, "dns": None, "errors": []})
    words = [
        {
            "keyword": f"word {n}",
            "search_volume": None if n == 3 else n * 10,
            "cpc": n / 10,
            "competition": n,
            "competition_level": "LOW",
            "low_top_of_page_bid": None,
            "high_top_of_page_bid": None,
            "currency": "USD",
            "monthly_searches": [],
            "seed": n == 0,
        }
        for n in range(5)
    ]
    market = {"provider": "dataforseo", "location": 2840, "language": "en", "seeds": ["word"]}
    add("keyword_research", "2840/en", market | {"url": None, "keywords": words})
    for n in range(3):
        add("site_audit", "example.com", {"start_url": "https://example.com/", "pages": n})


def completed_job(services: Services, project_id: int, kind: str) -> int:
    """A job of ``kind`` stored completed (as a worker leaves it, having found nothing);
    returns its id."""
    now = utcnow()
    values = {
        "project_id": project_id,
        "kind": kind,
        "params": {},
        "state": "completed",
        "run_at": now,
        "created_at": now,
        "updated_at": now,
        "completed_at": now,
        "counters": {},
        "result": {},
    }
    with services.db.write() as conn:
        found: int = conn.execute(insert(jobs).values(**values)).inserted_primary_key[0]
    return found
