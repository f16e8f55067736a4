"""The services every surface (HTTP, CLI, dashboard) calls: one object composed of its parts.

``Services`` holds the store, settings, kinds and clock with the lookups every part shares
(``ServiceBase``: ``user``, ``project``, ``kind``), and one object per concern:
``accounts`` (users, keys, projects), ``quotas``, ``jobs``, ``collections`` (collected
data), ``schedules``, ``audits`` (site audits' reads), ``sessions`` (dashboard sign-ins) and
``idempotency`` (the API's Idempotency-Key records). A surface calls the part:
``services.jobs.create(user, kind, params)``.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from seojobs.engine.registry import Registry
from seojobs.records import QueueSnapshot
from seojobs.services.accounts import Accounts
from seojobs.services.audits import Audits
from seojobs.services.base import ServiceBase
from seojobs.services.collection_config import CollectionConfig
from seojobs.services.collections import Collections
from seojobs.services.idempotency import Idempotency
from seojobs.services.jobs import Jobs
from seojobs.services.monitored import Monitor
from seojobs.services.quotas import Quotas
from seojobs.services.schedules import Schedules
from seojobs.services.sessions import Sessions
from seojobs.services.tracked import Tracked
from seojobs.services.webhook_delivery import Dispatcher
from seojobs.services.webhooks import Webhooks
from seojobs.settings import Settings
from seojobs.store import metrics as metrics_sql
from seojobs.store import migrate
from seojobs.store.coltypes import utcnow
from seojobs.store.db import Database


class Services(ServiceBase):
    """The shared base and its parts (see the module's docstring)."""

    def __init__(
        self,
        db: Database,
        settings: Settings,
        registry: Registry,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        super().__init__(db, settings, registry, clock)
        self.accounts = Accounts(self)
        self.quotas = Quotas(self)
        self.jobs = Jobs(self, self.quotas)
        self.collections = Collections(self)
        self.schedules = Schedules(self, self.jobs, self.quotas)
        self.collection = CollectionConfig(self, self.schedules)
        self.tracked = Tracked(self)
        self.monitored = Monitor(self, self.collection)
        self.audits = Audits(self, self.jobs)
        self.sessions = Sessions(self)
        self.idempotency = Idempotency(self)
        self.webhooks = Webhooks(self)

    def webhook_dispatcher(self) -> Dispatcher:
        """What a worker runs beside its jobs to deliver webhooks (``Worker(background=)``)."""
        return Dispatcher(self.db, self.settings, self.clock)

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

    async def database_answers(self, within: float) -> bool:
        """Does the database answer a fresh connection within ``within`` s? (Never raises.)"""
        return await self.db.probe(within)

    def queue_snapshot(self) -> QueueSnapshot:
        """The whole queue's state for ``GET /metrics`` (an operator's view, every user's jobs)."""
        now = self.clock()
        with self.db.read() as conn:
            return metrics_sql.snapshot(conn, now)

    async def close(self) -> None:
        await self.reads.close()
        self.db.dispose()
