"""Shared helpers for the dashboard tests: sign in as a browser would (the form, its CSRF
token, the cookie), read tokens out of pages."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

import httpx

from seojobs.records import JobRecord, NewFinding, UserRecord
from seojobs.services import Services
from seojobs.store import jobs as job_sql
from seojobs.store import results
from seojobs.store.coltypes import utcnow
from tests.api_helpers import TLS, Api

_CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')


def csrf_of(html: str) -> str:
    """The CSRF token of the first form on a page."""
    found = _CSRF.search(html)
    assert found, "the page has no form with a CSRF token"
    return found.group(1)


def browser(app: Api) -> httpx.Client:
    """A cookie-keeping client without a key, that does not follow redirects; from the
    ``Api``'s own loopback address when it has one (``Api.own()``), as ``Api.client``."""
    transport = (
        None if app.source is None else httpx.HTTPTransport(local_address=app.source, verify=TLS)
    )
    client = httpx.Client(
        base_url=app.base, timeout=60.0, follow_redirects=False, transport=transport, verify=TLS
    )
    app.clients.append(client)
    return client


def sign_in(app: Api, key: str) -> httpx.Client:
    """A client signed in to the dashboard with ``key``."""
    client = browser(app)
    answer = post_login(client, key)
    assert answer.status_code == 303, answer.text
    return client


def post_login(client: httpx.Client, key: str, *, next_path: str | None = None) -> httpx.Response:
    form = client.get("/dashboard/login")
    assert form.status_code == 200
    data = {"csrf_token": csrf_of(form.text), "api_key": key}
    if next_path is not None:
        data["next"] = next_path
    return client.post("/dashboard/login", data=data)


def post_form(client: httpx.Client, page: str, action: str, data: dict[str, str]) -> httpx.Response:
    """Post ``data`` to ``action`` with the CSRF token of ``page``'s form, as a browser would."""
    shown = client.get(page)
    assert shown.status_code == 200, shown.text
    return client.post(action, data={"csrf_token": csrf_of(shown.text), **data})


def collected_job(
    services: Services,
    user: UserRecord,
    project_id: int,
    data: Any,
    findings: Sequence[tuple[str, str]] = (),
) -> JobRecord:
    """A completed ``test_crawl`` job in ``project_id`` that collected ``data`` for
    ``shop.test`` and found ``findings`` (code, severity): written through the store as a
    worker would, so no site is crawled. The job is due only in an hour, so that a running
    worker leaves it alone."""
    created, _ = services.jobs.create(
        user,
        "test_crawl",
        {"start": "http://shop.test/"},
        project_id=project_id,
        delay_seconds=3600,
    )
    db = services.db
    later = utcnow() + timedelta(hours=2)
    with db.write() as conn:  # its kind only: a shared database holds other tests' jobs
        [job] = job_sql.claim(db, conn, "dashboard-test", 1, later, 30, kinds=["test_crawl"])
    assert job.id == created.id
    with db.write() as conn:
        results.collect(
            db,
            conn,
            job_id=job.id,
            attempt=job.attempt,
            project_id=project_id,
            kind=job.kind,
            rows=[("shop.test", data)],
            now=utcnow(),
        )
    found = [NewFinding(code, severity) for code, severity in findings]
    with db.write() as conn:
        results.set_job_findings(conn, job.id, job.attempt, found, later)
    with db.write() as conn:
        assert job_sql.complete_many(db, conn, [(job.id, job.attempt, None)], later)
    return job
