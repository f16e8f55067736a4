"""URL parsing, joining and comparison keys: both paths spell URLs exactly as httpx did.

``fetch.urls`` parses plain URLs with one regular expression and hands the rest to
``fetch.rfc3986``. The reference below is the httpx-only implementation they replaced (httpx
stays installed for the client, so it can serve as the oracle here); every case must give the
same URL text, host, port, request target and comparison key (or the same error kind).
"""

from __future__ import annotations

import httpx
import pytest

from seojobs.fetch.errors import FetchError, InvalidURL, UnsupportedScheme
from seojobs.fetch.guard import parse_ip_host
from seojobs.fetch.urls import (
    URL,
    join_url,
    normalize_url,
    origin_of,
    parse_url,
    without_userinfo,
)

_DEFAULT_PORTS = {"http": 80, "https": 443}


def reference_parse(raw: str) -> httpx.URL:
    try:
        url = httpx.URL(raw.strip())
    except (httpx.InvalidURL, TypeError, ValueError) as exc:
        raise InvalidURL(str(exc)) from exc
    if not url.scheme:
        raise InvalidURL("not absolute")
    if url.scheme not in ("http", "https"):
        raise UnsupportedScheme(url.scheme)
    if not url.host:
        raise InvalidURL("no host")
    if url.port is not None and not 0 < url.port <= 65535:
        raise InvalidURL("port out of range")  # the one check httpx leaves to the socket
    parse_ip_host(url.raw_host.decode("ascii"))
    return url.copy_with(userinfo=b"", fragment=None)  # credentials are never kept


def reference_key(url: httpx.URL) -> str:
    scheme = url.scheme.lower()
    port = url.port
    if port == _DEFAULT_PORTS.get(scheme):
        port = None
    parsed = url.copy_with(scheme=scheme, port=port, fragment=None)
    text = str(parsed)
    if parsed.raw_path in (b"", b"/") and not text.endswith("/"):
        text += "/"
    return text


def outcome(raw: str) -> tuple[str, ...]:
    try:
        url = reference_parse(raw)
    except FetchError as exc:
        return ("error", exc.kind)
    host = url.raw_host.decode("ascii")
    return (str(url), host, str(url.port), url.raw_path.decode("ascii"), reference_key(url))


def ours(raw: str) -> tuple[str, ...]:
    try:
        url = parse_url(raw)
    except FetchError as exc:
        return ("error", exc.kind)
    return (url.text, url.host, str(url.port), url.target, url.key)


URLS = [
    "http://a.com",
    "http://a.com/",
    "https://a.com:443",
    "https://a.com:443/x",
    "http://a.com:80/x",
    "http://a.com:080/x",
    "http://a.com:8080",
    "http://a.com:8080/p/1?x=1&y=2#frag",
    "https://a.com:80/x",
    "http://a.com:0/x",
    "http://a.com:/x",
    "http://a.com:99999/",
    "http://a.com:65536/",
    "http://a.com:12ab/",
    "http://a.com?",
    "http://a.com/?",
    "http://a.com?x=1",
    "http://a.com/x?",
    "http://a.com/x?a='b'&c=d/e?f",
    "http://a.com/x'y(z)*!$,;=:@~",
    "http://a.com/a/../b/./c",
    "http://a.com/a/..",
    "http://a.com/.well-known/x",
    "http://a.com/x/.",
    "http://a.com/%7e%2f%7E",
    "http://a.com/%zz",
    "http://a.com/a b",
    'http://a.com/a"b<c>`{d}',
    "http://a.com/x?q=a b",
    "http://a.com/x?q=\u00e9",
    "http://a.com/\u00e9t\u00e9",
    "http://a.com/x#fr ag",
    "http://a.com/x#",
    "http://a.com/x#f?g#h",
    "http://a.com/x?q#f?g",
    "  http://a.com/trimmed  ",
    "HTTP://A.COM/X",
    "http://A.COM./Path",
    "Http://a.com:80/x",
    "http://a..b/",
    "http://-a.com/",
    "http://a_b.com/",
    "http://b\u00fccher.de/",
    "http://xn--bcher-kva.de/",
    "http://B\u00dcCHER.de:80/x",
    "http://u@a.com/",
    "http://u:p@a.com:80/",
    "http://u:p@a.com/x?y#z",
    "https://:p@a.com:8443/",
    "http://@a.com/",
    "http://u%40x:p%3Aq@a.com/",
    "http://u:p@a.com:0/",
    "http://a.com:00/",
    "https://a.com:000/x",
    "http://127.0.0.1:8001/p/12",
    "http://127.1/",
    "http://0177.0.0.1/",
    "http://1.2.3.4.5/",
    "http://256.1.1.1/",
    "http://1x2x3x4/",
    "http://1-2-3-4/",
    "http://2130706433/",
    "http://0x7f.1/",
    "http://[::1]/",
    "http://[::1]:80/x",
    "http://[2001:db8::1]:8080/x?y",
    "http://[::ffff:127.0.0.1]/",
    "http:///no-host",
    "http://",
    "/relative/path",
    "a.com/x",
    "file:///etc/passwd",
    "ftp://a.com/",
    "mailto:x@y",
    "http:x",
    "http://a.com/x\x01",
    "http://a.com/\t",
]


@pytest.mark.parametrize("raw", URLS)
def test_parse_url_spells_urls_as_httpx_does(raw: str) -> None:
    assert ours(raw) == outcome(raw)


BASES = [
    "http://a.com/dir/page",
    "http://a.com",
    "https://a.com:8443/dir/page?x=1",
    "http://127.0.0.1:8001/p/5",
    "http://b\u00fccher.de/dir/",
]
REFS = [
    "/p/6",
    "/p/6?x=1#f",
    "/",
    "other",
    "../up",
    "./same",
    "/a/../b",
    "?q=1",
    "#frag",
    "",
    "//cdn.test/x",
    "//cdn.test:80/x",
    "https://other.test/x",
    "https://other.test/a/./b/../c",
    "HTTPS://Other.test/x",
    "http://b\u00fccher.de/x",
    "/\u00e9t\u00e9",
    "/a b",
    "mailto:x@y",
    "http://[::1]:80/",
    "http://a.com:99999/",
    "http://a.com:0/",
    "http://u:p@other.test/x",
    "//u:p@cdn.test/x",
]


def reference_join(base: str, ref: str) -> tuple[str, ...]:
    try:
        joined = str(httpx.URL(base).join(ref))
    except (httpx.InvalidURL, ValueError):
        return ("join error",)
    return outcome(joined)


def our_join(base: str, ref: str) -> tuple[str, ...]:
    try:
        joined = join_url(parse_url(base), ref)
    except ValueError:
        return ("join error",)
    return ours(joined)


@pytest.mark.parametrize("base", BASES)
@pytest.mark.parametrize("ref", REFS)
def test_join_url_resolves_references_as_httpx_does(base: str, ref: str) -> None:
    assert our_join(base, ref) == reference_join(base, ref)


@pytest.mark.parametrize(
    ("base", "ref", "joined"),
    [
        ("http://a.com/dir/page", "../x", "http://a.com/x"),
        ("http://a.com/dir/page", "x/../../y", "http://a.com/y"),
        ("http://a.com/dir/page?q=1", "?q=2", "http://a.com/dir/page?q=2"),
        ("http://a.com/dir/page", "//cdn.test/x", "http://cdn.test/x"),
        ("http://a.com/dir/page", "/p/6#f", "http://a.com/p/6"),
        ("https://a.com:8443/x", "/y", "https://a.com:8443/y"),
        ("http://a.com/", "HTTP://B\u00dcCHER.de:80/x", "http://xn--bcher-kva.de/x"),
    ],
)
def test_join_examples(base: str, ref: str, joined: str) -> None:
    assert normalize_url(join_url(parse_url(base), ref)) == joined


def test_comparison_keys() -> None:
    assert normalize_url("HTTP://A.com:80") == "http://a.com/"
    assert normalize_url("http://a.com:80/x#f") == normalize_url("http://a.com/x")
    assert normalize_url("https://a.com:443/?") == "https://a.com/?"
    assert normalize_url("http://a.com:8080") == "http://a.com:8080/"
    assert normalize_url("http://[::1]:80/x") == "http://[::1]/x"
    assert normalize_url(parse_url("http://a.com/A")) != normalize_url("http://a.com/a")


def test_origin_and_fields() -> None:
    url = parse_url("http://127.0.0.1:8001/p/1?x#y")
    assert isinstance(url, URL)
    assert (url.scheme, url.host, url.port, url.target) == ("http", "127.0.0.1", 8001, "/p/1?x")
    assert str(url) == "http://127.0.0.1:8001/p/1?x"
    assert origin_of(url) == "http://127.0.0.1:8001"
    assert origin_of(parse_url("https://[::1]:443/x")) == "https://[::1]"
    assert origin_of(parse_url("http://b\u00fccher.de/")) == "http://xn--bcher-kva.de"
    assert parse_url("http://a.com").target == "/"


def test_invalid_urls_raise_our_errors() -> None:
    with pytest.raises(InvalidURL, match="port out of range"):
        parse_url("http://a.com:65536/")
    with pytest.raises(InvalidURL, match="port out of range"):
        parse_url("http://[::1]:99999/")
    assert parse_url("http://a.com:65535/").port == 65535
    with pytest.raises(InvalidURL):
        parse_url("http://0177.0.0.1/")
    with pytest.raises(InvalidURL):
        parse_url("http://1.2.3.4.5/")
    with pytest.raises(UnsupportedScheme):
        parse_url("ftp://a.com/")


CREDENTIALS = [
    "http://user:s3cret@a.com/x",
    "https://user:s3cret@a.com:8443/x?q",
    "http://:s3cret@a.com/",
    "http://s3cret@a.com/",
    "http://us%40er:s3cret%3A@a.com/",
    "http://user:s3cret@[::1]:8080/",
    "http://user:s3cret@b\u00fccher.de/",
]


@pytest.mark.parametrize("raw", CREDENTIALS)
def test_credentials_are_dropped_from_parsed_urls(raw: str) -> None:
    url = parse_url(raw)
    assert "s3cret" not in url.text and "@" not in url.text
    assert "s3cret" not in url.key and "s3cret" not in url.host
    assert ours(raw) == ours(url.text)  # the same URL, minus its userinfo


@pytest.mark.parametrize(
    "raw",
    [
        "ftp://user:s3cret@a.com/",
        "http://user:s3cret@a.com:0/",
        "http://user:s3cret@a.com:99999/",
        "http://user:s3cret@a.com:80x/",
        "http://user:s3cret@/x",
        "http://user:s3cret@1.2.3.4.5/",
        "//user:s3cret@a.com/",
    ],
)
def test_errors_never_show_credentials(raw: str) -> None:
    with pytest.raises(FetchError) as caught:
        parse_url(raw)
    assert "s3cret" not in caught.value.message


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("http://user:s3cret@a.com/p@q", "http://a.com/p@q"),
        ("HTTPS://s3cret@a.com?x=a@b", "HTTPS://a.com?x=a@b"),
        ("//user:s3cret@cdn.test/x", "//cdn.test/x"),
        ("http:user:s3cret@a.com/", "http:a.com/"),  # browsers read this as userinfo too
        ("http:\\\\user:s3cret@a.com/", "http:\\\\a.com/"),
        ("http://a@b:s3cret@a.com/", "http://a.com/"),  # up to the last @
        ("http://a.com/x@y", "http://a.com/x@y"),  # an @ in the path is not userinfo
        ("http://a.com#@y", "http://a.com#@y"),
        ("/relative@x", "/relative@x"),
    ],
)
def test_without_userinfo(raw: str, shown: str) -> None:
    assert without_userinfo(raw) == shown


@pytest.mark.parametrize(
    "raw", ["http://a.com:0/", "http://a.com:00/x", "https://a.com:0000/", "http://[::1]:0/"]
)
def test_port_zero_is_invalid(raw: str) -> None:
    # Before, robots.txt went to the default port while the page went to port 0.
    with pytest.raises(InvalidURL, match="port out of range"):
        parse_url(raw)


# Where rfc3986 parts from httpx: it refuses what httpx resolved against the base page.
@pytest.mark.parametrize(
    "ref",
    [
        "http://",  # httpx: the base page itself
        "http:///x",  # httpx: http://a.com/x
        "https://u:p@/x",
        "http://:80/x",
        "//",
        "///x",
        "//user@/x",
        ":8080",  # httpx: http://a.com/dir/8080 (the colon dropped)
        ":x/y",
    ],
)
def test_references_without_a_host_or_starting_with_a_colon_are_refused(ref: str) -> None:
    # RFC 9110 4.2.1: an http(s) URI with an empty host is invalid; RFC 3986 4.2: a relative
    # reference's first segment has no colon. A redirect to one fails with invalid_url.
    with pytest.raises(ValueError):
        join_url(parse_url("http://a.com/dir/page"), ref)


@pytest.mark.parametrize(
    "raw",
    ["http://a.com:+80/", "http://a.com: 80/", "http://a.com:80 /", "http://a.com:\u0668\u0660/"],
)
def test_a_port_is_ascii_digits_only(raw: str) -> None:
    # httpx read these with int(): "+80", " 80" and Arabic-Indic digits were port 80.
    with pytest.raises(InvalidURL):
        parse_url(raw)


@pytest.mark.parametrize(
    "raw",
    [
        "http://[bad/",
        "http://a[b]/",
        "http://[::1]x]/",
        "http://a b.com/",
        "http://a<b.com/",
        "http://a>b.com/",
        "http://a^b.com/",
        "http://a|b.com/",
        "http://b\u00fc ber.de/",
        "//a^b.com/x",
    ],
)
def test_a_host_written_with_a_forbidden_character_is_no_host(raw: str) -> None:
    # WHATWG's forbidden host code points: httpx (and we, before) percent-encoded them into a
    # name that only failed at DNS; `[` outside an IPv6 literal's brackets is no host either.
    with pytest.raises((InvalidURL, ValueError)):  # ValueError: a join that cannot parse
        parse_url(raw if raw.startswith("http") else join_url(parse_url("http://a.com/"), raw))


@pytest.mark.parametrize(
    ("raw", "host"),
    [
        ("http://[::1]/", "::1"),
        ("http://a%20b/", "a%20b"),
        ("http://ex_ample.com/", "ex_ample.com"),
    ],
)
def test_ipv6_literals_and_escaped_names_are_still_hosts(raw: str, host: str) -> None:
    # Escapes are left to DNS, as the API's URL pattern (kinds.urls) takes them.
    assert parse_url(raw).host == host
