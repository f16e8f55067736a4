"""``domain_lookup`` end to end on both stores: a real worker looks a domain up against a fake
RDAP service, a fake DNS server and a TLS server on loopback; what it collects; the parts that
fail on their own; a lookup that learns nothing; the SSRF guard; the quotas."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dns.name
import pytest

from seojobs.kinds import load_registry
from seojobs.records import JobRecord, UserRecord
from seojobs.services import Invalid, NotFound, Services
from seojobs.store.db import Database
from tests.conftest import make_settings
from tests.fakes.rdap import registry_object
from tests.fakes.tcp import Endpoint
from tests.integration.domain_world import DOMAIN, World, domain_world
from tests.waiting import run_until_final


def _services(store_url: str, **overrides: Any) -> Services:
    settings = make_settings(store_url, **{"allow_private_networks": True, **overrides})
    return Services(Database(store_url), settings, load_registry(settings))


async def _look_up(services: Services, domain: str) -> tuple[UserRecord, JobRecord]:
    """A new user's lookup of ``domain``, run to its end: (the user, the job as it ended)."""
    user = services.accounts.create_user("alice").user
    job, _ = services.jobs.create(user, "domain_lookup", {"domain": domain})
    return user, await run_until_final(services, user, job)


@pytest.fixture
def world(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[World]:
    with domain_world(monkeypatch, tmp_path) as made:
        yield made


@pytest.fixture
def services(store_url: str, world: World) -> Iterator[Services]:
    made = _services(store_url)
    yield made
    made.db.dispose()


async def test_a_lookup_collects_registration_dns_and_certificate(
    services: Services, world: World
) -> None:
    user = services.accounts.create_user("alice").user
    project = services.accounts.create_project(user, "site")
    job, _ = services.jobs.create(
        user, "domain_lookup", {"domain": "Example.TEST."}, project_id=project.id
    )
    assert job.params["domain"] == DOMAIN  # stored as the name queried
    with pytest.raises(NotFound):  # nothing collected before the lookup completes
        services.collections.latest(user, project.id, "domain_lookup")
    done = await run_until_final(services, user, job)
    assert done.state == "completed", done.error
    found = services.collections.latest(user, project.id, "domain_lookup", DOMAIN)
    assert (found.job_id, found.subject) == (job.id, DOMAIN)
    data = found.data
    assert data["errors"] == [] and done.result == {"domain": DOMAIN, "errors": []}

    rdap = data["rdap"]
    base = world.rdap.base
    assert rdap["error"] is None
    assert rdap["registrar"] == {
        "name": "RESERVED-Internet Assigned Numbers Authority",
        "iana_id": "376",
        "abuse_email": "abuse@iana.example",
    }
    assert (rdap["created"], rdap["expires"], rdap["updated"]) == (
        "1995-08-14T04:00:00Z",
        "2026-08-13T04:00:00Z",
        "2025-08-14T07:01:39Z",
    )
    assert rdap["status"] == ["client delete prohibited", "client transfer prohibited"]
    assert rdap["nameservers"] == ["a.iana-servers.net", "b.iana-servers.net"]
    assert rdap["dnssec"] is True
    assert rdap["registry_url"] == f"{base}/registry/domain/{DOMAIN}"
    assert rdap["registrar_url"] == f"{base}/registrar/domain/{DOMAIN.upper()}"
    assert rdap["registrar_error"] is None
    # One bootstrap fetch, one registry query, one registrar hop; RDAP JSON asked for.
    assert world.rdap.hits == {
        "/bootstrap/dns.json": 1,
        f"/registry/domain/{DOMAIN}": 1,
        f"/registrar/domain/{DOMAIN.upper()}": 1,
    }
    assert all("application/rdap+json" in accept for accept in world.rdap.accepts)

    dns = data["dns"]
    records = dns["records"]
    assert dns["error"] is None
    assert records["A"] == ["127.0.0.1"] and records["AAAA"] == ["::1"]
    assert records["MX"] == [
        {"preference": 10, "exchange": "mail.example.test"},
        {"preference": 20, "exchange": "backup.example.test"},
    ]
    assert records["NS"] == ["ns1.example.test", "ns2.example.test"]
    assert "site-verification=abc123" in records["TXT"]
    assert {"flags": 0, "tag": "issue", "value": "letsencrypt.org"} in records["CAA"]
    assert records["SOA"]["serial"] == 2026010101
    assert records["SOA"]["mname"] == "ns1.example.test"
    assert dns["spf"]["includes"] == ["_spf.mail.test"] and dns["spf"]["all"] == "fail"
    assert {"qualifier": "pass", "mechanism": "ip4", "value": "192.0.2.0/24"} in dns["spf"][
        "mechanisms"
    ]
    dmarc = dns["dmarc"]
    assert (dmarc["policy"], dmarc["subdomain_policy"], dmarc["percent"]) == (
        "reject",
        "quarantine",
        50,
    )
    assert dmarc["rua"] == ["mailto:d@example.test"]

    tls = data["tls"]
    assert tls["error"] is None
    assert (tls["host"], tls["port"], tls["address"]) == (DOMAIN, world.tls.port, "127.0.0.1")
    assert tls["verified"] is True and tls["verify_error"] is None
    assert tls["hostname_match"] is True and tls["expired"] is False
    assert tls["sans"] == [DOMAIN, f"www.{DOMAIN}"]
    assert tls["issuer"]["organization"] == "Fake Test CA"
    assert tls["subject"]["common_name"] == DOMAIN
    assert tls["subject"]["organization"] == "Example Test Site"
    assert tls["protocol"] in ("TLSv1.2", "TLSv1.3") and tls["cipher"]
    assert tls["not_after"] == world.not_after.isoformat().replace("+00:00", "Z")
    assert tls["days_to_expiry"] == 90  # 90 days and 12 hours, counted in whole days
    assert tls["not_before"] < tls["not_after"]


async def test_a_second_lookup_reuses_the_bootstrap_file_and_a_part_that_fails_is_recorded(
    services: Services, world: World
) -> None:
    """The registry is down for the second lookup: it completes with DNS and TLS, and the
    RDAP part says why it is missing. The bootstrap file was fetched once for both."""
    _user, first = await _look_up(services, DOMAIN)
    assert first.state == "completed"
    user = services.accounts.create_user("bob").user
    world.rdap.registry_down = True
    second, _ = services.jobs.create(user, "domain_lookup", {"domain": DOMAIN})
    done = await run_until_final(services, user, second)
    assert done.state == "completed", done.error
    data = services.collections.latest(user, second.project_id, "domain_lookup", DOMAIN).data
    assert data["rdap"]["error"]["code"] == "rdap_unavailable"
    assert "503" in data["rdap"]["error"]["message"]
    assert [(e["part"], e["code"]) for e in data["errors"]] == [("rdap", "rdap_unavailable")]
    assert data["dns"]["error"] is None and data["dns"]["records"]["A"] == ["127.0.0.1"]
    assert data["tls"]["error"] is None and data["tls"]["verified"] is True
    assert world.rdap.hits["/bootstrap/dns.json"] == 1
    assert world.rdap.hits[f"/registry/domain/{DOMAIN}"] == 2


async def test_a_certificate_for_another_name_is_read_and_reported_unverified(
    services: Services, world: World
) -> None:
    user, done = await _look_up(services, "other.example")
    assert done.state == "completed", done.error
    tls = services.collections.latest(user, done.project_id, "domain_lookup").data["tls"]
    assert tls["verified"] is False and tls["hostname_match"] is False
    assert "mismatch" in tls["verify_error"].lower()
    assert tls["sans"] == [DOMAIN, f"www.{DOMAIN}"]  # read all the same


async def test_a_failing_resolver_costs_the_dns_based_parts_only(
    services: Services, world: World
) -> None:
    world.dns.servfail = True
    user, done = await _look_up(services, DOMAIN)
    assert done.state == "completed", done.error
    data = services.collections.latest(user, done.project_id, "domain_lookup").data
    assert [(e["part"], e["code"]) for e in data["errors"]] == [
        ("dns", "dns_unavailable"),
        ("tls", "tls_unavailable"),  # its addresses come from the same resolver
    ]
    assert world.tls.connections == 0
    assert data["rdap"]["error"] is None and data["rdap"]["registrar"]["iana_id"] == "376"


async def test_a_resolver_that_never_answers_is_cut_off_by_the_part_timeout(
    services: Services, world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each part ends within SEOJOBS_DOMAIN_LOOKUP_PART_TIMEOUT, failed on its own, whatever
    its own timeouts say: the lookup completes with what the other parts found."""
    monkeypatch.setenv("SEOJOBS_DOMAIN_LOOKUP_DNS_TIMEOUT", "600")
    monkeypatch.setenv("SEOJOBS_DOMAIN_LOOKUP_PART_TIMEOUT", "1")
    world.dns.silent = True
    user, done = await _look_up(services, DOMAIN)
    assert done.state == "completed", done.error
    data = services.collections.latest(user, done.project_id, "domain_lookup").data
    assert data["dns"]["error"] == {
        "code": "dns_unavailable",
        "message": "did not finish within 1 s",
    }
    assert data["tls"]["error"]["code"] == "tls_unavailable"
    assert data["rdap"]["error"] is None
    assert world.dns.queries  # it was asked


async def test_a_domain_nobody_registered_fails_with_domain_not_found(
    services: Services, world: World
) -> None:
    user, done = await _look_up(services, "nowhere.test")
    assert done.state == "failed"
    assert done.error_code == "domain_not_found" and done.error_message is not None
    assert all(f"{part}:" in done.error_message for part in ("rdap", "dns", "tls"))
    assert done.attempt == 1  # never retried
    with pytest.raises(NotFound):  # a failed lookup collected nothing
        services.collections.latest(user, done.project_id, "domain_lookup")


async def test_the_certificate_probe_obeys_the_ssrf_guard(store_url: str, world: World) -> None:
    """Without SEOJOBS_ALLOW_PRIVATE_NETWORKS, a domain whose DNS points at loopback gets no
    connection, nor a registrar link to loopback: the TLS part and the registrar hop are
    refused, the rest of the lookup stands (the registry is the operator's setting)."""
    services = _services(store_url, allow_private_networks=False)
    try:
        user, done = await _look_up(services, DOMAIN)
        data = services.collections.latest(user, done.project_id, "domain_lookup").data
    finally:
        services.db.dispose()
    assert done.state == "completed", done.error
    assert data["tls"]["error"]["code"] == "tls_refused"
    assert "loopback" in data["tls"]["error"]["message"]
    assert world.tls.connections == 0
    assert data["rdap"]["error"] is None and data["dns"]["error"] is None
    # The registrar's URL came from the registry's answer: that hop is guarded too.
    assert data["rdap"]["registrar_error"]["code"] == "rdap_refused"
    assert world.rdap.hits[f"/registrar/domain/{DOMAIN.upper()}"] == 0


def test_lookups_are_charged_to_the_daily_quota_and_shown_in_usage(store_url: str) -> None:
    services = _services(store_url, quota_domain_lookups_daily=1)
    try:
        user = services.accounts.create_user("alice").user
        first, _ = services.jobs.create(user, "domain_lookup", {"domain": DOMAIN})
        over, _ = services.jobs.create(user, "domain_lookup", {"domain": DOMAIN})
        usage = services.quotas.usage(user)
    finally:
        services.db.dispose()
    assert first.state == "pending"
    assert over.state == "failed" and over.error_code == "quota_exceeded"
    assert over.error_message is not None
    assert "daily domain_lookups quota" in over.error_message
    assert "resets at" in over.error_message
    assert (usage["domain_lookups"].used, usage["domain_lookups"].limit) == (1, 1)
    assert usage["domain_lookups_month"].used == 1
    assert usage["domain_lookups_month"].limit == 10_000


@pytest.mark.parametrize(
    "domain",
    ["https://example.com/", "192.0.2.1", "[::1]", "example.com:443", "localhost", "a..b", ""],
)
def test_what_is_not_a_domain_is_refused_naming_the_field(store_url: str, domain: str) -> None:
    services = _services(store_url)
    try:
        user = services.accounts.create_user("alice").user
        with pytest.raises(Invalid) as refused:
            services.jobs.create(user, "domain_lookup", {"domain": domain})
        charged = services.quotas.usage(user)["domain_lookups"].used
    finally:
        services.db.dispose()
    assert [e.path for e in refused.value.errors] == [("domain",)]
    assert charged == 0  # nothing was stored


def _registry_answer(**changes: Any) -> dict[str, Any]:
    """The fake registry's answer for DOMAIN, with top-level fields replaced."""
    return {**registry_object(DOMAIN, "http://registry.invalid"), **changes}


async def test_outside_text_with_nul_and_lone_surrogates_is_stored_on_either_store(
    services: Services, world: World
) -> None:
    """Issue 25.1: RDAP and DNS text holding NUL or a lone surrogate (JSON escapes both; DNS
    TXT carries any byte) is kept with U+FFFD in their place, on PostgreSQL as on SQLite."""
    answer = _registry_answer(links=[])
    answer["entities"][0]["vcardArray"][1][1][3] = "Registrar\u0000 \ud800Name"
    answer["status"] = ["ok\u0000", "\udfff"]
    world.rdap.registry_body = json.dumps(answer).encode()  # ensure_ascii: \u0000, \ud800
    world.dns.zone[dns.name.from_text(DOMAIN)]["TXT"] = ['"nul\\000here"']
    user, done = await _look_up(services, DOMAIN)
    assert done.state == "completed", done.error
    data = services.collections.latest(user, done.project_id, "domain_lookup").data
    assert data["rdap"]["registrar"]["name"] == "Registrar\ufffd \ufffdName"
    assert data["rdap"]["status"] == ["ok\ufffd", "\ufffd"]
    assert data["dns"]["records"]["TXT"] == ["nul\ufffdhere"]


@pytest.mark.parametrize("nested", ["[" * 5000 + "]" * 5000, '{"a":' * 5000 + "1" + "}" * 5000])
async def test_an_rdap_answer_nested_too_deep_fails_the_rdap_part_only(
    services: Services, world: World, nested: str
) -> None:
    """Issue 25.2: the parser's depth is bounded; the RDAP part fails, DNS and TLS stand."""
    world.rdap.registry_body = b'{"objectClassName": "domain", "x": ' + nested.encode() + b"}"
    user, done = await _look_up(services, DOMAIN)
    assert done.state == "completed", done.error
    data = services.collections.latest(user, done.project_id, "domain_lookup").data
    assert data["rdap"]["error"]["code"] == "rdap_unavailable"
    assert "nested deeper than" in data["rdap"]["error"]["message"]
    assert data["dns"]["error"] is None and data["tls"]["error"] is None


async def test_a_registrar_link_to_a_refused_ip_literal_is_never_dialled(
    store_url: str, world: World
) -> None:
    """Issue 25.6: the address policy is applied before a connection, IP literals included:
    a listener at the literal sees no connection, so its port's state cannot show."""
    endpoint = Endpoint(lifetime=30)
    endpoint.set("hang")  # listening: a connection would be accepted and counted
    try:
        href = f"http://127.0.0.1:{endpoint.port}/rdap/domain/{DOMAIN}"
        link = {"rel": "related", "href": href, "type": "application/rdap+json"}
        world.rdap.registry_body = json.dumps(_registry_answer(links=[link])).encode()
        services = _services(store_url, allow_private_networks=False)
        try:
            user, done = await _look_up(services, DOMAIN)
            data = services.collections.latest(user, done.project_id, "domain_lookup").data
        finally:
            services.db.dispose()
    finally:
        accepted = endpoint.accepted
        endpoint.close()
    assert done.state == "completed", done.error
    assert data["rdap"]["registrar_url"] == href
    assert data["rdap"]["registrar_error"]["code"] == "rdap_refused"
    assert accepted == 0
