"""Registrable domains from the bundled public suffix list (seojobs.providers.domains)."""

from __future__ import annotations

import socket

import pytest

from seojobs.kinds.backlink_refresh.match import matches
from seojobs.kinds.geo_lookup.matching import cites, host_of
from seojobs.kinds.rank_check.match import on_domain, target_host
from seojobs.providers import domains


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        ("blog.example.co.uk", "example.co.uk"),
        ("WWW.Example.COM.", "example.com"),
        ("shop.example.com.au", "example.com.au"),
        ("user.github.io", "user.github.io"),  # the list's private section
        ("a.example.test", "example.test"),  # no listed suffix: the default rule "*"
        ("203.0.113.7", "203.0.113.7"),
        ("co.uk", None),
        ("github.io", None),
        ("com", None),
    ],
)
def test_registrable(host: str, expected: str | None) -> None:
    assert domains.registrable(host) == expected


def test_www_is_dropped_only_before_a_site() -> None:
    assert domains.site("www.example.co.uk") == "example.co.uk"
    assert domains.site("www.co.uk") == "www.co.uk"  # a name registered under co.uk
    assert domains.site("www.com") == "www.com"


@pytest.mark.parametrize(
    ("host", "domain", "expected"),
    [
        ("blog.example.co.uk", "example.co.uk", True),
        ("www.example.co.uk", "example.co.uk", True),
        ("other.co.uk", "co.uk", False),  # a public suffix is no one's site
        ("co.uk", "co.uk", True),
        ("a.user.github.io", "user.github.io", True),
        ("other.github.io", "github.io", False),
        ("notexample.com", "example.com", False),
    ],
)
def test_on_site(host: str, domain: str, expected: bool) -> None:
    assert domains.on_site(host, domain) is expected


def test_every_matcher_uses_the_list() -> None:
    """Ranks, GEO citations and backlinks: a public suffix matches no one else's site."""
    assert not on_domain("https://shop.co.uk/", target_host("co.uk"))
    assert on_domain("https://shop.example.co.uk/", target_host("www.example.co.uk"))
    assert not cites(host_of("https://shop.co.uk/a"), "co.uk")
    assert cites(host_of("https://www.shop.example.co.uk/a"), "example.co.uk")
    assert host_of("https://www.co.uk/") == "www.co.uk"
    assert not matches("https://shop.co.uk/", "https://co.uk/", "domain")
    assert matches("https://a.example.co.uk/x", "https://www.example.co.uk/", "domain")


def test_the_bundled_list_is_read_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """No network: a fresh lookup connects nowhere (tldextract swallows a failed fetch, so
    the attempts are counted, not refused)."""
    attempts: list[object] = []

    def refuse(*args: object, **_kwargs: object) -> None:
        attempts.append(args)
        raise OSError("no network in this test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    domains._extractor.cache_clear()  # a fresh extractor, made with no network
    domains.registrable.cache_clear()
    try:
        assert domains.registrable("a.b.example.org.uk") == "example.org.uk"
    finally:
        domains._extractor.cache_clear()
        domains.registrable.cache_clear()
    assert attempts == []
