"""The audit's page table, declared once: one row per crawled URL of a completed audit.

:class:`AuditPageRecord` is the row: the store builds the ``audit_pages`` table from it
(``seojobs.store.kindrows``), the crawl writes it (``pages.py``), the pages read returns it.
The table is created by this kind's own migration (``migrations/``), a branch of seojobs'
one migration chain that ``seojobs migrate`` runs with the other kinds' (``Kind.migrations``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from seojobs.rowshape import KindTable, Length

MIGRATIONS = str(Path(__file__).parent / "migrations")


@dataclass(frozen=True, slots=True)
class AuditPageRecord:
    job_id: int
    seq: int  # the page's item: pages read in the order they were found
    url: str
    final_url: str | None
    status: int | None  # null: no answer, or blocked by robots.txt
    depth: int | None  # null: only a sitemap lists it
    response_ms: int | None
    redirects: int | None
    content_type: Annotated[str | None, Length(200)]
    title: str | None
    description: str | None
    h1: str | None
    canonical: str | None
    indexable: bool
    indexability_reason: Annotated[str | None, Length(50)]
    words: int | None
    content_hash: Annotated[str | None, Length(64)]
    in_links: int
    out_links: int
    external_links: int
    issues: list[str] | None  # the codes of the page's own findings
    # Internal link score, 0-100 (PageRank over the crawled graph: linkscore.py); null in
    # audits stored before it was computed.
    link_score: int | None = None


PAGE_TABLE = KindTable("audit_pages", AuditPageRecord, key=("seq",))
