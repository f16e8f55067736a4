"""The service facade every surface (HTTP, CLI, dashboard) calls."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass

from seojobs.services.errors import Conflict, FieldError, Invalid
from seojobs.services.schedules import ScheduleServices
from seojobs.store import accounts
from seojobs.store.errors import Duplicate
from seojobs.store.records import ProjectRecord, UserRecord

API_KEY_PREFIX = "sj_"


def hash_api_key(key: str) -> str:
    # Keys are 256-bit random tokens, so a fast hash is enough: there is nothing to brute-force.
    return hashlib.sha256(key.encode()).hexdigest()


@dataclass(frozen=True)
class CreatedUser:
    user: UserRecord
    api_key: str


class Services(ScheduleServices):
    """Users, projects, jobs (``JobServices``) and schedules (``ScheduleServices``)."""

    def create_user(self, name: str, *, rate_limit: str | None = None) -> CreatedUser:
        if not name.strip():
            raise Invalid("name", "must not be empty")
        key = API_KEY_PREFIX + secrets.token_urlsafe(32)
        with self.db.write() as conn:
            user = accounts.create_user(
                conn,
                name=name,
                api_key_hash=hash_api_key(key),
                rate_limit=rate_limit,
                now=self.clock(),
            )
        return CreatedUser(user=user, api_key=key)

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
            raise Conflict(f"you already have a project named {name!r}", "name_taken") from None

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
