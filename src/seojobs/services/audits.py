"""Site audits' reads (``services.audits``): one completed audit of a project and its pages
(how its findings changed against another audit is a declared read: ``JobCompare``). Reads
never start an audit."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from seojobs.kinds.site_audit import NAME as SITE_AUDIT
from seojobs.kinds.site_audit.pagetable import PAGE_TABLE, AuditPageRecord
from seojobs.kinds.site_audit.reads import PAGES
from seojobs.records import JobRecord, UserRecord
from seojobs.services import reads as read_svc
from seojobs.services.base import Part, ServiceBase
from seojobs.services.jobs import Jobs
from seojobs.store import reads as read_sql


@dataclass(frozen=True)
class Audit:
    job: JobRecord
    collected_at: datetime | None  # as audits/latest says it, for the same audit

    @property
    def id(self) -> int:
        return self.job.id


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
