"""v1 reports over HTTP: JSON pages with a cursor, CSV with ``Accept: text/csv`` (diagnostics
columns for checks), and a 10,000-URL CSV that streams without building the document.

``idle``, ``working`` (with its worker and the module's fakes) and ``over_quota`` are one app
each per store for the module; each test works as its own new users, but for the two that
read the one job of 10,000 long URLs (``big``) of the module's ``idle`` app."""

from __future__ import annotations

import csv
import io
import tracemalloc
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from tests.api_helpers import (
    TERMINAL,
    V1,
    Api,
    Providers,
    assert_problem,
    owned,
    shared_api,
    shared_idle_per_test,  # noqa: F401 (the module's ``idle``: one app per store)
)
from tests.waiting import wait_until

KINDS = ["index-submit", "index-check"]
ROW_FIELDS = {
    "url",
    "status",
    "provider",
    "error_code",
    "error_message",
    "finished_at",
    "detail",
    "diagnostics",
}
BASE_COLUMNS = ["url", "status", "provider", "error_code", "error_message", "finished_at"]
DIAGNOSTIC_COLUMNS = {
    "final_url",
    "http_status",
    "redirect_chain",
    "robots_txt_state",
    "indexing_state",
    "page_fetch_state",
    "meta_robots",
    "x_robots_tag",
    "canonical",
    "canonical_state",
    "content_type",
    "fetch_error_kind",
    "verdict_reason",
}
CSV = {"Accept": "text/csv"}


@pytest.fixture
def working(shared_working: Api) -> Iterator[Api]:
    """The module's app with its worker (one per store), as this test's own users."""
    yield from owned(shared_working)


@pytest.fixture
def fakes(shared_fakes: Providers) -> Providers:
    """The module's fakes, with no request recorded, no reply scripted and nothing indexed."""
    shared_fakes.serper.forget()
    return shared_fakes


@pytest.fixture(scope="module")
def over_quota_app(module_store: str, request: pytest.FixtureRequest) -> Iterator[Api]:
    with shared_api(module_store, request, quota_submit_daily=2, quota_check_daily=2) as made:
        yield made


@pytest.fixture
def over_quota(over_quota_app: Api) -> Iterator[Api]:
    """An app whose users may submit and check 2 URLs a day (no worker), as this test's own
    users."""
    yield from owned(over_quota_app)


def create(client: httpx.Client, kind: str, urls: list[str], **extra: Any) -> int:
    answer = client.post(f"{V1}/{kind}/jobs", json={"urls": urls, **extra})
    assert answer.status_code == 202, answer.text
    job_id: int = answer.json()["job_id"]
    return job_id


def finish(client: httpx.Client, kind: str, job_id: int) -> dict[str, Any]:
    def done() -> dict[str, Any] | None:
        body: dict[str, Any] = client.get(f"{V1}/{kind}/jobs/{job_id}").json()
        return body if body["status"] in TERMINAL else None

    return wait_until(done)


def csv_rows(answer: httpx.Response) -> tuple[list[str], list[dict[str, str]]]:
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/csv")
    reader = csv.DictReader(io.StringIO(answer.text))
    rows = list(reader)
    return list(reader.fieldnames or []), rows


# -- JSON pages ---------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_json_report_pages_with_cursor(idle: Api, kind: str) -> None:
    client = idle.client(idle.account())
    urls = [f"https://a.example/{i}" for i in range(5)]
    job_id = create(client, kind, urls)
    seen: list[str] = []
    cursor: str | None = None
    pages = 0
    while True:
        params: dict[str, Any] = {"limit": 2} | ({"cursor": cursor} if cursor else {})
        answer = client.get(f"{V1}/{kind}/jobs/{job_id}/report", params=params)
        assert answer.status_code == 200, answer.text
        page = answer.json()
        assert page["job_id"] == job_id
        assert len(page["rows"]) <= 2
        for row in page["rows"]:
            assert set(row) == ROW_FIELDS
            assert row["status"] == "pending" and row["finished_at"] is None
        seen += [row["url"] for row in page["rows"]]
        pages += 1
        cursor = page["next_cursor"]
        if cursor is None:
            break
        assert pages < 10, "next_cursor never ran out"
    assert pages == 3
    assert seen == urls
    bad = client.get(f"{V1}/{kind}/jobs/{job_id}/report", params={"cursor": "x"})
    assert_problem(bad, 422)


def test_check_report_has_verdicts_and_diagnostics(working: Api, fakes: Providers) -> None:
    client = working.client(working.account())
    ok, noindex = fakes.site_base + "/ok", fakes.site_base + "/noindex-meta"
    fakes.serper.index("google", ok)
    job_id = create(client, "index-check", [ok, noindex])
    assert finish(client, "index-check", job_id)["status"] == "completed"

    page = client.get(f"{V1}/index-check/jobs/{job_id}/report").json()
    rows = {row["url"]: row for row in page["rows"]}
    assert rows[ok]["status"] == "indexed" and rows[noindex]["status"] == "not_indexed"
    assert rows[ok]["provider"] == "serper" and rows[ok]["finished_at"]
    assert rows[ok]["diagnostics"]["http_status"] == 200
    assert rows[noindex]["diagnostics"]["indexing_state"] == "BLOCKED_BY_META_TAG"

    header, lines = csv_rows(client.get(f"{V1}/index-check/jobs/{job_id}/report", headers=CSV))
    assert header[: len(BASE_COLUMNS)] == BASE_COLUMNS
    assert set(header[len(BASE_COLUMNS) :]) == DIAGNOSTIC_COLUMNS
    assert [line["url"] for line in lines] == [ok, noindex]  # one line per URL, in order
    by_url = {line["url"]: line for line in lines}
    assert by_url[ok]["status"] == "indexed" and by_url[ok]["http_status"] == "200"
    assert by_url[ok]["indexing_state"] == "INDEXING_ALLOWED"
    assert by_url[ok]["canonical_state"] == "self"
    assert by_url[noindex]["status"] == "not_indexed"
    assert by_url[noindex]["indexing_state"] == "BLOCKED_BY_META_TAG"


def test_check_csv_robots_columns_show_the_directives(working: Api, fakes: Providers) -> None:
    client = working.client(working.account())
    meta, header = fakes.site_base + "/noindex-meta", fakes.site_base + "/noindex-header"
    job_id = create(client, "index-check", [meta, header])
    assert finish(client, "index-check", job_id)["status"] == "completed"
    _columns, lines = csv_rows(client.get(f"{V1}/index-check/jobs/{job_id}/report", headers=CSV))
    by_url = {line["url"]: line for line in lines}
    assert "noindex" in by_url[meta]["meta_robots"], by_url[meta]
    assert "noindex" in by_url[header]["x_robots_tag"], by_url[header]


def test_submit_csv_report_has_one_line_per_url(working: Api, fakes: Providers) -> None:
    client = working.client(working.account())
    urls = [f"https://a.example/{i}" for i in range(3)]
    job_id = create(client, "index-submit", urls, engine="bing")
    assert finish(client, "index-submit", job_id)["status"] == "completed"
    answer = client.get(f"{V1}/index-submit/jobs/{job_id}/report", headers=CSV)
    header, lines = csv_rows(answer)
    assert header == BASE_COLUMNS  # no diagnostics for submissions
    assert [line["url"] for line in lines] == urls
    assert {line["status"] for line in lines} == {"submitted"}
    assert {line["provider"] for line in lines} == {"indexnow"}
    assert answer.text.count("\n") == len(urls) + 1


@pytest.mark.parametrize("kind", KINDS)
def test_csv_of_pending_items(idle: Api, kind: str) -> None:
    client = idle.client(idle.account())
    job_id = create(client, kind, ["https://a.example/1", "https://a.example/2,with,commas"])
    header, lines = csv_rows(client.get(f"{V1}/{kind}/jobs/{job_id}/report", headers=CSV))
    assert [line["url"] for line in lines] == [
        "https://a.example/1",
        "https://a.example/2,with,commas",
    ]
    assert {line["status"] for line in lines} == {"pending"}
    assert set(header) >= set(BASE_COLUMNS)


# -- URLs that never ran: not_run once the job is final, pending while it may still run them ----


def statuses(client: httpx.Client, kind: str, job_id: int) -> tuple[list[str], list[str]]:
    """Each row's status in the JSON report and in the CSV report, in URL order."""
    page = client.get(f"{V1}/{kind}/jobs/{job_id}/report").json()
    _header, lines = csv_rows(client.get(f"{V1}/{kind}/jobs/{job_id}/report", headers=CSV))
    assert [row["url"] for row in page["rows"]] == [line["url"] for line in lines]
    return [row["status"] for row in page["rows"]], [line["status"] for line in lines]


@pytest.mark.parametrize("kind", KINDS)
def test_urls_of_a_job_refused_over_quota_are_not_run(over_quota: Api, kind: str) -> None:
    client = over_quota.client(over_quota.account())
    urls = [f"https://a.example/{i}" for i in range(3)]
    refused = client.post(f"{V1}/{kind}/jobs", json={"urls": urls}).json()
    assert refused["status"] == "failed" and refused["error"]["code"] == "quota_exceeded"
    assert statuses(client, kind, refused["job_id"]) == (["not_run"] * 3, ["not_run"] * 3)
    rows = client.get(f"{V1}/{kind}/jobs/{refused['job_id']}/report").json()["rows"]
    assert [row["url"] for row in rows] == urls  # every URL is still listed
    # A job that fits is open: its URLs may still run.
    fits = create(client, kind, ["https://b.example/1"])
    assert statuses(client, kind, fits) == (["pending"], ["pending"])


@pytest.mark.parametrize("kind", KINDS)
def test_urls_of_a_job_cancelled_before_it_ran_are_not_run(idle: Api, kind: str) -> None:
    client = idle.client(idle.account())
    job_id = create(client, kind, ["https://a.example/1", "https://a.example/2"])
    assert statuses(client, kind, job_id) == (["pending"] * 2, ["pending"] * 2)
    cancelled = client.post(f"{V1}/{kind}/jobs/{job_id}/cancel")
    assert cancelled.status_code == 200 and cancelled.json()["error"]["code"] == "cancelled"
    assert statuses(client, kind, job_id) == (["not_run"] * 2, ["not_run"] * 2)


def test_urls_a_cancelled_check_never_reached_are_not_run(working: Api, fakes: Providers) -> None:
    client = working.client(working.account())
    fakes.site.release.clear()  # held until this test releases it (another test may have)
    done, held = fakes.site_base + "/ok", fakes.site_base + "/hold"
    job_id = create(client, "index-check", [done, held])
    status = f"{V1}/index-check/jobs/{job_id}"
    wait_until(lambda: client.get(status).json()["checked_urls"] == 1)  # /ok; /hold waits
    try:
        assert client.post(f"{status}/cancel").json()["status"] == "failed"
    finally:
        fakes.site.release.set()
    assert statuses(client, "index-check", job_id) == (
        ["not_indexed", "not_run"],
        ["not_indexed", "not_run"],
    )


def test_v2_reports_list_no_url_that_never_ran(idle: Api) -> None:
    client = idle.client(idle.account())
    urls = ["https://a.example/1", "https://a.example/2"]
    created = client.post("/v2/task/google/indexer/create", json={"urls": urls}).json()
    task_id = created["task_id"]
    assert client.post(f"{V1}/index-submit/jobs/{task_id}/cancel").status_code == 200
    for report in ("fullreport", "report"):
        answer = client.post(f"/v2/task/google/indexer/{report}", json={"task_id": task_id})
        result = answer.json()["result"]
        assert (result["size"], result["processed_count"]) == (2, 0), result
        assert result["indexed_links"] == [] and result["unindexed_links"] == [], result


# -- 10,000 URLs --------------------------------------------------------------------------------

MANY = 10_000


def long_urls(length: int) -> list[str]:
    """10,000 distinct URLs of ``length`` characters."""
    return [f"https://a.example/{i:05d}/".ljust(length, "p") for i in range(MANY)]


def stream_csv(client: httpx.Client, job_id: int) -> tuple[int, int, bytes, bytes]:
    """Download the CSV chunk by chunk, keeping only counts and the first and last lines."""
    lines = size = 0
    head = tail = b""
    with client.stream("GET", f"{V1}/index-check/jobs/{job_id}/report", headers=CSV) as answer:
        assert answer.status_code == 200
        assert answer.headers["content-type"].startswith("text/csv")
        # Streamed as it is produced: a document built up front would announce its length.
        assert "content-length" not in answer.headers
        for chunk in answer.iter_bytes():
            lines += chunk.count(b"\n")
            size += len(chunk)
            if len(head) < 4096:
                head += chunk[:4096]
            tail = (tail + chunk)[-4096:]
    return lines, size, head, tail


def test_csv_report_of_10000_urls_streams_every_row(idle: Api) -> None:
    client = idle.client(idle.account())
    urls = long_urls(60)
    job_id = create(client, "index-check", urls)  # no worker: all 10,000 items stay pending
    lines, _size, head, tail = stream_csv(client, job_id)
    assert lines == MANY + 1  # header + one line per URL
    first_rows = head.decode().splitlines()
    assert first_rows[0].startswith("url,status,")
    assert first_rows[1].startswith(urls[0] + ",pending,")
    assert tail.decode().splitlines()[-1].startswith(urls[-1] + ",pending,")


@dataclass
class Big:
    """An index-check job of 10,000 URLs of 500 characters, left pending (no worker), and a
    client of its owner."""

    client: httpx.Client
    job_id: int
    urls: list[str]


@pytest.fixture(scope="module")
def big(shared_idle: Api) -> Iterator[Big]:
    """One per store for the module: the two tests below only read it (creating it, a 5 MB
    request of 10,000 items, cost 0.4-0.9 CPU-s each time)."""
    owner = shared_idle.own()
    try:
        client = owner.client(owner.account())
        urls = long_urls(500)
        yield Big(client, create(client, "index-check", urls), urls)
    finally:
        owner.close()


def test_csv_report_memory_stays_well_below_the_document(big: Big) -> None:
    client = big.client
    client.get(f"{V1}/usage")  # warm the app's lazy imports and caches outside the measurement
    tracemalloc.start()
    try:
        baseline = tracemalloc.get_traced_memory()[0]
        lines, size, _head, _tail = stream_csv(client, big.job_id)
        peak = tracemalloc.get_traced_memory()[1] - baseline
    finally:
        tracemalloc.stop()
    assert lines == MANY + 1
    # The server runs in this process, so tracemalloc sees it. Building the document, or
    # holding every row, costs at least the document's size; pages of rows cost a fraction.
    assert peak < size / 2, f"peak {peak} bytes while streaming a {size}-byte CSV"


def test_status_poll_memory_does_not_grow_with_the_job(big: Big) -> None:
    client = big.client
    client.get(f"{V1}/index-check/jobs/{big.job_id}")  # warm up outside the measurement
    tracemalloc.start()
    try:
        baseline = tracemalloc.get_traced_memory()[0]
        answer = client.get(f"{V1}/index-check/jobs/{big.job_id}")
        peak = tracemalloc.get_traced_memory()[1] - baseline
    finally:
        tracemalloc.stop()
    assert answer.status_code == 200 and answer.json()["total_urls"] == MANY
    url_bytes = sum(len(u) for u in big.urls)
    assert peak < url_bytes / 5, f"peak {peak} bytes for one poll; the URLs are {url_bytes}"
