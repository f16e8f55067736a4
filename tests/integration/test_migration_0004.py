"""Migration 0004 on a database in use: every existing item gets its dedupe key, and quota use
recorded before charges existed (top-level indexing jobs not refused for quota) is charged."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

import pytest
from sqlalchemy import select

from seojobs.store import migrate
from seojobs.store.db import Database
from seojobs.store.tables import job_items, usage_charges
from tests.schema_0002 import TABLES, _item, _job


@pytest.fixture
def in_use(at_0002: Database) -> Iterator[Database]:
    db = at_0002
    jobs = [
        # bob's (user 2, project 3) index jobs: charged, refused, a follow-up of the first
        _job(10, 3, "completed", kind="index_check", items_total=3),
        _job(11, 3, "failed", kind="index_submit", items_total=2, error_code="quota_exceeded"),
        _job(12, 3, "pending", kind="index_check", items_total=3, parent_id=10),
        _job(13, 3, "pending", kind="index_submit", items_total=2),
    ]
    with db.write() as conn:
        conn.execute(TABLES["jobs"].insert(), jobs)
        conn.execute(
            TABLES["job_items"].insert(), [_item(100 + i, 10, i, "done") for i in range(3)]
        )
    yield db


def test_upgrade_keys_every_item_and_charges_past_use(in_use: Database) -> None:
    migrate.upgrade(in_use)
    with in_use.read() as conn:
        items = conn.execute(select(job_items.c.input, job_items.c.key)).all()
        charges = conn.execute(
            select(
                usage_charges.c.user_id,
                usage_charges.c.job_id,
                usage_charges.c.quota,
                usage_charges.c.amount,
            ).order_by(usage_charges.c.job_id)
        ).all()
    assert items and all(key == hashlib.sha256(i.encode()).hexdigest() for i, key in items)
    assert [tuple(c) for c in charges] == [(2, 10, "check", 3), (2, 13, "submit", 2)]
