"""``site_audit`` over TLS on both stores: a real worker crawls a small https site on loopback
(a certificate of a test CA the fetcher is told to trust) whose host also answers http on the
same port; what only an https page can have (mixed content, links to the site's http URLs,
HSTS) is reported on the planted pages and nowhere else."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest

from seojobs.fetch import Fetcher
from seojobs.kinds import load_registry
from seojobs.services import Services
from seojobs.store.db import Database
from tests.conftest import make_settings
from tests.fakes.tls_site import PLANTED, REACHED, Served, TlsSite
from tests.waiting import run_until_final

# No check may depend on how fast the machine is today.
RELAXED = {"thresholds": {"slow_response_ms": 600_000}, "check_external_links": False}


@pytest.fixture(scope="module")
def site() -> Iterator[tuple[TlsSite, Served]]:
    made = TlsSite()
    with made.running() as served:
        yield made, served


@pytest.fixture
def services(store_url: str, site: tuple[TlsSite, Served]) -> Iterator[Services]:
    settings = make_settings(store_url, allow_private_networks=True, fetch_ca_file=site[1].ca_file)
    made = Services(Database(store_url), settings, load_registry(settings))
    yield made
    made.db.dispose()


def _where(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    return parts.scheme, parts.path


async def test_an_https_audit_reports_what_only_https_pages_have_on_the_planted_pages(
    services: Services, site: tuple[TlsSite, Served]
) -> None:
    fake, served = site
    user = services.accounts.create_user("alice").user
    job, _ = services.jobs.create(user, "site_audit", {"start_url": f"{served.base}/", **RELAXED})
    done = await run_until_final(services, user, job)
    assert done.state == "completed", done.error
    found = services.jobs.findings(user, job.id, limit=1000)
    assert {(f.code, *_where(f.data["url"])) for f in found} == {
        (code, "https", path) for code, path in PLANTED
    }
    assert len(found) == len(PLANTED)  # each once
    items = services.jobs.items(user, job.id, limit=1000)
    assert {_where(i.data["url"]) for i in items} == REACHED
    # The http URL linked is the site's own: crawled, and redirected by the site to https.
    assert fake.hits[("http", "/clean-form")] >= 1
    evidence: dict[tuple[str, str], Any] = {
        (f.code, _where(f.data["url"])[1]): f.data["evidence"] for f in found
    }
    origin = served.base.removeprefix("https://")
    assert evidence["mixed_content", "/mixed-image"] == {
        "resources": [f"http://{origin}/photo.png"]
    }
    assert sorted(evidence["mixed_content", "/mixed-assets"]["resources"]) == [
        "http://cdn.example/app.js",
        "http://cdn.example/site.css",
    ]
    assert evidence["https_links_to_http", "/links-http"] == {
        "links": [f"http://{origin}/clean-form"]
    }
    assert evidence["mixed_content", "/base-http"] == {
        "resources": [f"http://{origin}/photo.png", f"http://{origin}/logo.png"]
    }
    assert evidence["https_links_to_http", "/base-http"] == {
        "links": [f"http://{origin}/clean-form"]
    }
    assert evidence["form_insecure_action", "/base-http"] == {"actions": ["search"]}
    # An http link to the host on another port is another site's: neither reported (scope
    # and rule agree) nor crawled.
    assert ("https_links_to_http", "/links-http-other-port") not in evidence
    assert evidence["hsts_missing", "/hsts-max-age-zero"] == {
        "strict_transport_security": "max-age=0"
    }


async def test_the_fetcher_trusts_the_test_ca_only_when_told(
    site: tuple[TlsSite, Served],
) -> None:
    """The store is no part of this: the fetcher alone."""
    _fake, served = site
    plain = make_settings("sqlite:///unused.db", allow_private_networks=True)
    async with Fetcher(plain) as fetcher:
        refused = await fetcher.fetch(f"{served.base}/")
    assert refused.error_kind == "tls_error", refused.error
    trusting = plain.model_copy(update={"fetch_ca_file": served.ca_file})
    async with Fetcher(trusting) as fetcher:
        answered = await fetcher.fetch(f"{served.base.replace('https', 'http')}/no-hsts")
    assert (answered.status, answered.final_url) == (200, f"{served.base}/no-hsts")
    assert "strict-transport-security" not in answered.headers
