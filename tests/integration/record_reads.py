"""Records the answers of every read of collected data and their OpenAPI entries (SQLite), to
compare two trees: ``READS_RECORD_DIR=/some/dir pytest tests/integration/record_reads.py``
writes ``reads.json`` there (times replaced by ``<time>``). Not part of the suite (its name is
no test module's); it asserts nothing but that every request was answered."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from tests import collected_world
from tests.api_helpers import Api, api
from tests.conftest import make_settings

OUT = os.environ.get("READS_RECORD_DIR")
P = "/v1/projects/{p}/"
ASKED: list[tuple[str, str, dict[str, Any]]] = [
    ("rankings", "rankings", {}),
    ("rankings_kw", "rankings", {"sort": "keyword"}),
    ("rankings_mobile", "rankings", {"device": "mobile"}),
    ("rankings_contains", "rankings", {"contains": "00"}),
    ("rankings_keyword", "rankings", {"keyword": "KEYWORD 002"}),
    ("rankings_loc", "rankings", {"location": "2840", "language": "EN"}),
    ("rankings_bad", "rankings", {"device": "tablet"}),
    ("rankings_badcur", "rankings", {"cursor": "x"}),
    ("rankings_history", "rankings/history", {}),
    ("rankings_history_kw", "rankings/history", {"keyword": "keyword 002"}),
    ("rankings_history_kw_dev", "rankings/history", {"keyword": "keyword 002", "device": "mobile"}),
    ("rankings_history_none", "rankings/history", {"keyword": "nothing"}),
    ("wv", "web-vitals", {}),
    ("wv_ff", "web-vitals", {"form_factor": "desktop"}),
    ("wv_history", "web-vitals/history", {}),
    ("wv_history_url", "web-vitals/history", {"url": "https://example.com/page/1"}),
    ("wv_history_ff", "web-vitals/history", {"form_factor": "mobile"}),
    ("wv_history_none", "web-vitals/history", {"url": "https://example.com/none"}),
    ("wv_bad", "web-vitals", {"form_factor": "tv"}),
    ("geo", "geo", {}),
    ("geo_prov", "geo", {"provider": "openai"}),
    ("geo_cited", "geo", {"cited": "true"}),
    ("geo_history", "geo/history", {}),
    ("geo_history_prompt", "geo/history", {"prompt": "best tool 001"}),
    ("geo_history_prov", "geo/history", {"provider": "perplexity"}),
    ("geo_bad", "geo", {"provider": "bard"}),
    ("bl", "backlinks", {}),
    ("bl_status", "backlinks", {"link_status": "found"}),
    ("bl_target", "backlinks", {"target": "http://www.example.com/1/"}),
    ("bl_domain", "backlinks", {"donor_domain": "donor.test"}),
    ("bl_history", "backlinks/history", {}),
    (
        "bl_history_pair",
        "backlinks/history",
        {"donor": "https://other.test/post/000", "target": "https://example.com/0"},
    ),
    ("bl_history_donor", "backlinks/history", {"donor": "https://blog.donor.test/post/001"}),
    ("bl_bad", "backlinks", {"link_status": "gone"}),
    ("ts", "tech-stack", {}),
    ("ts_host", "tech-stack", {"host": "EXAMPLE.com"}),
    ("ts_none", "tech-stack", {"host": "none.test"}),
    ("ts_bad", "tech-stack", {"host": "a b"}),
    ("kw", "keywords", {}),
    ("kw_sort", "keywords", {"sort": "keyword", "min_volume": "10"}),
    ("kw_market", "keywords", {"location": "2840", "language": "en"}),
    ("kw_none", "keywords", {"location": "2826"}),
    ("domain", "domain", {}),
    ("domain_of", "domain", {"domain": "EXAMPLE.org"}),
    ("domain_none", "domain", {"domain": "none.test"}),
    ("audits", "audits", {}),
    ("audits_latest", "audits/latest", {}),
    ("data", "data/rank_check", {}),
    ("data_history", "data/web_vitals/history", {}),
]
STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z")


def _pages(client: Any, url: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    shown: list[dict[str, Any]] = []
    query = dict(params)
    for _ in range(30):
        answer = client.get(url, params=query)
        body: Any = answer.json() if "json" in answer.headers["content-type"] else answer.text
        shown.append(
            {"status": answer.status_code, "type": answer.headers["content-type"], "body": body}
        )
        cursor = body.get("next_cursor") if isinstance(body, dict) else None
        if not cursor or answer.status_code != 200:
            break
        query["cursor"] = cursor
    return shown


@pytest.mark.skipif(not OUT, reason="records only when READS_RECORD_DIR is set")
def test_record_every_read(sqlite_url: str) -> None:
    with api(make_settings(sqlite_url, rate_limit="100000/minute")) as idle:
        _record(idle)


def _record(idle: Api) -> None:
    client = idle.client(idle.account())
    empty = client.post("/v1/projects", json={"name": "empty"}).json()["data"]["id"]
    project = client.post("/v1/projects", json={"name": "full"}).json()["data"]["id"]
    collected_world.fill(idle.services, project)
    record: dict[str, Any] = {}
    for name, path, params in ASKED:
        url = P.format(p=project) + path
        record[name] = {"all": _pages(client, url, params)}
        record[name]["by2"] = _pages(client, url, params | {"limit": 2})
        record[name]["empty"] = _pages(client, P.format(p=empty) + path, params)
        record[name]["missing"] = _pages(client, P.format(p=999) + path, params)
    doc = client.get("/openapi.json").json()
    record["openapi"] = {
        path: ops
        for path, ops in doc["paths"].items()
        if path.startswith("/v1/projects/{project_id}/")
    }
    record["schemas"] = sorted(doc["components"]["schemas"])
    text = STAMP.sub("<time>", json.dumps(record, indent=1, sort_keys=True))
    Path(str(OUT), "reads.json").write_text(text)
