"""The webhook outbox written with a batch of completions, on both stores (``store_url``):
one delivery per (job, subscribed enabled endpoint), whatever the batch mixes, an endpoint
created by another connection just before the batch included; and what the batch costs in
statements (issue 23.6: on PostgreSQL plain completions are one statement, on SQLite the
outbox statement runs only when an endpoint exists)."""

from __future__ import annotations

from sqlalchemy import select

from seojobs.services import Services
from seojobs.store import jobs as job_sql
from seojobs.store.coltypes import utcnow
from seojobs.store.db import Database
from seojobs.store.tables import webhook_deliveries as D
from tests.statements import statements

LEASE = 30.0
HOOK = "https://hooks.example.com/in"


def _claim(db: Database) -> dict[int, int]:
    with db.write() as conn:
        return {j.id: j.attempt for j in job_sql.claim(db, conn, "w1", 50, utcnow(), LEASE)}


def _deliveries(db: Database) -> list[tuple[int, int, str]]:
    query = select(D.c.endpoint_id, D.c.job_id, D.c.event_type).order_by(D.c.id)
    with db.read() as conn:
        return sorted((int(e), int(j), str(t)) for e, j, t in conn.execute(query))


def test_a_batch_of_completions_writes_each_delivery_once(
    services: Services, db: Database, store_url: str
) -> None:
    alice = services.accounts.create_user("alice").user
    bob = services.accounts.create_user("bob").user
    carol = services.accounts.create_user("carol").user  # no endpoint at all
    hooks = services.webhooks
    every = hooks.create(alice, url=HOOK, events="*")
    completed_only = hooks.create(alice, url=HOOK, events=["job.completed"])
    hooks.create(alice, url=HOOK, events=["job.failed"])  # not this event
    hooks.create(alice, url=HOOK, events="*", enabled=False)  # disabled
    plain, _ = services.jobs.create(alice, "test_noop", {})
    with_result, _ = services.jobs.create(alice, "test_noop", {})
    bobs, _ = services.jobs.create(bob, "test_noop", {})
    carols, _ = services.jobs.create(carol, "test_noop", {})
    held = _claim(db)
    # Bob's endpoint is created after the claim, by another connection, and committed just
    # before the batch that completes his job: its event is delivered.
    other = Database(store_url)
    try:
        late = Services(other, services.settings, services.registry).webhooks.create(
            bob, url=HOOK, events="*"
        )
    finally:
        other.dispose()
    batch = [
        (plain.id, held[plain.id], None),
        (with_result.id, held[with_result.id], {"r": 1}),
        (bobs.id, held[bobs.id], None),
        (carols.id, held[carols.id], None),
    ]
    with db.write() as conn:
        done = job_sql.complete_many(db, conn, batch, utcnow())
    assert done == {plain.id, with_result.id, bobs.id, carols.id}
    with db.write() as conn:  # a late completion of the same claims changes nothing
        assert job_sql.complete_many(db, conn, batch, utcnow()) == set()
    completed = "job.completed"
    assert _deliveries(db) == sorted(
        [
            (every.id, plain.id, completed),
            (every.id, with_result.id, completed),
            (completed_only.id, plain.id, completed),
            (completed_only.id, with_result.id, completed),
            (late.id, bobs.id, completed),
        ]
    )


def test_plain_completions_cost_one_statement_on_postgresql_and_no_outbox_without_endpoints(
    services: Services, db: Database
) -> None:
    alice = services.accounts.create_user("alice").user
    made = [services.jobs.create(alice, "test_noop", {})[0] for _ in range(3)]
    held = _claim(db)
    batch = [(job.id, held[job.id], None) for job in made]
    with statements(db) as seen, db.write() as conn:
        assert job_sql.complete_many(db, conn, batch, utcnow()) == {job.id for job in made}
    sent = [s for s in seen if not s.lstrip().upper().startswith(("BEGIN", "COMMIT"))]
    if db.dialect == "postgresql":
        assert len(sent) == 1, sent
    assert not [s for s in sent if "INSERT INTO webhook_deliveries" in s and "WITH" not in s]
