"""The world a domain lookup runs against in tests, all on loopback: a fake RDAP service, a
fake authoritative DNS server and a TLS server whose certificate a test CA (trustme) issued.
The kind's settings point at them through the environment, as a deployment's would."""

from __future__ import annotations

import contextlib
import ssl
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import trustme

from tests.fakes.dns import FakeDns, serve_dns
from tests.fakes.rdap import FakeRdap
from tests.fakes.server import serve
from tests.fakes.tls import TlsServer, serve_tls

DOMAIN = "example.test"
ZONE = {
    DOMAIN: {
        "A": ["127.0.0.1"],
        "AAAA": ["::1"],
        "MX": ["10 mail.example.test.", "20 backup.example.test."],
        "NS": ["ns1.example.test.", "ns2.example.test."],
        "TXT": [
            '"v=spf1 include:_spf.mail.test ip4:192.0.2.0/24 -all"',
            '"site-verification=abc123"',
        ],
        "CAA": ['0 issue "letsencrypt.org"', '0 iodef "mailto:sec@example.test"'],
        "SOA": ["ns1.example.test. hostmaster.example.test. 2026010101 7200 3600 1209600 300"],
    },
    f"_dmarc.{DOMAIN}": {
        "TXT": ['"v=DMARC1; p=reject; sp=quarantine; pct=50; rua=mailto:d@example.test"']
    },
    # Registered and delegated to the same address, whose certificate names another domain.
    "other.example": {"A": ["127.0.0.1"]},
}


@dataclass
class World:
    rdap: FakeRdap
    dns: FakeDns
    tls: TlsServer
    not_after: datetime  # of the served certificate: 90 days and a half from the start


@contextlib.contextmanager
def domain_world(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[World]:
    ca = trustme.CA(organization_name="Fake Test CA")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    not_after = (datetime.now(UTC) + timedelta(days=90, hours=12)).replace(microsecond=0)
    leaf = ca.issue_cert(
        DOMAIN,
        f"www.{DOMAIN}",
        common_name=DOMAIN,
        organization_name="Example Test Site",
        not_after=not_after,
    )
    leaf.configure_cert(context)
    ca_file = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    rdap = FakeRdap({DOMAIN, "other.example"})
    fake_dns = FakeDns(ZONE)
    with serve(rdap.app()) as base, serve_dns(fake_dns) as nameserver, serve_tls(context) as tls:
        rdap.base = base
        # A URL of its own: a worker keeps the file per URL for a day, and a later world may
        # be served on a port an earlier one had.
        bootstrap = f"{base}/bootstrap/dns.json?world={uuid.uuid4().hex}"
        monkeypatch.setenv("SEOJOBS_RDAP_BOOTSTRAP_URL", bootstrap)
        monkeypatch.setenv("SEOJOBS_DNS_NAMESERVERS", nameserver)
        monkeypatch.setenv("SEOJOBS_DOMAIN_LOOKUP_TLS_PORT", str(tls.port))
        monkeypatch.setenv("SEOJOBS_DOMAIN_LOOKUP_TLS_CA_FILE", str(ca_file))
        monkeypatch.setenv("SEOJOBS_DOMAIN_LOOKUP_TLS_TIMEOUT", "10")
        yield World(rdap, fake_dns, tls, not_after)
