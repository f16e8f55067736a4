"""A job keeps the X-Request-ID it was made under (migration 0010), on both stores: read back
by the API and handed to the worker with its claim."""

from __future__ import annotations

from seojobs.logfmt import REQUEST_ID
from seojobs.services import Services
from seojobs.store import jobs as job_sql
from seojobs.store.coltypes import utcnow


def test_the_request_id_is_stored_and_claimed_with_the_job(services: Services) -> None:
    user = services.accounts.create_user("alice").user
    token = REQUEST_ID.set("edge-7f3a:42")
    try:
        made, _ = services.jobs.create(user, "test_noop", {})
    finally:
        REQUEST_ID.reset(token)
    plain, _ = services.jobs.create(user, "test_noop", {})
    assert services.jobs.get(user, made.id).request_id == "edge-7f3a:42"
    assert services.jobs.get(user, made.id, summary=True).request_id == "edge-7f3a:42"
    assert plain.request_id is None
    db = services.db
    with db.write() as conn:
        claimed = job_sql.claim(db, conn, "w", 2, utcnow(), 30)
    assert {j.id: j.request_id for j in claimed} == {made.id: "edge-7f3a:42", plain.id: None}
