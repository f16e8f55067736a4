"""The guard and IPv6 forms that embed an IPv4 address: the IPv4 policy applies to what they
carry, in the default mode and with private networks allowed. Nothing here opens a connection."""

from __future__ import annotations

import ipaddress

import pytest

from seojobs.fetch import AddressGuard, GuardPolicy, forbidden_reason
from seojobs.fetch.errors import SSRFRefused
from seojobs.fetch.guard import embedded_ipv4s, is_metadata


def v6(text: str) -> ipaddress.IPv6Address:
    return ipaddress.IPv6Address(text)


# (IPv6 address, the IPv4 addresses it embeds): one or more members of every embedding.
DECODED = [
    ("::ffff:169.254.169.254", ["169.254.169.254"]),  # IPv4-mapped (RFC 4291)
    ("::ffff:a9fe:a9fe", ["169.254.169.254"]),
    ("::169.254.169.254", ["169.254.169.254"]),  # IPv4-compatible (RFC 4291, deprecated)
    ("::a00:1", ["10.0.0.1"]),
    ("::ffff:0:a9fe:a9fe", ["169.254.169.254"]),  # IPv4-translated (RFC 2765)
    ("::ffff:0:7f00:1", ["127.0.0.1"]),
    ("64:ff9b::a9fe:a9fe", ["169.254.169.254"]),  # NAT64 well-known prefix (RFC 6052)
    ("64:ff9b::10.0.0.1", ["10.0.0.1"]),
    ("2002:a9fe:a9fe::", ["169.254.169.254"]),  # 6to4 (RFC 3056)
    ("2002:7f00:1:ffff::1", ["127.0.0.1"]),
    # Teredo (RFC 4380): the client address is stored XORed; the server is embedded too.
    ("2001:0:4136:e378:8000:63bf:5601:5601", ["169.254.169.254", "65.54.227.120"]),
    ("2001:0:c000:201:8000:63bf:f5ff:fffe", ["10.0.0.1", "192.0.2.1"]),
]
# Local-use NAT64 (RFC 8215): the prefix may be /48 to /96, each placing the IPv4 elsewhere.
LOCAL_NAT64 = [
    "64:ff9b:1:a9fe:a9:fe00::",  # /48: bits 48-63, then 72-87 (bits 64-71 are zero)
    "64:ff9b:1:a9:fe:a9fe::",  # /56
    "64:ff9b:1:0:a9:fea9:fe00:0",  # /64
    "64:ff9b:1::a9fe:a9fe",  # /96
]


@pytest.mark.parametrize(("address", "inner"), DECODED)
def test_embedded_ipv4_addresses_are_decoded(address: str, inner: list[str]) -> None:
    decoded = embedded_ipv4s(v6(address))
    assert [str(a) for a in decoded] == inner


@pytest.mark.parametrize("address", LOCAL_NAT64)
def test_every_local_nat64_prefix_length_is_decoded(address: str) -> None:
    assert ipaddress.IPv4Address("169.254.169.254") in embedded_ipv4s(v6(address))


@pytest.mark.parametrize("address", ["::", "::1", "2606:4700:4700::1111", "fd00:ec2::254"])
def test_plain_ipv6_addresses_embed_nothing(address: str) -> None:
    assert embedded_ipv4s(v6(address)) == ()


# Every metadata address of the guard, in every embedding.
METADATA_V4 = ["169.254.169.254", "169.254.170.2", "169.254.170.23", "100.100.100.200"]
METADATA_V4 += ["192.0.0.192"]


def spellings(ipv4: str) -> list[str]:
    """``ipv4`` as each IPv6 embedding writes it."""
    n = int(ipaddress.IPv4Address(ipv4))
    hi, lo = n >> 16, n & 0xFFFF
    xhi, xlo = hi ^ 0xFFFF, lo ^ 0xFFFF
    return [
        f"::ffff:{ipv4}",
        f"::{ipv4}",
        f"::ffff:0:{ipv4}",
        f"64:ff9b::{ipv4}",
        f"64:ff9b:1::{ipv4}",
        f"64:ff9b:1:{hi:x}:{lo >> 8:x}:{(lo & 0xFF) << 8:x}::",
        f"2002:{hi:x}:{lo:x}::1",
        f"2001:0:4136:e378:8000:63bf:{xhi:x}:{xlo:x}",
    ]


METADATA_FORMS = [form for ipv4 in METADATA_V4 for form in spellings(ipv4)]
MODES = {"default": GuardPolicy(), "private allowed": GuardPolicy(allow_private_networks=True)}
MODES["allow-listed"] = GuardPolicy(allow_hosts=frozenset({"meta.test"}))


@pytest.mark.parametrize("policy", MODES.values(), ids=MODES.keys())
@pytest.mark.parametrize("address", METADATA_FORMS)
async def test_metadata_addresses_are_refused_in_every_embedding_and_mode(
    policy: GuardPolicy, address: str
) -> None:
    ip = v6(address)
    assert is_metadata(ip)
    assert forbidden_reason(ip) == "cloud metadata address"

    async def resolver(host: str) -> list[str]:
        return [address]

    guard = AddressGuard(policy, resolver)
    with pytest.raises(SSRFRefused, match="metadata"):
        await guard.resolve(f"[{address}]")  # the URL names it
    with pytest.raises(SSRFRefused, match="metadata"):
        await guard.resolve("meta.test")  # DNS answers with it
    with pytest.raises(SSRFRefused, match="metadata"):
        guard.check("meta.test", [ip])  # the connected peer is it


PRIVATE_V4 = ["127.0.0.1", "10.0.0.1", "192.168.1.1", "100.64.0.1", "169.254.10.20"]
PRIVATE_FORMS = [form for ipv4 in PRIVATE_V4 for form in spellings(ipv4)]


@pytest.mark.parametrize("address", PRIVATE_FORMS)
async def test_private_addresses_are_refused_in_every_embedding_unless_allowed(
    address: str,
) -> None:
    assert forbidden_reason(v6(address)) is not None

    async def resolver(host: str) -> list[str]:
        return [address]

    with pytest.raises(SSRFRefused):
        await AddressGuard(GuardPolicy(), resolver).resolve("intranet.test")
    allowed = AddressGuard(GuardPolicy(allow_private_networks=True), resolver)
    assert await allowed.resolve("intranet.test") == (v6(address),)


@pytest.mark.parametrize(
    ("address", "label"),
    [
        ("::ffff:10.0.0.1", "private (embedded IPv4 10.0.0.1)"),
        ("64:ff9b::7f00:1", "loopback (embedded IPv4 127.0.0.1)"),
        ("2002:a9fe:a14::", "link-local (embedded IPv4 169.254.10.20)"),
        ("::7f00:1", "IPv4-compatible (deprecated)"),  # refused as a range
        ("::ffff:0:808:808", "IPv4-translated"),  # whatever it carries
        ("2001:0:4136:e378:8000:63bf:f7f7:f7f7", "IETF special purpose"),  # Teredo
    ],
)
def test_reasons_name_what_was_refused(address: str, label: str) -> None:
    assert forbidden_reason(v6(address)) == label


@pytest.mark.parametrize(
    "address", ["::ffff:8.8.8.8", "64:ff9b::8.8.8.8", "2002:808:808::1", "::ffff:1.1.1.1"]
)
def test_embedded_public_addresses_pass(address: str) -> None:
    assert forbidden_reason(v6(address)) is None
