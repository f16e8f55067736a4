"""The audit's page rows (``pagetable``): one per crawled URL, with the in-link counts
that are only known once the crawl is complete. Written by the site-wide phase, replacing
the job's rows, so a rescued audit that runs the phase again writes each page once."""

from __future__ import annotations

from collections import Counter
from typing import Any

from seojobs.engine.context import JobContext
from seojobs.kinds.site_audit.linkscore import link_scores
from seojobs.kinds.site_audit.pagetable import PAGE_TABLE
from seojobs.kinds.site_audit.params import SiteAuditParams

# Counted over the whole crawl (below), or the row's key: every other column is copied as it
# is from a page's record (crawler._record and its verdicts).
COUNTED = ("job_id", "seq", "indexable", "in_links", "out_links", "external_links", "link_score")
FIELDS = tuple(name for name in PAGE_TABLE.names() if name not in COUNTED)


def page_rows(pages: list[tuple[int, dict[str, Any]]]) -> list[dict[str, Any]]:
    """``pages``: (item seq, the page's record). ``in_links``: how many other crawled pages
    link to the page (each linking page counted once, as the record keeps distinct links)."""
    in_links: Counter[str] = Counter(
        target for _seq, page in pages for target in page.get("links", ()) if target != page["url"]
    )
    scores = link_scores((page["url"], page.get("links", ())) for _seq, page in pages)
    return [
        {
            "seq": seq,
            **{name: page.get(name) for name in FIELDS},
            "indexable": bool(page.get("indexable")),
            "in_links": in_links[page["url"]],
            "out_links": page.get("out_links") or 0,
            "external_links": page.get("external_links") or 0,
            "link_score": scores.get(page["url"]),
        }
        for seq, page in pages
    ]


async def write_pages(
    ctx: JobContext[SiteAuditParams], pages: list[tuple[int, dict[str, Any]]]
) -> None:
    """Store the audit's pages: (item seq, record) of every item with a result, read back
    from the job's items (an earlier claim's too)."""
    await ctx.replace_rows(PAGE_TABLE.name, page_rows(pages))
