"""The pure parts of ``domain_lookup``: what a domain is, the settings' names, the IANA
bootstrap file, RFC 9083 objects, SPF and DMARC records, certificate names."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from seojobs.fetch.resolver import parse_nameserver
from seojobs.kinds.domain_lookup import DomainLookupSettings, normalise_domain
from seojobs.kinds.domain_lookup.certificate import matches
from seojobs.kinds.domain_lookup.records import dmarc_of, spf_of
from seojobs.providers import rdap


@pytest.mark.parametrize(
    ("given", "stored"),
    [
        ("example.com", "example.com"),
        ("Example.COM.", "example.com"),
        ("bücher.de", "xn--bcher-kva.de"),
        ("XN--BCHER-KVA.de", "xn--bcher-kva.de"),
        ("www.example.co.uk", "www.example.co.uk"),
    ],
)
def test_domains_are_stored_as_the_ascii_name_queried(given: str, stored: str) -> None:
    assert normalise_domain(given) == stored


@pytest.mark.parametrize(
    ("given", "why"),
    [
        ("https://example.com/", "not a URL"),
        ("example.com/path", "not a URL"),
        ("user@example.com", "not a URL"),
        ("192.0.2.1", "IP address"),
        ("[2001:db8::1]", "IP address"),
        ("2001:db8::1", "IP address"),
        ("example.com:443", "host:port"),
        ("com", "two labels"),
        (" example.com", "spaces"),
        ("a..b", "valid internationalised"),
        ("-a.com", "valid internationalised"),
        ("a_b.com", "valid internationalised"),
        ("example.123", "all digits"),
        ("a" * 64 + ".com", "valid internationalised"),
        (".".join(["a" * 60] * 5), "too long"),
    ],
)
def test_what_is_not_a_domain_says_why(given: str, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        normalise_domain(given)


def test_the_designs_setting_names_and_the_kinds_own_are_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SEOJOBS_RDAP_BOOTSTRAP_URL", "http://127.0.0.1:1/dns.json")
    monkeypatch.setenv("SEOJOBS_DNS_NAMESERVERS", "127.0.0.1:5353, [::1]:53,127.0.0.2")
    monkeypatch.setenv("SEOJOBS_DOMAIN_LOOKUP_TLS_PORT", "8443")
    made = DomainLookupSettings()
    assert made.rdap_bootstrap_url == "http://127.0.0.1:1/dns.json"
    assert made.dns_nameservers == ["127.0.0.1:5353", "[::1]:53", "127.0.0.2"]
    assert made.tls_port == 8443
    monkeypatch.delenv("SEOJOBS_DNS_NAMESERVERS")
    monkeypatch.setenv("SEOJOBS_DOMAIN_LOOKUP_DNS_NAMESERVERS", "ns.example.com")
    with pytest.raises(ValidationError, match=r"ns\.example\.com"):
        DomainLookupSettings()


def test_defaults_are_ianas_file_and_the_system_resolver() -> None:
    made = DomainLookupSettings()
    assert made.rdap_bootstrap_url == "https://data.iana.org/rdap/dns.json"
    assert made.dns_nameservers == [] and made.tls_port == 443


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("127.0.0.1", ("127.0.0.1", 53)),
        ("127.0.0.1:5353", ("127.0.0.1", 5353)),
        ("::1", ("::1", 53)),
        ("[::1]:5353", ("::1", 5353)),
    ],
)
def test_nameservers_are_addresses_with_an_optional_port(
    text: str, parsed: tuple[str, int]
) -> None:
    assert parse_nameserver(text) == parsed


@pytest.mark.parametrize("text", ["127.0.0.1:0", "127.0.0.1:x", "[::1]5353", "dns.google"])
def test_bad_nameservers_are_refused(text: str) -> None:
    with pytest.raises(ValueError):
        parse_nameserver(text)


BOOTSTRAP = {
    "version": "1.0",
    "publication": "2026-11-20T18:00:01Z",
    "services": [
        [["com", "net"], ["http://rdap.verisign.com/com/v1/", "https://rdap.verisign.com/com/v1/"]],
        [["uk"], ["https://rdap.nominet.uk/uk/"]],
        [["co.uk"], ["https://rdap.example/co.uk/"]],
        ["not a service"],
    ],
}


def test_the_bootstrap_file_gives_the_longest_suffix_over_https() -> None:
    services = rdap.parse_bootstrap(BOOTSTRAP)
    assert rdap.registry_base(services, "example.com") == "https://rdap.verisign.com/com/v1/"
    assert rdap.registry_base(services, "shop.example.co.uk") == "https://rdap.example/co.uk/"
    assert rdap.registry_base(services, "example.org.uk") == "https://rdap.nominet.uk/uk/"
    assert rdap.registry_base(services, "example.zz") is None
    with pytest.raises(rdap.RdapError) as refused:
        rdap.parse_bootstrap({"version": "1.0"})
    assert refused.value.code == "rdap_unavailable"


def test_a_domain_object_is_read_per_rfc_9083() -> None:
    obj = {
        "objectClassName": "domain",
        "ldhName": "EXAMPLE.COM",
        "status": ["active"],
        "events": [
            {"eventAction": "registration", "eventDate": "1995-08-14T04:00:00Z"},
            {"eventAction": "Expiration", "eventDate": "2026-08-13T04:00:00Z"},
            {"eventAction": "transfer", "eventDate": "2001-01-01T00:00:00Z"},
        ],
        "nameservers": [{"ldhName": "B.NS.EXAMPLE."}, {"ldhName": "a.ns.example"}, {}],
        "entities": [
            {
                "roles": ["registrant"],
                "vcardArray": ["vcard", [["fn", {}, "text", "Not the registrar"]]],
            },
            {"roles": ["registrar"], "handle": "R-1", "publicIds": []},
        ],
    }
    found = rdap.parse_domain(obj, "https://r.example/domain/example.com")
    assert (found["created"], found["expires"]) == ("1995-08-14T04:00:00Z", "2026-08-13T04:00:00Z")
    assert "updated" not in found
    assert found["nameservers"] == ["a.ns.example", "b.ns.example"]
    assert found["registrar"] == {"name": "R-1", "iana_id": None, "abuse_email": None}
    assert found["dnssec"] is None
    with pytest.raises(rdap.RdapError):
        rdap.parse_domain({"objectClassName": "entity"}, "https://r.example/")


def test_the_registrar_hop_is_a_related_rdap_link_over_https() -> None:
    registry = "https://rdap.verisign.com/com/v1/domain/example.com"
    links = {
        "links": [
            {"rel": "self", "href": registry, "type": "application/rdap+json"},
            {"rel": "related", "href": "https://whois.example/", "type": "text/html"},
            {"rel": "related", "href": "http://rdap.registrar.example/domain/example.com"},
            {"rel": "related", "href": "https://rdap.registrar.example/domain/example.com"},
        ]
    }
    assert rdap.registrar_link(links, registry) == (
        "https://rdap.registrar.example/domain/example.com"
    )
    assert rdap.registrar_link({"links": links["links"][:3]}, registry) is None


def test_the_registry_answer_wins_and_the_registrar_fills_gaps() -> None:
    registry = {"expires": "2026", "registrar": None, "nameservers": ["a"], "status": []}
    registrar = {"expires": "2027", "registrar": {"name": "R"}, "nameservers": [], "x": 1}
    merged = rdap.merge(registry, registrar)
    assert merged == {
        "expires": "2026",
        "registrar": {"name": "R"},
        "nameservers": ["a"],
        "status": [],
        "x": 1,
    }


def test_spf_terms_qualifiers_and_modifiers() -> None:
    spf = spf_of(["other", "v=spf1 a mx:mail.example.com ?include:x.example ~all exp=e.example"])
    assert spf is not None
    assert [(m["qualifier"], m["mechanism"], m["value"]) for m in spf["mechanisms"]] == [
        ("pass", "a", None),
        ("pass", "mx", "mail.example.com"),
        ("neutral", "include", "x.example"),
        ("softfail", "all", None),
    ]
    assert spf["all"] == "softfail" and spf["includes"] == ["x.example"]
    assert spf["modifiers"] == {"exp": "e.example"} and spf["multiple_records"] is False
    redirected = spf_of(["v=spf1 redirect=_spf.example.com", "v=spf1 -all"])
    assert redirected is not None
    assert redirected["redirect"] == "_spf.example.com" and redirected["all"] is None
    assert redirected["multiple_records"] is True
    assert spf_of(["v=spf10 -all", "nothing"]) is None


def test_dmarc_tags() -> None:
    dmarc = dmarc_of(["v=DMARC1;p=none; rua=mailto:a@x.example,mailto:b@y.example; pct=x"])
    assert dmarc is not None
    assert dmarc["policy"] == "none" and dmarc["percent"] is None
    assert dmarc["rua"] == ["mailto:a@x.example", "mailto:b@y.example"]
    assert dmarc_of(["v=spf1 -all"]) is None


def test_certificate_names_match_exactly_or_by_one_wildcard_label() -> None:
    assert matches("Example.com", ["example.com"])
    assert matches("www.example.com", ["*.example.com"])
    assert not matches("a.b.example.com", ["*.example.com"])
    assert not matches("example.com", ["*.example.com"])
