"""``Services`` is composed of its parts, not built as a tower of mixins: one base (the store,
settings, kinds, clock and shared lookups) and one object per concern, sharing that base."""

from __future__ import annotations

from pathlib import Path

from seojobs.engine.registry import Registry
from seojobs.services import Services
from seojobs.services.base import Part, ServiceBase
from seojobs.settings import Settings
from seojobs.store.db import Database

PARTS = (
    "accounts",
    "quotas",
    "jobs",
    "collections",
    "schedules",
    "audits",
    "sessions",
    "idempotency",
)


def test_services_has_one_base_and_composes_its_parts(tmp_path: Path) -> None:
    assert Services.__mro__ == (Services, ServiceBase, object)
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'unused.db'}", plugins=[])
    db = Database(settings.database_url)
    try:
        services = Services(db, settings, Registry())
        parts = [getattr(services, name) for name in PARTS]
    finally:
        db.dispose()
    assert all(isinstance(part, Part) and part.base is services for part in parts)
    assert all(part.db is db and part.registry is services.registry for part in parts)
    assert services.schedules.jobs is services.jobs
    assert services.jobs.quotas is services.quotas
