"""The crawl's remembered page keys of references (``crawler.Keys``): the same keys as
``check.resolve`` on every page, whichever page met a reference first."""

from __future__ import annotations

from seojobs.fetch.urls import parse_url
from seojobs.kinds.site_audit.check import resolve
from seojobs.kinds.site_audit.crawler import Keys

HREFS = [
    "/p/2",
    "/p/2?b=1&a=2#top",
    "/a/./b/../c",
    "//other.test/x",
    "p/3",
    "../up",
    "?q=1",
    "#frag",
    "",
    "http://Example.TEST:80/Path",
    "https://example.test/s",
    "HTTP://example.test/upper",
    "mailto:someone@example.test",
    "http://[::1",
    "/with space",
]
PAGES = [
    "http://example.test/",
    "http://example.test/deep/dir/page.html?x=1",
    "https://example.test/deep/",
    "http://example.test:8080/other/",
    "http://www.example.test/dir/",
]


def test_every_page_gets_the_keys_resolve_gives_it() -> None:
    keys = Keys()
    for _round in range(2):  # the second time, from what the first remembered
        for page in PAGES:
            base = parse_url(page)
            assert keys.resolve_all(base, HREFS) == [resolve(base, href) for href in HREFS]
            assert [keys.resolve(base, href) for href in HREFS] == keys.resolve_all(base, HREFS)


def test_keys_past_the_limit_and_over_many_origins_stay_right() -> None:
    keys = Keys()
    keys.LIMIT = 3
    keys.ORIGINS = 2
    for n in range(4):
        for page in PAGES:
            base = parse_url(page.replace("example", f"example{n % 3}"))
            hrefs = [f"/p/{n}/{i}" for i in range(5)] + HREFS
            assert keys.resolve_all(base, hrefs) == [resolve(base, href) for href in hrefs]
