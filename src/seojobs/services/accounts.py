"""Users and projects (``services.accounts``): users and their API keys, and the projects
that scope everything else."""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from seojobs.engine.registry import Registry
from seojobs.records import ProjectRecord, UserRecord
from seojobs.services import texts
from seojobs.services.base import Part, ServiceBase
from seojobs.services.errors import Conflict, Invalid, NotFound
from seojobs.store import accounts
from seojobs.store import usage as usage_sql
from seojobs.store.errors import Duplicate

if TYPE_CHECKING:
    from seojobs.settings import Settings
    from seojobs.store.db import Database

API_KEY_PREFIX = "sj_"


def hash_api_key(key: str) -> str:
    # Keys are 256-bit random tokens, so a fast hash is enough: there is nothing to brute-force.
    return hashlib.sha256(key.encode()).hexdigest()


@dataclass(frozen=True)
class CreatedUser:
    user: UserRecord
    api_key: str


class Accounts(Part):
    @classmethod
    def open(cls, db: Database, settings: Settings) -> Accounts:
        """This part alone, for ``seojobs users``: users and their keys need no kind (its
        registry has none) and none of the other parts."""
        return cls(ServiceBase(db, settings, Registry()))

    def create_user(self, name: str, *, rate_limit: str | None = None) -> CreatedUser:
        if not name.strip():
            raise Invalid("name", "must not be empty")
        name = texts.checked_name(name)  # one line, as every other name (issue 25.5)
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

    def create_project(
        self, user: UserRecord, name: str, tracked: Mapping[str, Any] | None = None
    ) -> ProjectRecord:
        """A new project; ``tracked``: its ``domain``, ``brand_names`` and ``competitors``
        (``services.tracking``; ``Invalid`` naming a refused field)."""
        name = texts.checked_name(name)
        values = _tracking_checked(tracked or {})
        try:
            with self.db.write() as conn:
                return accounts.create_project(
                    conn, user_id=user.id, name=name, now=self.clock(), tracked=values
                )
        except Duplicate:
            raise _project_name_taken(name) from None

    def rename_project(self, user: UserRecord, project_id: int, name: str) -> ProjectRecord:
        """Give one of the user's projects a new name (unique among their projects)."""
        return self.update_project(user, project_id, {"name": name})

    def update_project(
        self, user: UserRecord, project_id: int, changes: Mapping[str, Any]
    ) -> ProjectRecord:
        """Set what ``changes`` holds of a project's ``name`` (unique among the user's
        projects) and tracked fields (``null`` clears one); the others stay."""
        project = self.base.project(user, project_id)
        values = _tracking_checked(changes)
        if "name" in changes:
            values["name"] = texts.checked_name(changes["name"])
        if not values:
            return project
        try:
            with self.db.write() as conn:
                return accounts.update_project(conn, project_id, values)
        except Duplicate:
            raise _project_name_taken(values["name"]) from None

    def delete_project(self, user: UserRecord, project_id: int) -> None:
        """Delete a project with its jobs, schedules and collected data. The default project,
        which holds the jobs started without one (the v1 indexing API's), cannot be deleted."""
        if self.base.project(user, project_id).is_default:
            raise Conflict(
                f"project {project_id} is your default project: it holds the jobs of the "
                "indexing API (/api/v1) and cannot be deleted",
                "default_project",
            )
        with self.db.write() as conn:
            # The user's lock first, as a tick's firing takes it (services/schedules.py):
            # firing holds the schedule row and then needs the project row for its job, the
            # delete held the project row and then needed the schedule row (a deadlock).
            usage_sql.lock_user(self.db, conn, user.id)
            accounts.delete_project(conn, project_id)


def _tracking_checked(tracked: Mapping[str, Any]) -> dict[str, Any]:
    # Imported here: what a project tracks is checked with the kinds' own field types (the
    # domain_lookup, keyword_research and geo_lookup params), which `seojobs users` (this part
    # alone, Accounts.open) has no use for.
    from seojobs.services import tracking

    return tracking.checked(tracked)


def _project_name_taken(name: str) -> Conflict:
    return Conflict(f"you already have a project named {name!r}", "name_taken")


def _new_key() -> str:
    return API_KEY_PREFIX + secrets.token_urlsafe(32)
