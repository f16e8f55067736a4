"""Collected data (``services.collections``): what kinds collected in a project, latest and
history. Reading data never starts work (seed 001)."""

from __future__ import annotations

from collections.abc import Sequence

from seojobs.records import CollectionRecord, UserRecord
from seojobs.services.base import Part
from seojobs.services.errors import NotFound
from seojobs.store import results as result_sql


class Collections(Part):
    def latest(
        self, user: UserRecord, project_id: int, kind: str, subject: str | None = None
    ) -> CollectionRecord:
        """What a kind last collected in a project (for one subject, if given). Never starts
        work: ``NotFound`` until a job of the kind has completed there."""
        self.base.project(user, project_id)
        self.base.kind(kind)
        with self.db.read() as conn:
            found = result_sql.latest(conn, project_id, kind, subject)
        if found is None:
            what = f"{kind} data" + (f" for {subject!r}" if subject is not None else "")
            raise NotFound(f"{what} in project {project_id} (no {kind} job has completed)")
        return found

    def latest_each(self, user: UserRecord, project_id: int, kind: str) -> list[CollectionRecord]:
        """The latest collection of every subject a kind collected in a project. Never starts
        work: ``NotFound`` until a job of the kind has completed there."""
        self.base.project(user, project_id)
        self.base.kind(kind)
        with self.db.read() as conn:
            found = result_sql.latest_each(conn, project_id, kind)
        if not found:
            raise NotFound(f"{kind} data in project {project_id} (no {kind} job has completed)")
        return found

    def history(
        self,
        user: UserRecord,
        project_id: int,
        kind: str,
        subject: str | None = None,
        *,
        before_id: int | None = None,
        limit: int = 100,
    ) -> list[CollectionRecord]:
        self.base.project(user, project_id)
        self.base.kind(kind)
        with self.db.read() as conn:
            return result_sql.history(
                conn, project_id, kind, subject, before_id=before_id, limit=limit
            )

    def of_job(
        self,
        user: UserRecord,
        project_id: int,
        job_id: int,
        *,
        limit: int = 1000,
        lowest: Sequence[str] = (),
    ) -> list[tuple[CollectionRecord, CollectionRecord | None, dict[str, float]]]:
        """What one job of the project collected (published), by subject, each with the
        collection of its subject before it (None: the first) and the lowest value of each
        ``lowest`` number over its subject's collections up to it. Never starts work."""
        self.base.project(user, project_id)
        with self.db.read() as conn:
            return result_sql.job_collections(conn, project_id, job_id, limit=limit, lowest=lowest)
