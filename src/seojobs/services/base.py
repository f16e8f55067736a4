"""What every part of the services shares: the store, settings, kinds and clock, and the
lookups of users and projects that scope everything else (:class:`ServiceBase`); and the
base of those parts (:class:`Part`), which hold it rather than inherit it."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from seojobs.engine.registry import InvalidParams, Kind, Refusal, Registry, UnknownKind
from seojobs.records import ProjectDefaults, ProjectRecord, UserRecord
from seojobs.services.errors import FieldError, Invalid, NotFound
from seojobs.settings import Settings
from seojobs.store import accounts, tracking
from seojobs.store import audit_settings as project_settings
from seojobs.store.coltypes import utcnow
from seojobs.store.db import Database
from seojobs.store.fastread import FastReads


class ServiceBase:
    def __init__(
        self,
        db: Database,
        settings: Settings,
        registry: Registry,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self.db = db
        self.settings = settings
        self.registry = registry
        self.clock = clock
        # Status reads on the event loop (the API's hot path); opened on first use.
        self.reads = FastReads(db, registry.summary_keys())

    def one_read(self) -> AbstractContextManager[None]:
        """The reads of this thread in the block share one transaction (``Database.one_read``):
        a page made of several service reads pays for one."""
        return self.db.one_read()

    def user(self, user_id: int) -> UserRecord:
        with self.db.read() as conn:
            found = accounts.user_by_id(conn, user_id)
        if found is None:
            raise NotFound(f"user {user_id}")
        return found

    def project(self, user: UserRecord, project_id: int) -> ProjectRecord:
        found = self.db.once(("project", project_id), lambda: self._project(project_id))
        if found is None or found.user_id != user.id:
            raise NotFound(f"project {project_id}")
        return found

    def _project(self, project_id: int) -> ProjectRecord | None:
        with self.db.read() as conn:
            return accounts.project(conn, project_id)

    def defaults(self, spec: Kind[Any], project_id: int, *, named: bool) -> ProjectDefaults:
        """What a job of ``spec`` takes from its project (``Kind.project_params``): the
        settings the kind keeps for the project the job is made for (``project_id``: the
        named one, or the user's default), and, when the request ``named`` it, the project
        with what it tracks."""
        with self.db.read() as conn:
            settings = project_settings.get(conn, project_id) if spec.project_settings else {}
            record = tracking.tracked_project(conn, project_id) if named else None
        return ProjectDefaults(record, settings)

    def projects(self, user: UserRecord) -> list[ProjectRecord]:
        with self.db.read() as conn:
            return accounts.projects_of(conn, user.id)

    def kind(self, name: str, *, field: str = "type") -> Kind[Any]:
        try:
            return self.registry.get(name)
        except UnknownKind as exc:
            raise Invalid(field, str(exc), code="unknown_kind") from None

    @staticmethod
    def validated(kind: Kind[Any], params: Any) -> Any:
        """The kind's params model, or ``Invalid`` naming each field inside params."""
        try:
            return kind.validate_new(params)
        except InvalidParams as exc:
            errors = [FieldError(_path(e["field"]), e["message"]) for e in exc.errors]
            raise Invalid(errors, in_params=True) from None
        except ValidationError as exc:  # a model validator that raised outside its fields
            raise Invalid("params", str(exc), in_params=True) from None

    def refusal(self, kind: Kind[Any], model: Any) -> Refusal | None:
        """Why this deployment cannot run such a job (the kind's own answer), or None."""
        return kind.refusal(model, self.settings) if kind.refusal else None

    def runnable(self, kind: Kind[Any], model: Any) -> None:
        """``Invalid`` (its code, e.g. ``provider_not_configured``) when the deployment
        cannot run such a job: refused before anything is written or charged."""
        refused = self.refusal(kind, model)
        if refused is not None:
            raise Invalid(
                [FieldError(_path(refused.field), refused.message)],
                code=refused.code,
                in_params=True,
            )


class Part:
    """One part of the services (jobs, schedules, accounts, ...): composed by
    :class:`~seojobs.services.core.Services`, it reaches the store, settings, kinds and clock
    and the shared lookups (``base.project``, ``base.kind``) through the one base it is given.
    """

    def __init__(self, base: ServiceBase) -> None:
        self.base = base
        self.db = base.db
        self.settings = base.settings
        self.registry = base.registry
        self.clock = base.clock


def _path(field: str) -> tuple[str | int, ...]:
    if field == "params":
        return ()
    return tuple(int(p) if p.isdigit() else p for p in field.split("."))
