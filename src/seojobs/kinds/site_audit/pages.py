"""The audit's page rows (``pagetable``): one per crawled URL, with the in-link counts
that are only known once the crawl is complete. Written by the site-wide phase, replacing
the job's rows, so a rescued audit that runs the phase again writes each page once."""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Sequence
from typing import Any

from seojobs.engine.context import JobContext
from seojobs.kinds.site_audit.linkscore import ranks, scores
from seojobs.kinds.site_audit.pagetable import PAGE_TABLE
from seojobs.kinds.site_audit.params import SiteAuditParams
from seojobs.kinds.site_audit.sitepages import SitePages

# Counted over the whole crawl (below), or the row's key: every other column is copied as it
# is from a page's record (crawler._record and its verdicts).
COUNTED = ("job_id", "seq", "indexable", "in_links", "out_links", "external_links", "link_score")
FIELDS = tuple(name for name in PAGE_TABLE.names() if name not in COUNTED)


class Graph(Sequence["array[int]"]):
    """The crawled pages' links as rows: ``self[i]``, the distinct other pages row ``i``
    links to (links to URLs without a record, and to itself, left out), in two arrays."""

    def __init__(self, pages: SitePages) -> None:
        self.ends = array("q")
        self.targets = array("i")
        row_of = pages.row_of
        for row in range(len(pages)):
            found = {row_of[at] for at in pages.link_targets(row)}
            found.discard(-1)
            found.discard(row)
            self.targets.extend(sorted(found))
            self.ends.append(len(self.targets))

    def __len__(self) -> int:
        return len(self.ends)

    def __getitem__(self, row: int) -> array[int]:  # type: ignore[override]
        return self.targets[self.ends[row - 1] if row else 0 : self.ends[row]]

    def __iter__(self) -> Iterator[array[int]]:
        start = 0
        for end in self.ends:
            yield self.targets[start:end]
            start = end


def page_rows(pages: SitePages) -> Iterator[dict[str, Any]]:
    """Every page's row, in the order found. ``in_links``: how many other crawled pages
    link to the page (each linking page counted once, as the record keeps distinct links)."""
    graph = Graph(pages)
    in_links = array("i", [0]) * len(pages)
    for target in graph.targets:
        in_links[target] += 1
    link_score = scores(ranks(graph))
    del graph
    for row, (seq, page) in enumerate(pages.seq_rows()):
        yield {
            "seq": seq,
            **{name: page.get(name) for name in FIELDS},
            "indexable": bool(page.get("indexable")),
            "in_links": in_links[row],
            "out_links": page.get("out_links") or 0,
            "external_links": page.get("external_links") or 0,
            "link_score": link_score[row],
        }


async def write_pages(ctx: JobContext[SiteAuditParams], pages: SitePages) -> None:
    """Store the audit's pages: every item with a result, read back from the job's items (an
    earlier claim's too), a chunk of rows at a time."""
    await ctx.replace_rows(PAGE_TABLE.name, page_rows(pages))
