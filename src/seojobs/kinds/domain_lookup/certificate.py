"""What a lookup reports of a host's leaf certificate (parsed with ``cryptography``)."""

from __future__ import annotations

import ipaddress
from datetime import datetime
from typing import TYPE_CHECKING, Any

from seojobs.fetch.tls import PeerTLS

if TYPE_CHECKING:  # cryptography loads when a lookup first reads a certificate
    from cryptography import x509

DAY = 86400


def _name(name: x509.Name) -> dict[str, Any]:
    from cryptography.x509.oid import NameOID

    common = name.get_attributes_for_oid(NameOID.COMMON_NAME)
    org = name.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)
    return {
        "common_name": str(common[0].value) if common else None,
        "organization": str(org[0].value) if org else None,
        "text": name.rfc4514_string(),
    }


def _sans(cert: x509.Certificate) -> list[str]:
    from cryptography import x509
    from cryptography.x509.oid import ExtensionOID

    try:
        found = cert.extensions.get_extension_for_oid(ExtensionOID.SUBJECT_ALTERNATIVE_NAME)
    except x509.ExtensionNotFound:
        return []
    value = found.value
    assert isinstance(value, x509.SubjectAlternativeName)
    names = [str(n) for n in value.get_values_for_type(x509.DNSName)]
    names += [str(a) for a in value.get_values_for_type(x509.IPAddress)]
    return names


def matches(host: str, names: list[str]) -> bool:
    """RFC 6125 §6.4: an exact name, or a wildcard standing for one left-most label."""
    host = host.lower()
    for name in (n.lower() for n in names):
        if name == host:
            return True
        if name.startswith("*.") and "." in host and host.split(".", 1)[1] == name[2:]:
            return True
    return False


def describe(peer: PeerTLS, host: str, now: datetime) -> dict[str, Any]:
    """The certificate part of a lookup: issuer, subject, SANs, validity, days to expiry,
    and how the handshake went (protocol, cipher, whether the chain verified)."""
    found: dict[str, Any] = {
        "host": host,
        "port": peer.port,
        "address": str(ipaddress.ip_address(peer.address)),
        "protocol": peer.protocol,
        "cipher": peer.cipher,
        "verified": peer.verified,
        "verify_error": peer.verify_error,
    }
    if peer.certificate is None:
        return found
    from cryptography import x509

    cert = x509.load_der_x509_certificate(peer.certificate)
    sans = _sans(cert)
    not_after = cert.not_valid_after_utc
    found.update(
        subject=_name(cert.subject),
        issuer=_name(cert.issuer),
        sans=sans,
        serial=format(cert.serial_number, "x"),
        not_before=cert.not_valid_before_utc.isoformat().replace("+00:00", "Z"),
        not_after=not_after.isoformat().replace("+00:00", "Z"),
        # Whole days left, negative once expired (floor: 23 hours left is 0 days).
        days_to_expiry=int((not_after - now).total_seconds() // DAY),
        expired=not_after <= now,
        hostname_match=matches(host, sans),
        signature_algorithm=(
            cert.signature_hash_algorithm.name if cert.signature_hash_algorithm else None
        ),
    )
    return found
