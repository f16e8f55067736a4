"""Site audit reads of what the audits collected: the project's completed audits, newest
first, each with its summary, and the summary of the last one. Never start an audit.

What one audit found (its issues, pages and a comparison with another) is read per job
(``/v1/projects/{id}/audits/{job_id}/...``)."""

from __future__ import annotations

from seojobs.reads import Collected, CollectedData, CollectedPage, Key, Read

READS = (
    Read(
        "audits",
        "list_audits",
        "site_audit",
        Collected,
        response=CollectedPage,
        source="history",
        orders={"newest": (Key("id", "id", descending=True),)},
        empty=(),
        description="The project's completed audits, newest first, each with its summary (as "
        "`latest`).",
        tags=("audits",),
    ),
    Read(
        "audits/latest",
        "get_latest_audit",
        "site_audit",
        Collected,
        response=CollectedData,
        source="one",
        summary="Latest Audit",
        description="The summary of the project's last completed audit (pages crawled, issues "
        "by severity and code, health score), with its `job_id` and `collected_at`. Never "
        "starts an audit: 404 until one has completed.",
        tags=("audits",),
    ),
)
