"""Site audits' reads (``services.audits``): one completed audit of a project and its pages
(how its findings changed against another audit is a declared read: ``JobCompare``). Reads
never start an audit."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from seojobs.kinds.site_audit import NAME as SITE_AUDIT
from seojobs.kinds.site_audit.pagetable import PAGE_TABLE, AuditPageRecord
from seojobs.kinds.site_audit.params import AuditSettings
from seojobs.kinds.site_audit.reads import COMPARE, PAGES
from seojobs.records import (
    ChangeCount,
    ChangedFinding,
    FindingRecord,
    JobRecord,
    UserRecord,
)
from seojobs.services import reads as read_svc
from seojobs.services.base import Part, ServiceBase
from seojobs.services.errors import NotFound
from seojobs.services.jobs import Jobs
from seojobs.store import audit_settings
from seojobs.store import reads as read_sql


@dataclass(frozen=True)
class Audit:
    job: JobRecord
    collected_at: datetime | None  # as audits/latest says it, for the same audit

    @property
    def id(self) -> int:
        return self.job.id


@dataclass(frozen=True)
class Comparison:
    """Two completed audits, how their findings changed per code, and a page of the pairs of
    one change (the dashboard's view; the API serves the declared ``COMPARE``)."""

    audit: Audit
    other: Audit
    counts: list[ChangeCount]  # per code
    found: list[ChangedFinding]  # a page of the pairs of one change


class Audits(Part):
    def __init__(self, base: ServiceBase, jobs: Jobs) -> None:
        super().__init__(base)
        self.jobs = jobs

    def get(self, user: UserRecord, project_id: int, job_id: int) -> Audit:
        """A completed site audit of the user's project; ``NotFound`` otherwise, whichever
        way it is not (nothing collected is nothing to read)."""
        self.base.project(user, project_id)
        job, collected = read_svc.completed(
            self.jobs, self.db, user, project_id, job_id, SITE_AUDIT, PAGES.noun
        )
        return Audit(job, collected)

    def pages(
        self,
        user: UserRecord,
        project_id: int,
        job_id: int,
        *,
        statuses: tuple[int, int] | None = None,
        indexable: bool | None = None,
        after_seq: int = -1,
        limit: int = 100,
    ) -> tuple[Audit, list[AuditPageRecord]]:
        """The audit's pages as the declared read serves them (``statuses``: the inclusive
        range of HTTP statuses to keep)."""
        audit = self.get(user, project_id, job_id)
        wanted = {"status": statuses, "indexable": indexable}
        values = {name: value for name, value in wanted.items() if value is not None}
        with self.db.read() as conn:
            found = read_sql.job_rows(conn, PAGES, job_id, values, after=after_seq, limit=limit)
        return audit, [PAGE_TABLE.record(row) for row in found]

    def page(
        self, user: UserRecord, project_id: int, job_id: int, seq: int, *, limit: int = 1000
    ) -> tuple[Audit, AuditPageRecord, list[FindingRecord]]:
        """One page the audit recorded (by ``seq``) and up to ``limit`` of the issues found
        about it: its own and the site-wide ones naming it. ``NotFound`` when there is none."""
        audit = self.get(user, project_id, job_id)
        with self.db.read() as conn:
            found = read_sql.job_rows(conn, PAGES, job_id, {}, after=seq - 1, limit=1)
            if not found or found[0]["seq"] != seq:
                raise NotFound(f"page {seq} of audit {job_id}")
            record = PAGE_TABLE.record(found[0])
            issues = read_sql.findings_naming(conn, job_id, record.url, limit=limit)
        return audit, record, issues

    def page_seqs(
        self,
        user: UserRecord,
        project_id: int,
        job_id: int,
        urls: list[str],
        items: Mapping[int, str] | None = None,
    ) -> dict[str, int]:
        """Which of ``urls`` the audit recorded as pages, each with its ``seq``. ``items``:
        the item ids some of them are known by (a page's own findings name their item): the
        page's ``seq`` is its item's, looked up by primary key rather than by URL."""
        self.get(user, project_id, job_id)
        known = dict(items or {})
        with self.db.read() as conn:
            found = {
                known[item]: seq for item, seq in read_sql.item_seqs(conn, job_id, list(known))
            }
            rest = [url for url in urls if url not in found]
            if rest:
                found |= read_sql.table_seqs(conn, job_id, PAGES.table, rest)
        return found

    def compare(
        self,
        user: UserRecord,
        project_id: int,
        job_id: int,
        other_id: int,
        *,
        change: str = "new",
        code: str | None = None,
        after_id: int = 0,
        limit: int = 100,
    ) -> Comparison:
        """How ``job_id``'s findings differ from ``other_id``'s (both completed audits of the
        project), by (code, url): counts per code, and a page of the pairs of one change."""
        audit = self.get(user, project_id, job_id)
        other = self.get(user, project_id, other_id)
        with self.db.read() as conn:
            counts = read_sql.change_counts(conn, COMPARE, job_id, other_id)
            found = read_sql.changed(
                conn,
                COMPARE,
                job_id,
                other_id,
                change=change,
                code=code,
                after_id=after_id,
                limit=limit,
            )
        return Comparison(audit, other, counts, found)

    def project_settings(self, user: UserRecord, project_id: int) -> AuditSettings:
        """The project's audit settings: what its audits get unless their request says
        otherwise (``model_fields_set``: those the project set)."""
        self.base.project(user, project_id)
        with self.db.read() as conn:
            stored = audit_settings.get(conn, project_id)
        return AuditSettings.model_validate(stored)

    def set_project_settings(
        self, user: UserRecord, project_id: int, settings: AuditSettings
    ) -> AuditSettings:
        """Replace the project's audit settings with those set in ``settings`` (none: the
        server's defaults again). Audits already started keep the settings they started with."""
        self.base.project(user, project_id)
        stored = settings.stored()
        with self.db.write() as conn:
            audit_settings.put(conn, project_id, stored, self.clock())
        return AuditSettings.model_validate(stored)
