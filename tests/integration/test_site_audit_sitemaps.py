"""The audit's sitemap files (issue 30.6): read up to the protocol's 50 MB uncompressed rather
than the page cap (a 50,000-URL file is some 2.6 MB), a gzip file opened no further than the
cap, and a file over the protocol's limits reported while the audit goes on. SQLite only: no
storage is tested here."""

from __future__ import annotations

import zlib
from typing import Any
from urllib.parse import urlsplit

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response
from starlette.routing import Route

from seojobs.services import Services
from tests.fakes.server import serve
from tests.waiting import run_until_final

pytestmark = pytest.mark.stores("sqlite")

CAP = 3_000_000  # the test's sitemap_max_bytes: above the 2 MB page cap, below the bomb
FILLER = 40_000  # URLs of another site first: the big file is over 2 MB
SITEMAP_CODES = {
    "sitemap_missing",
    "sitemap_too_large",
    "sitemap_url_not_linked",
    "indexable_not_in_sitemap",
}


def _urlset(locs: list[str]) -> bytes:
    entries = "".join(f"<url><loc>{loc}</loc></url>" for loc in locs)
    return f'<?xml version="1.0"?><urlset>{entries}</urlset>'.encode()


def _bomb(base: str) -> bytes:
    """A small gzip file that opens to 4 MB of blanks, then a URL that must not be read."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    blanks = b" " * 1_000_000
    body = packer.compress(b"<urlset>")
    for _ in range(4):
        body += packer.compress(blanks)
    body += packer.compress(_urlset([f"{base}/after-the-cap"]) + b"</urlset>")
    return body + packer.flush()


def _site() -> Starlette:
    def any_path(request: Request) -> Response:
        base = str(request.base_url).rstrip("/")
        path = request.url.path
        if path == "/robots.txt":
            maps = "".join(f"Sitemap: {base}{p}\n" for p in ("/big.xml", "/bomb.xml.gz"))
            return PlainTextResponse("User-agent: *\nAllow: /\n" + maps)
        if path == "/big.xml":
            filler = [f"https://elsewhere.test/listed/{n:08d}" for n in range(FILLER)]
            body = _urlset([f"{base}/", *filler, f"{base}/a", f"{base}/b"])
            assert 2_000_000 < len(body) < CAP
            return Response(body, media_type="application/xml")
        if path == "/bomb.xml.gz":
            return Response(_bomb(base), media_type="application/gzip")
        if path in ("/", "/a", "/b"):
            links = '<a href="/a">a</a><a href="/b">b</a>'
            return HTMLResponse(f"<html><head><title>{path}</title></head><body>{links}</body>")
        return PlainTextResponse("none", status_code=404)

    return Starlette(routes=[Route("/{path:path}", any_path)])


async def test_a_sitemap_past_the_page_cap_is_read_whole_and_a_gzip_bomb_is_bounded(
    audit_services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEOJOBS_SITE_AUDIT_SITEMAP_MAX_BYTES", str(CAP))
    services = audit_services
    user = services.accounts.create_user("alice").user
    with serve(_site()) as base:
        params: dict[str, Any] = {"start_url": f"{base}/", "check_external_links": False}
        job, _ = services.jobs.create(user, "site_audit", params)
        done = await run_until_final(services, user, job)
    assert done.state == "completed", done.error
    found = [f for f in services.jobs.findings(user, job.id, limit=1000) if f.code in SITEMAP_CODES]
    # /a and /b are listed after 2 MB of the big file: listed all the same.
    assert [(f.code, urlsplit(f.data["url"]).path) for f in found] == [
        ("sitemap_too_large", "/bomb.xml.gz")
    ]
    evidence = found[0].data["evidence"]
    assert evidence == {"urls": 0, "bytes": CAP, "cut_at_bytes": CAP}
    assert done.result is not None and done.result["pages_crawled"] == 3  # not /after-the-cap
