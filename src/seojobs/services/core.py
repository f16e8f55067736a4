"""The service facade every surface (HTTP, CLI, dashboard) calls."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from typing import Any

from seojobs.engine.registry import Registry
from seojobs.records import ProjectRecord, QueueSnapshot, UserRecord
from seojobs.services.audits import AuditServices
from seojobs.services.errors import Conflict, FieldError, Invalid, NotFound
from seojobs.services.schedules import ScheduleServices
from seojobs.services.sessions import SessionServices
from seojobs.settings import Settings
from seojobs.store import accounts, migrate
from seojobs.store import idempotency as idempotency_sql
from seojobs.store import metrics as metrics_sql
from seojobs.store.db import Database
from seojobs.store.errors import Duplicate
from seojobs.store.idempotency import Outcome, Stored

API_KEY_PREFIX = "sj_"


def hash_api_key(key: str) -> str:
    # Keys are 256-bit random tokens, so a fast hash is enough: there is nothing to brute-force.
    return hashlib.sha256(key.encode()).hexdigest()


@dataclass(frozen=True)
class CreatedUser:
    user: UserRecord
    api_key: str


class Services(ScheduleServices, AuditServices, SessionServices):
    """Users, projects, jobs (``JobServices``), schedules (``ScheduleServices``) and site
    audits' reads (``AuditServices``)."""

    @classmethod
    def open(cls, settings: Settings, registry: Registry) -> Services:
        return cls(Database(settings.database_url), settings, registry)

    def migrate(self) -> None:
        """Create or upgrade the schema, the kinds' own tables included."""
        migrate.upgrade(self.db, extra=self.registry.migration_dirs())

    def readiness(self) -> str | None:
        """None when the database answers and its schema is current; else what is wrong."""
        if not self.db.ping():
            return "database_unavailable"
        if not migrate.is_current(self.db, self.registry.migration_dirs()):
            return "schema_out_of_date"
        return None

    def queue_snapshot(self) -> QueueSnapshot:
        """The whole queue's state for ``GET /metrics`` (an operator's view, every user's jobs)."""
        now = self.clock()
        with self.db.read() as conn:
            return metrics_sql.snapshot(conn, now)

    async def close(self) -> None:
        await self.reads.close()
        self.db.dispose()

    # -- Idempotency-Key records (the API's; kept here so HTTP never opens transactions) ---

    def idempotency_begin(
        self, user: UserRecord, key: str, fingerprint: str, in_flight_seconds: float
    ) -> tuple[Outcome, Stored | None]:
        with self.db.write() as conn:
            return idempotency_sql.begin(
                self.db,
                conn,
                user_id=user.id,
                key=key,
                fingerprint=fingerprint,
                now=self.clock(),
                ttl=self.settings.idempotency_ttl_seconds,
                in_flight_ttl=in_flight_seconds,
            )

    def idempotency_finish(
        self, user: UserRecord, key: str, status_code: int, body: str, headers: dict[str, Any]
    ) -> None:
        with self.db.write() as conn:
            idempotency_sql.finish(
                conn, user_id=user.id, key=key, status_code=status_code, body=body, headers=headers
            )

    def idempotency_abandon(self, user: UserRecord, key: str) -> None:
        with self.db.write() as conn:
            idempotency_sql.abandon(conn, user_id=user.id, key=key)

    def create_user(self, name: str, *, rate_limit: str | None = None) -> CreatedUser:
        if not name.strip():
            raise Invalid("name", "must not be empty")
        key = _new_key()
        try:
            with self.db.write() as conn:
                user = accounts.create_user(
                    conn,
                    name=name,
                    api_key_hash=hash_api_key(key),
                    rate_limit=rate_limit,
                    now=self.clock(),
                )
        except Duplicate:
            raise Conflict(f"a user named {name!r} exists", "name_taken") from None
        return CreatedUser(user=user, api_key=key)

    def users(self) -> list[UserRecord]:
        with self.db.read() as conn:
            return accounts.users_list(conn)

    def user_named(self, name: str) -> UserRecord:
        with self.db.read() as conn:
            found = accounts.user_by_name(conn, name)
        if found is None:
            raise NotFound(f"user {name!r}")
        return found

    def rotate_key(self, name: str) -> CreatedUser:
        """A new API key for the user; the old one stops working (once the API's auth cache,
        5 s, has let go of it)."""
        user = self.user_named(name)
        key = _new_key()
        with self.db.write() as conn:
            accounts.set_key_hash(conn, user.id, hash_api_key(key))
        return CreatedUser(user=user, api_key=key)

    def disable_user(self, name: str) -> UserRecord:
        """The user's key stops working (as for a rotated key); its data stays."""
        user = self.user_named(name)
        with self.db.write() as conn:
            accounts.disable(conn, user.id, self.clock())
        return self.user_named(name)

    def authenticate(self, api_key: str) -> UserRecord | None:
        with self.db.read() as conn:
            return accounts.user_by_key_hash(conn, hash_api_key(api_key))

    def set_quotas(self, user: UserRecord, quotas: dict[str, int]) -> UserRecord:
        """Per-user quota limits by override key: ``{"submit_daily": n, "check_daily": n}``."""
        allowed = sorted(q.override_key for q in self.registry.quotas().values())
        for name, value in quotas.items():
            if name not in allowed:
                raise Invalid([FieldError(("quotas", name), f"unknown quota; known: {allowed}")])
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise Invalid([FieldError(("quotas", name), "must be a whole number >= 0")])
        with self.db.write() as conn:
            accounts.set_quotas(conn, user.id, {**(user.quotas or {}), **quotas})
        return self.user(user.id)

    def create_project(self, user: UserRecord, name: str) -> ProjectRecord:
        try:
            with self.db.write() as conn:
                return accounts.create_project(conn, user_id=user.id, name=name, now=self.clock())
        except Duplicate:
            raise _project_name_taken(name) from None

    def rename_project(self, user: UserRecord, project_id: int, name: str) -> ProjectRecord:
        """Give one of the user's projects a new name (unique among their projects)."""
        self.project(user, project_id)
        try:
            with self.db.write() as conn:
                return accounts.rename_project(conn, project_id, name)
        except Duplicate:
            raise _project_name_taken(name) from None

    def delete_project(self, user: UserRecord, project_id: int) -> None:
        """Delete a project with its jobs, schedules and collected data. The default project,
        which holds the jobs started without one (the v1 indexing API's), cannot be deleted."""
        if self.project(user, project_id).is_default:
            raise Conflict(
                f"project {project_id} is your default project: it holds the jobs of the "
                "indexing API (/api/v1) and cannot be deleted",
                "default_project",
            )
        with self.db.write() as conn:
            accounts.delete_project(conn, project_id)


def _project_name_taken(name: str) -> Conflict:
    return Conflict(f"you already have a project named {name!r}", "name_taken")


def _new_key() -> str:
    return API_KEY_PREFIX + secrets.token_urlsafe(32)
