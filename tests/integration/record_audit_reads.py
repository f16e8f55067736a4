"""Records the answers of one site audit's reads (issues, pages, compare: JSON pages, CSV,
errors) and their OpenAPI entries (SQLite), to compare two trees:
``READS_RECORD_DIR=/some/dir pytest tests/integration/record_audit_reads.py`` writes
``audit_reads.json`` there (times and the fake site's address replaced). Not part of the
suite (its name is no test module's); it asserts nothing but that the audits completed."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.api_helpers import api
from tests.conftest import make_settings
from tests.fakes.audit_site import PAGES, AuditSite, html
from tests.integration.record_reads import OUT, STAMP
from tests.integration.test_api_audits import _completed

CSV = {"Accept": "text/csv"}
# What differs between two runs of the same audit: the fake external server's port, timings,
# and hashes of pages that show a port.
NOISE = [
    (re.compile(r"127\.0\.0\.1:\d+"), "<host>"),
    (re.compile(r'"response_ms": \d+'), '"response_ms": 0'),
    (re.compile(r'"content_hash": "[0-9a-f]+"'), '"content_hash": "<hash>"'),
    (re.compile(r"\b[0-9a-f]{32}\b"), "<hash>"),
]


def _pages(client: Any, url: str, params: dict[str, Any], headers: Any = None) -> list[Any]:
    shown: list[dict[str, Any]] = []
    query = dict(params)
    for _ in range(60):
        answer = client.get(url, params=query, headers=headers)
        kind = answer.headers.get("content-type", "")
        body: Any = answer.json() if "json" in kind else _timeless(answer.text)
        shown.append(
            {
                "status": answer.status_code,
                "type": kind,
                "disposition": answer.headers.get("content-disposition"),
                "body": body,
            }
        )
        cursor = body.get("next_cursor") if isinstance(body, dict) else None
        if not cursor or answer.status_code != 200:
            break
        query["cursor"] = cursor
    return shown


def _timeless(text: str) -> str:
    """A CSV with its ``response_ms`` column zeroed (timings differ from run to run)."""
    rows = list(csv.reader(io.StringIO(text, newline="")))
    if not rows or "response_ms" not in rows[0]:
        return text
    at = rows[0].index("response_ms")
    for row in rows[1:]:
        row[at] = "0"
    out = io.StringIO()
    csv.writer(out).writerows(rows)
    return out.getvalue()


@pytest.mark.skipif(not OUT, reason="records only when READS_RECORD_DIR is set")
def test_record_audit_reads(sqlite_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEOJOBS_SITE_AUDIT_CONCURRENCY", "1")  # pages found in one order
    settings = make_settings(sqlite_url, allow_private_networks=True, rate_limit="100000/minute")
    with api(settings, run_worker=True) as running:
        client = running.client(running.account())
        project = client.post("/v1/projects", json={"name": "site"}).json()["data"]["id"]
        other = client.post("/v1/projects", json={"name": "other"}).json()["data"]["id"]
        with AuditSite().running() as base:
            params = {"start_url": f"{base}/", "thresholds": {"slow_response_ms": 600_000}}
            first = _completed(client, project, params)
            monkeypatch.setitem(PAGES, "/no-title", html("no-title"))
            second = _completed(client, project, params)
            elsewhere = _completed(client, other, params)
        running_job = client.post(
            f"/v1/projects/{project}/jobs",
            json={"type": "site_audit", "params": {"start_url": "http://127.0.0.1:9/"}},
        ).json()["data"]["id"]
        a = f"/v1/projects/{project}/audits/{second}"
        asked: list[tuple[str, dict[str, Any], Any]] = [
            (f"{a}/issues", {}, None),
            (f"{a}/issues", {"limit": 3}, None),
            (f"{a}/issues", {"severity": "error", "limit": 2}, None),
            (f"{a}/issues", {"code": "h1_missing"}, None),
            (f"{a}/issues", {"code": "nothing"}, None),
            (f"{a}/issues", {"severity": "fatal"}, None),
            (f"{a}/issues", {"cursor": "x"}, None),
            (f"{a}/issues", {"cursor": "0"}, None),
            (f"{a}/issues", {"cursor": "5"}, None),
            (f"{a}/issues", {"cursor": "99999999"}, None),
            (f"{a}/issues", {"limit": 0}, None),
            (f"{a}/issues", {"code": "x" * 101}, None),
            (f"{a}/issues", {}, CSV),
            (f"{a}/issues", {"severity": "warning", "cursor": "3"}, CSV),
            (f"{a}/pages", {}, None),
            (f"{a}/pages", {"limit": 3}, None),
            (f"{a}/pages", {"status": "4xx"}, None),
            (f"{a}/pages", {"status": "404", "limit": 1}, None),
            (f"{a}/pages", {"status": "200", "indexable": "false"}, None),
            (f"{a}/pages", {"indexable": "true", "limit": 4}, None),
            (f"{a}/pages", {"status": "4x"}, None),
            (f"{a}/pages", {"indexable": "maybe"}, None),
            (f"{a}/pages", {"cursor": "-1"}, None),
            (f"{a}/pages", {"cursor": "0"}, None),
            (f"{a}/pages", {"cursor": "x"}, None),
            (f"{a}/pages", {"cursor": "999999999999"}, None),
            (f"{a}/pages", {}, CSV),
            (f"{a}/pages", {"status": "2xx", "cursor": "2"}, CSV),
            (f"{a}/compare/{first}", {}, None),
            (f"{a}/compare/{first}", {"change": "fixed"}, None),
            (f"{a}/compare/{first}", {"change": "unchanged", "limit": 4}, None),
            (f"{a}/compare/{first}", {"change": "unchanged", "code": "h1_missing"}, None),
            (f"{a}/compare/{first}", {"change": "gone"}, None),
            (f"{a}/compare/{first}", {"cursor": "x"}, None),
            (f"{a}/compare/{second}", {}, None),
            (f"{a}/compare/{elsewhere}", {}, None),
            (f"{a}/compare/0", {}, None),
            (f"{a}/compare/{running_job}", {}, None),
        ]
        for job in (first, elsewhere, running_job, 999, 0, "x"):
            for read in ("issues", "pages", f"compare/{first}"):
                asked.append((f"/v1/projects/{project}/audits/{job}/{read}", {}, None))
                asked.append((f"/v1/projects/{project}/audits/{job}/{read}", {}, CSV))
        for read in ("issues", "pages", f"compare/{first}"):
            asked.append((f"/v1/projects/999/audits/{second}/{read}", {}, None))
            asked.append((f"/v1/projects/{other}/audits/{second}/{read}", {}, CSV))
        record: dict[str, Any] = {
            f"{url} {json.dumps(params, sort_keys=True)} {bool(headers)}": _pages(
                client, url, params, headers
            )
            for url, params, headers in asked
        }
        doc = client.get("/openapi.json").json()
        record["openapi"] = {p: o for p, o in doc["paths"].items() if "/audits/{job_id}" in p}
        record["schemas"] = {
            name: doc["components"]["schemas"][name]
            for name in sorted(doc["components"]["schemas"])
            if re.search("Issue|AuditPage|Compar|Change", name)
        }
        record["schema_names"] = sorted(doc["components"]["schemas"])
        text = STAMP.sub("<time>", json.dumps(record, indent=1, sort_keys=True))
        text = text.replace(base, "<site>")
        for noise, shown in NOISE:
            text = noise.sub(shown, text)
        Path(str(OUT), "audit_reads.json").write_text(text)
        Path(str(OUT), "openapi.json").write_text(json.dumps(doc, indent=1, sort_keys=True))
