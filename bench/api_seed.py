"""Seed a scratch database for ``bench/api.py``: one user, N index-check jobs, no items.

Jobs go in with ``insert_many_bare`` in chunks. ``items`` holds one URL so ``items_total`` is 1,
but ``insert_many_bare`` writes no item rows (status GETs never read them). Then every other
job is moved to ``completed`` (one URL checked, ``{"indexed": 1}``), so the status bodies mix
open jobs (with ``Retry-After``) and finished ones.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from sqlalchemy import func, select, update

from seojobs.kinds import load_registry
from seojobs.services import Services
from seojobs.services.indexing import CHECK
from seojobs.settings import Settings
from seojobs.store import jobs as job_sql
from seojobs.store import migrate
from seojobs.store.coltypes import utcnow
from seojobs.store.db import Database
from seojobs.store.records import NewJob
from seojobs.store.tables import jobs

CHUNK = 5000
PARAMS = {"urls": ["https://example.com/"], "engine": "google", "duplicates_removed": 0}


@dataclass(frozen=True)
class Seeded:
    api_key: str  # a secret: passed to the load generator, never printed
    first_id: int
    last_id: int
    seconds: float

    @property
    def count(self) -> int:
        return self.last_id - self.first_id + 1


def seed(url: str, count: int) -> Seeded:
    """Migrate ``url``, create the user ``bench`` and ``count`` jobs with consecutive ids."""
    started = time.perf_counter()
    settings = Settings(database_url=url)
    db = Database(settings.database_url)
    try:
        migrate.upgrade(db)
        created = Services(db, settings, load_registry(settings)).create_user("bench")
        project_id = created.user.default_project_id
        now = utcnow()
        for start in range(0, count, CHUNK):
            news = [
                NewJob(
                    project_id=project_id,
                    kind=CHECK,
                    params=PARAMS,
                    run_at=now,
                    items=["https://example.com/"],
                )
                for _ in range(min(CHUNK, count - start))
            ]
            with db.write() as conn:
                job_sql.insert_many_bare(db, conn, news, now)
        with db.write() as conn:
            conn.execute(
                update(jobs)
                .where(jobs.c.id % 2 == 0)
                .values(
                    state="completed",
                    items_done=1,
                    counters={"indexed": 1},
                    started_at=now,
                    completed_at=now,
                    updated_at=now,
                )
            )
            first, last, n = conn.execute(
                select(func.min(jobs.c.id), func.max(jobs.c.id), func.count()).where(
                    jobs.c.project_id == project_id
                )
            ).one()
    finally:
        db.dispose()
    if n != count or last - first + 1 != count:
        raise RuntimeError(
            f"expected {count} jobs with consecutive ids, got {n} in {first}..{last}"
        )
    return Seeded(created.api_key, int(first), int(last), time.perf_counter() - started)
