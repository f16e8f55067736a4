"""The page's ``<base href>`` on both stores: a real worker crawls a site whose pages set one,
and every relative URL of their markup resolves against it (links, canonical, hreflang,
rel=next/prev, what a page loads), as a browser resolves them; a base on another site or on
localhost sends them there, an invalid or ``javascript:`` one is ignored, and the first
``<base>`` with an href wins (an empty one too). The site counts requests: the URLs the
page's own URL would give are never loaded."""

from __future__ import annotations

from typing import Any

from seojobs.services import Services
from tests.fakes.base_site import BaseSite
from tests.waiting import run_until_final

PARAMS = {
    "include_sitemaps": False,
    "check_external_links": False,
    "thresholds": {"slow_response_ms": 600_000},
}


async def test_relative_urls_resolve_against_the_pages_base(audit_services: Services) -> None:
    services = audit_services
    user = services.accounts.create_user("alice").user
    site = BaseSite()
    with site.running() as base:
        job, _ = services.jobs.create(user, "site_audit", {"start_url": f"{base}/", **PARAMS})
        done = await run_until_final(services, user, job)
    assert done.state == "completed", done.error
    records: dict[str, dict[str, Any]] = {
        i.data["url"].removeprefix(base): i.result or {}
        for i in services.jobs.items(user, job.id, limit=1000)
    }
    found = {
        (f.code, f.data["url"].removeprefix(base)): f.data["evidence"]
        for f in services.jobs.findings(user, job.id, limit=1000)
    }
    based = records["/shop/based"]
    assert based["canonical"] == f"{base}/catalog/item"
    assert based["hreflang"] == {"en": f"{base}/catalog/item", "de": f"{base}/catalog/de/item"}
    assert based["pagination"] == {"next": f"{base}/catalog/page-2"}
    assert based["loads"] == [f"{base}/catalog/app.js", f"{base}/catalog/pic.png"]
    assert based["links"] == [f"{base}/catalog/page-2"]
    assert based["indexability_reason"] == "canonicalised"
    # The canonical and the link were loaded where the base puts them, never under /shop/.
    assert site.hits["/catalog/item"] == 1 and site.hits["/catalog/page-2"] == 1
    assert site.hits["/shop/item"] == site.hits["/shop/page-2"] == 0
    # rel=next is the page's link (both under the base), and the next page names it back.
    assert ("pagination_not_linked", "/shop/based") not in found
    assert ("pagination_inconsistent", "/shop/based") not in found
    # A base on another site: its canonical is that site's, and nothing is loaded from ours.
    assert records["/shop/offsite"]["canonical"] == f"{site.other}/x/away"
    assert found["canonical_other_host", "/shop/offsite"] == {"canonical": f"{site.other}/x/away"}
    assert site.hits["/shop/away"] == site.hits["/x/away"] == 0
    assert records["/shop/offsite"]["links"] == []
    assert sum(site.elsewhere_hits.values()) == 0  # external links are not checked here
    # A base on localhost: the page's relative link leads there.
    assert found["link_to_local_address", "/shop/local-base"] == {
        "links": ["http://localhost:1/admin"]
    }
    # Ignored bases: the page's own URL is the base.
    for page in ("javascript", "invalid"):
        record = records[f"/shop/{page}"]
        assert record["canonical"] == f"{base}/shop/{page}-page"
        assert record["links"] == [f"{base}/shop/{page}-link"]
        assert site.hits[f"/shop/{page}-page"] == site.hits[f"/shop/{page}-link"] == 1
    # The first <base> with an href, an empty one: the later one is ignored.
    assert records["/shop/empty-first"]["links"] == [f"{base}/shop/page-3"]
    assert site.hits["/shop/page-3"] == 1 and site.hits["/catalog/page-3"] == 0
