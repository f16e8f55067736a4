"""The frontier's scope test skips parsing a URL that begins with the start's normalised
origin or its www. twin (issue 30.6, CPU per page): those prefixes are exactly in scope."""

from __future__ import annotations

import pytest

from seojobs.fetch.urls import parse_url
from seojobs.kinds.site_audit.check import site_of
from seojobs.kinds.site_audit.crawler import _origins


@pytest.mark.parametrize(
    ("start", "expected"),
    [
        ("http://127.0.0.1:8000/", ("http://127.0.0.1:8000/",)),  # no www. twin of an address
        ("https://Example.com/a?b", ("https://example.com/", "https://www.example.com/")),
        (
            "https://www.example.com:8443/x",
            ("https://www.example.com:8443/", "https://example.com:8443/"),
        ),
        ("http://example.com:80", ("http://example.com/", "http://www.example.com/")),
    ],
)
def test_the_origins_are_the_start_site_as_normalised_urls_begin(
    start: str, expected: tuple[str, ...]
) -> None:
    found = _origins(parse_url(start))
    assert found == expected
    for prefix in found:
        url = parse_url(prefix + "p/1?q=2")
        assert url.key == prefix + "p/1?q=2"
        assert site_of(url.key) == site_of(start)
