"""``render: "js"`` audits (issue 30.1) in Debian's Chromium: a real worker crawls a fixture
site whose scripts change pages; each rendering check is found on exactly the page planted
for it, a link only the rendered DOM has is crawled, a page that cannot render is audited
from its raw HTML (the audit completes), an https site of the fetcher's own CA renders too,
and nothing of a renderer outlives its audit.

On SQLite only: what rendering finds is Chromium's, and its findings are stored as every other
check's, on both stores in the other site audit tests (test_site_audit, ..._links, ...). Each
rendered audit costs 8-10 CPU-s with the default two Chromiums (the https one renders with one)."""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import urlsplit

import pytest

from seojobs.kinds import load_registry
from seojobs.kinds.site_audit import rules_render
from seojobs.services import Services
from seojobs.store.db import Database
from tests.conftest import make_settings
from tests.fakes.render_site import PLANTED, RenderSite
from tests.fakes.tls_site import TlsSite
from tests.integration.test_web_vitals import LOOPBACK_ONLY, marked
from tests.waiting import run_until_final

# Real Chromium renders (12-15 s each): slow, so tests/scheduling.py starts them first (see
# test_web_vitals' SLOW).
pytestmark = [pytest.mark.stores("sqlite"), pytest.mark.slow]
RENDER_CODES = {check.code for check, _rule in rules_render.RULES}
RELAXED = {"thresholds": {"slow_response_ms": 600_000}}


@pytest.fixture
def render_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEOJOBS_SITE_AUDIT_RENDER_RESOLVER_RULES", LOOPBACK_ONLY)
    monkeypatch.setenv("SEOJOBS_SITE_AUDIT_RENDER_TIMEOUT", "4")


def _services(store_url: str) -> Services:
    settings = make_settings(store_url, allow_private_networks=True)
    return Services(Database(store_url), settings, load_registry(settings))


async def _audit(store_url: str, render: str) -> tuple[RenderSite, list[Any]]:
    """The fixture site (its hits) and the findings of its audit, which completed."""
    services = _services(store_url)
    site = RenderSite()
    try:
        user = services.accounts.create_user("alice").user
        project = services.accounts.create_project(user, "site")
        with site.running() as base:
            params = {"start_url": f"{base}/", "render": render, **RELAXED}
            job, _ = services.jobs.create(user, "site_audit", params, project_id=project.id)
            done = await run_until_final(services, user, job, timeout=180)
        assert done.state == "completed", done.error
        return site, services.jobs.findings(user, job.id, limit=10_000)
    finally:
        services.db.dispose()


@pytest.mark.timeout(300)
async def test_a_rendered_audit_finds_what_scripts_change_on_each_planted_page(
    store_url: str, render_env: None
) -> None:
    site, found = await _audit(store_url, "js")
    rendered = {(f.code, urlsplit(f.data["url"]).path) for f in found if f.code in RENDER_CODES}
    assert rendered == PLANTED
    assert len([f for f in found if f.code in RENDER_CODES]) == len(PLANTED)  # each once
    # The link only /spa's scripts write was followed; the slow page's evidence says why.
    assert site.hits.get("/only-js") == 2  # fetched, then rendered
    failed = next(f for f in found if f.code == "render_failed")
    assert "timeout" in failed.data["evidence"]["error"].lower()
    blocked = next(f for f in found if f.code == "render_blocked_resources")
    assert [r["url"] for r in blocked.data["evidence"]["resources"]] == [
        "http://cdn.invalid/app.js"
    ]
    # The rendered DOM was audited: /spa's heading is there, so no h1_missing on it.
    assert ("h1_missing", "/spa") not in {(f.code, urlsplit(f.data["url"]).path) for f in found}
    assert marked(str(os.getpid())) == {}  # no renderer or Chromium left behind


async def test_a_raw_audit_renders_nothing(sqlite_url: str, render_env: None) -> None:
    site, found = await _audit(sqlite_url, "raw")
    assert {f.code for f in found} & RENDER_CODES == set()
    assert "/only-js" not in site.hits  # only a script links it
    assert ("h1_missing", "/spa") in {(f.code, urlsplit(f.data["url"]).path) for f in found}
    assert "/hang" not in site.hits  # no browser loaded the page's image


@pytest.mark.timeout(300)
async def test_a_rendered_audit_of_an_https_site_trusts_the_fetchers_ca(
    store_url: str, render_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Chromium trusts ``SEOJOBS_FETCH_CA_FILE`` as the fetcher does: every https page of
    the site (a certificate of the test CA) is rendered, none fails, and nothing is left."""
    # One renderer: what is tested is the trust, the same in each (the first test audits with
    # the default two); a second Chromium cost ~1.2 CPU-s.
    monkeypatch.setenv("SEOJOBS_SITE_AUDIT_RENDER_CONCURRENCY", "1")
    fake = TlsSite()
    with fake.running() as served:
        settings = make_settings(
            store_url, allow_private_networks=True, fetch_ca_file=served.ca_file
        )
        services = Services(Database(store_url), settings, load_registry(settings))
        try:
            user = services.accounts.create_user("alice").user
            params = {"start_url": f"{served.base}/", "render": "js", **RELAXED}
            job, _ = services.jobs.create(user, "site_audit", {**params, "max_pages": 4})
            done = await run_until_final(services, user, job, timeout=180)
            assert done.state == "completed", done.error
            found = services.jobs.findings(user, job.id, limit=1000)
            items = services.jobs.items(user, job.id, limit=1000)
        finally:
            services.db.dispose()
    failed = [f.data["evidence"] for f in found if f.code == "render_failed"]
    assert failed == []
    pages = [urlsplit(i.data["url"]).path for i in items if i.data["url"].startswith("https:")]
    assert len(pages) == 4
    # Each page fetched, then loaded again by Chromium (over https, trusting the test CA).
    assert all(fake.hits[("https", path)] >= 2 for path in pages), fake.hits
    assert marked(str(os.getpid())) == {}  # no renderer or Chromium left behind
