"""Jobs (``services.jobs``): the one way a job comes to exist, and the reads of jobs, their
items and findings."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from seojobs.engine.registry import Kind
from seojobs.logfmt import REQUEST_ID
from seojobs.records import (
    FindingRecord,
    ItemRecord,
    JobRecord,
    NewItem,
    NewJob,
    UserRecord,
)
from seojobs.services import texts
from seojobs.services.base import Part, ServiceBase
from seojobs.services.errors import JobFinished, NotFound
from seojobs.services.quotas import Quotas
from seojobs.services.webhooks import one_off_values
from seojobs.store import jobs as job_sql
from seojobs.store import results as result_sql
from seojobs.store import usage as usage_sql
from seojobs.store import webhooks as hook_sql
from seojobs.store.db import Connection


@dataclass(frozen=True)
class Origin:
    """Where a job comes from besides a direct request: a schedule's tick."""

    schedule_id: int
    tick: datetime


class Jobs(Part):
    def __init__(self, base: ServiceBase, quotas: Quotas) -> None:
        super().__init__(base)
        self.quotas = quotas

    def create(
        self,
        user: UserRecord,
        kind: str,
        params: Mapping[str, Any],
        *,
        project_id: int | None = None,
        title: str | None = None,
        delay_seconds: float = 0.0,
        run_at: datetime | None = None,
        priority: int = 0,
        idempotency_key: str | None = None,
        webhook_url: str | None = None,
    ) -> tuple[JobRecord, bool]:
        """Validate and store a job, charging its cost and creating its follow-ups.

        Returns ``(job, created)``; ``created`` is False when the idempotency key named an
        existing job, which is returned unchanged. Over a quota the job is stored already
        ``failed`` with code ``quota_exceeded`` and the reset time, where its owner looks for
        results. Raises ``Invalid`` (unknown type, bad params, a job this deployment cannot
        run, e.g. no provider for its engine) before anything is stored.
        """
        spec = self.base.kind(kind)
        record = self.base.project(user, project_id) if project_id else None
        project = record.id if record is not None else user.default_project_id
        # The job's params win over the project's (what it tracks only when named).
        params = self.with_project(spec, project, params, named=record is not None)
        model = self.base.validated(spec, params)
        title = texts.title(title)
        self.base.runnable(spec, model)
        now = self.clock()
        with self.db.write() as conn:
            job_id, created = self.insert(
                conn,
                user,
                spec,
                model,
                project_id=project,
                run_at=run_at or now + timedelta(seconds=delay_seconds),
                now=now,
                title=title,
                priority=priority,
                idempotency_key=idempotency_key,
            )
            if webhook_url is not None and created:  # webhooks (issue 27.3)
                one_off = one_off_values(conn, user, job_id, webhook_url, now)
                hook_sql.create_endpoint(conn, one_off)
            job = job_sql.get(conn, job_id)
        assert job is not None
        return job, created

    def with_project(
        self, spec: Kind[Any], project_id: int, params: Any, *, named: bool = True
    ) -> Any:
        """A request's (or a collection's) params with its project's defaults where they
        leave a field out (``Kind.project_params``): the settings the kind keeps for the
        project (an audit's, issue 30.4) and, when the project was ``named``, what it tracks
        (issue 29.1)."""
        if spec.project_params is None or not isinstance(params, Mapping):
            return params  # a non-mapping: the params' validation refuses it
        return spec.project_params(params, self.base.defaults(spec, project_id, named=named))

    def insert(
        self,
        conn: Connection,
        user: UserRecord,
        spec: Kind[Any],
        model: Any,
        *,
        project_id: int,
        run_at: datetime,
        now: datetime,
        title: str | None = None,
        priority: int = 0,
        idempotency_key: str | None = None,
        origin: Origin | None = None,
    ) -> tuple[int, bool]:
        """``create`` inside the caller's transaction (a schedule's tick uses it). A job
        the deployment cannot run (its provider went away since the schedule was made) is
        stored failed with the refusal's code, like one over a quota: charged nothing.

        Its follow-ups (a submission's ``checker``) are jobs like any other: their cost is
        decided with the parent's, in the same quota check, and charged to each of them
        (issue 25.4c). Over a quota, the parent is stored failed and no follow-up exists."""
        items = new_items(spec, model)
        own = cost_of(spec, model, len(items))
        total = self.cost(spec, model)
        refused = self.base.refusal(spec, model)
        failure = (refused.code, refused.message) if refused else None
        if failure is None and total:
            failure = self.quotas.over(conn, user, total, now)
        new = NewJob(
            project_id=project_id,
            kind=spec.name,
            params=model.model_dump(mode="json"),
            run_at=run_at,
            items=items,
            priority=priority,
            title=title,
            idempotency_key=idempotency_key,
            schedule_id=origin.schedule_id if origin else None,
            schedule_tick=origin.tick if origin else None,
            failure=failure,
            request_id=REQUEST_ID.get(),
        )
        job_id, created = job_sql.insert_job(self.db, conn, new, now)
        if created and failure is None:
            usage_sql.charge(conn, user.id, job_id, own, now)
            self._follow_ups(conn, user, spec, model, job_id, project_id, now)
        return job_id, created

    def insert_failed(
        self,
        conn: Connection,
        spec: Kind[Any],
        params: Any,
        failure: tuple[str, str],
        project_id: int,
        now: datetime,
        title: str,
        origin: Origin,
    ) -> tuple[int, bool]:
        """A schedule's job that cannot be made (its params, with what the project tracks
        now, are invalid): stored failed with why, where its owner looks; charged nothing."""
        new = NewJob(
            project_id=project_id,
            kind=spec.name,
            params=dict(params) if isinstance(params, Mapping) else {},
            run_at=now,
            items=[],
            title=title,
            schedule_id=origin.schedule_id,
            schedule_tick=origin.tick,
            failure=failure,
            request_id=REQUEST_ID.get(),
        )
        return job_sql.insert_job(self.db, conn, new, now)

    def cost(self, spec: Kind[Any], model: Any) -> dict[str, int]:
        """What creating a job of ``model`` charges in all: its own cost and its follow-ups',
        each as the same job started directly would be charged (one path, issue 25.4c)."""
        total = cost_of(spec, model, len(new_items(spec, model)))
        # The parent's id only names a follow-up (its title); its kind, params and cost do
        # not depend on it.
        for follow in spec.follow_ups(model, 0, self.settings) if spec.follow_ups else ():
            child_kind = self.registry.get(follow.kind)
            child = child_kind.validate(follow.params)
            for quota, amount in cost_of(
                child_kind, child, len(new_items(child_kind, child))
            ).items():
                total[quota] = total.get(quota, 0) + amount
        return total

    def _follow_ups(
        self,
        conn: Connection,
        user: UserRecord,
        spec: Kind[Any],
        model: Any,
        job_id: int,
        project_id: int,
        now: datetime,
    ) -> None:
        # In the parent's transaction: exactly one set per job, whatever runs later. Each is
        # charged its own cost now, when the parent's quota check counted it.
        for follow in spec.follow_ups(model, job_id, self.settings) if spec.follow_ups else ():
            child_kind = self.registry.get(follow.kind)
            child = child_kind.validate(follow.params)
            items = new_items(child_kind, child)
            new = NewJob(
                project_id=project_id,
                kind=child_kind.name,
                params=child.model_dump(mode="json"),
                run_at=now + timedelta(seconds=follow.delay_seconds),
                items=items,
                title=follow.title,
                parent_id=job_id,
                request_id=REQUEST_ID.get(),
            )
            child_id, _ = job_sql.insert_job(self.db, conn, new, now)
            usage_sql.charge(conn, user.id, child_id, cost_of(child_kind, child, len(items)), now)

    # -- reads ----------------------------------------------------------------------------

    def get(
        self, user: UserRecord, job_id: int, *, summary: bool = False, params: bool = True
    ) -> JobRecord:
        """A job of the user's. ``summary`` leaves out large params (URL lists), keeping
        only the keys kinds declare in ``summary_params``: what status answers need.
        ``params=False`` reads none (``params`` is ``{}``): each key read is a column of
        the row, and a page that shows none of them need not pay for 25."""
        keys = self.registry.summary_keys() if summary else None
        if not params:
            keys = ()

        def read() -> JobRecord | None:
            with self.db.read() as conn:
                return job_sql.get(conn, job_id, param_keys=keys, user_id=user.id)

        job = self.db.once(("job", job_id, user.id, keys), read)
        if job is None:
            raise NotFound(f"job {job_id}")
        return job

    async def summary(self, user: UserRecord, job_id: int) -> JobRecord:
        """``get(user, job_id, summary=True)`` for async callers, read on the event loop."""
        job = await self.base.reads.job(job_id, user.id)
        if job is None:
            raise NotFound(f"job {job_id}")
        return job

    def page(
        self,
        user: UserRecord,
        *,
        project_id: int | None = None,
        kind: str | None = None,
        states: Sequence[str] | None = None,
        before_id: int | None = None,
        after_id: int | None = None,
        limit: int = 50,
        ids: Sequence[int] | None = None,
        updated_since: datetime | None = None,
        created_since: datetime | None = None,
        created_until: datetime | None = None,
        summary: bool = False,
    ) -> list[JobRecord]:
        """The user's jobs, newest first (see ``store.jobs.list_for_projects``)."""
        if project_id is not None:
            project_ids = [self.base.project(user, project_id).id]
        else:
            project_ids = [p.id for p in self.base.projects(user)]
        with self.db.read() as conn:
            return job_sql.list_for_projects(
                conn,
                project_ids,
                kind=kind,
                states=states,
                before_id=before_id,
                after_id=after_id,
                limit=limit,
                ids=ids,
                updated_since=updated_since,
                created_since=created_since,
                created_until=created_until,
                param_keys=self.registry.summary_keys() if summary else None,
            )

    def counts(self, user: UserRecord) -> list[tuple[str, str, int]]:
        """(kind, state, jobs) over all the user's projects."""
        project_ids = [p.id for p in self.base.projects(user)]
        with self.db.read() as conn:
            return job_sql.count_by_kind_and_state(conn, project_ids)

    def items(
        self,
        user: UserRecord,
        job_id: int,
        *,
        after_seq: int = -1,
        limit: int = 500,
        outcomes: Sequence[str] | None = None,
    ) -> list[ItemRecord]:
        with self.db.read() as conn:  # the job's owner checked in the same read
            if not job_sql.owned(conn, job_id, user.id):
                raise NotFound(f"job {job_id}")
            return job_sql.items_page(
                conn, job_id, after_seq=after_seq, limit=limit, outcomes=outcomes
            )

    def children(self, jobs: Sequence[JobRecord], kind: str | None = None) -> list[JobRecord]:
        """The jobs that creating these ones also created (follow-ups), oldest first."""
        if not jobs:
            return []
        with self.db.read() as conn:
            return job_sql.children(conn, [j.id for j in jobs], kind=kind)

    def finding_counts(self, user: UserRecord, job_id: int) -> list[tuple[str, str, int]]:
        self.get(user, job_id, summary=True)
        with self.db.read() as conn:
            return result_sql.finding_counts(conn, job_id)

    def findings(
        self,
        user: UserRecord,
        job_id: int,
        *,
        code: str | None = None,
        severity: str | None = None,
        after_id: int = 0,
        limit: int = 100,
    ) -> list[FindingRecord]:
        self.get(user, job_id, summary=True)
        with self.db.read() as conn:
            return result_sql.findings_page(
                conn, job_id, code=code, severity=severity, after_id=after_id, limit=limit
            )

    def cancel(self, user: UserRecord, job_id: int) -> JobRecord:
        """End an open job as ``failed`` with code ``cancelled``.

        Cancelling a job already cancelled returns it as is (a retried cancel is harmless);
        one that ended otherwise raises ``JobFinished``.
        """
        self.get(user, job_id)
        now = self.clock()
        with self.db.write() as conn:
            cancelled = job_sql.cancel(conn, job_id, now, "cancelled by the user")
            if cancelled:
                job_sql.cancel_children(conn, job_id, now, f"parent job {job_id} was cancelled")
            job = job_sql.get(conn, job_id)
        assert job is not None
        if not cancelled and job.error_code != "cancelled":
            raise JobFinished(job.id, job.state, job.error_code)
        return job

    def state_counts(self) -> dict[str, int]:
        with self.db.read() as conn:
            return job_sql.count_by_state(conn)


def cost_of(spec: Kind[Any], model: Any, items: int) -> dict[str, int]:
    """One job's own cost, without the quotas it charges nothing of."""
    return {q: n for q, n in spec.cost(model, items).items() if n}


def new_items(spec: Kind[Any], model: Any) -> list[NewItem]:
    """A job's items at creation, each once by its dedupe key (first occurrence kept)."""
    return spec.new_items(spec.items(model)) if spec.items else []
