"""A plug-in kind defined outside seojobs (tests/acme), with its own params, structured items,
quota, findings, collected data, settings and table, is started through the projects API and
read back through the generic reads, with no change in seojobs."""

from __future__ import annotations

import csv
import io
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from tests.acme import acme_notes
from tests.api_helpers import api, assert_problem, error_fields
from tests.conftest import make_settings
from tests.waiting import wait_until

PARAMS = {
    "site": "acme.example",
    "pages": {"/": 1000, "/thin": 50, "/about": 120},
    "devices": ["mobile", "desktop"],
}


def _finished(client: httpx.Client, job_id: int) -> dict[str, Any]:
    def done() -> dict[str, Any] | None:
        data: dict[str, Any] = client.get(f"/v1/jobs/{job_id}").json()["data"]
        return data if data["status"] in ("completed", "failed") else None

    return wait_until(done, timeout=60)


def test_a_plugin_kind_runs_through_the_generic_seam(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEOJOBS_ACME_THIN_WORDS", "100")  # the kind's own settings model
    settings = make_settings(store_url, plugins=["tests.kinds", "tests.acme"])
    with api(settings, run_worker=True) as app:
        alice = app.account()
        c = app.client(alice, "x-api-key")
        types = {t["name"]: t for t in c.get("/v1/job-types").json()["data"]}
        assert "pages" in types["acme_audit"]["params_schema"]["properties"]
        project = c.post("/v1/projects", json={"name": "acme"}).json()["data"]["id"]
        data_url = f"/v1/projects/{project}/data/acme_audit"
        # Reads never start work: nothing collected yet is a 404, and no job appears.
        assert_problem(c.get(data_url, params={"subject": "acme.example"}), 404)
        assert c.get(f"/v1/projects/{project}/jobs").json()["data"] == []

        bad = c.post(f"/v1/projects/{project}/jobs", json={"type": "acme_audit", "params": {}})
        assert_problem(bad, 422)
        assert {"params.site", "params.pages"} <= set(error_fields(bad))

        started = c.post(
            f"/v1/projects/{project}/jobs", json={"type": "acme_audit", "params": PARAMS}
        )
        assert started.status_code == 202, started.text
        job_id = started.json()["data"]["id"]
        job = _finished(c, job_id)
        assert job["status"] == "completed", job["error"]
        assert (job["items_total"], job["items_done"]) == (6, 6)

        items = c.get(f"/v1/jobs/{job_id}/items").json()
        assert items["next_cursor"] is None
        assert [i["input"] for i in items["data"]][:2] == [
            {"device": "mobile", "path": "/"},
            {"device": "desktop", "path": "/"},
        ]
        assert {i["status"] for i in items["data"]} == {"audited"}
        page = c.get(f"/v1/jobs/{job_id}/items", params={"limit": 4}).json()
        rest = c.get(
            f"/v1/jobs/{job_id}/items", params={"limit": 4, "cursor": page["next_cursor"]}
        ).json()
        assert len(page["data"]) + len(rest["data"]) == 6 and rest["next_cursor"] is None
        assert c.get(f"/v1/jobs/{job_id}/items", params={"outcome": "nope"}).json()["data"] == []

        report = c.get(f"/v1/jobs/{job_id}/items", headers={"Accept": "text/csv"})
        rows = list(csv.DictReader(io.StringIO(report.text)))
        assert [r["words"] for r in rows] == ["1000", "1000", "50", "50", "120", "120"]

        summary = c.get(f"/v1/jobs/{job_id}/findings/summary").json()["data"]
        assert summary == [
            {"code": "thin_content", "severity": "notice", "count": 2},
            {"code": "site_words", "severity": "info", "count": 1},
        ]
        thin = c.get(f"/v1/jobs/{job_id}/findings", params={"code": "thin_content"}).json()
        assert {f["data"]["path"] for f in thin["data"]} == {"/thin"}

        latest = c.get(data_url, params={"subject": "acme.example"}).json()["data"]
        assert latest["job_id"] == job_id
        assert latest["data"] == {"pages": 3, "words": 1170}
        assert c.get(data_url).json()["data"]["job_id"] == job_id  # any subject

        # Its own declared read, mounted by seojobs' one read router: rows of its row model,
        # filtered, and as CSV; documented with its own operation and row model.
        sites_url = f"/v1/projects/{project}/acme/sites"
        sites = c.get(sites_url).json()
        assert [(s["site"], s["pages"], s["words"]) for s in sites["data"]] == [
            ("acme.example", 3, 1170)
        ]
        assert sites["data"][0]["job_id"] == job_id and sites["next_cursor"] is None
        assert c.get(sites_url, params={"pages": 4}).json()["data"] == []
        assert error_fields(c.get(sites_url, params={"pages": "three"})) == ["pages"]
        sheet = c.get(sites_url, headers={"Accept": "text/csv"})
        assert sheet.headers["content-type"].startswith("text/csv")
        assert [r["words"] for r in csv.DictReader(io.StringIO(sheet.text))] == ["1170"]
        document = c.get("/openapi.json").json()
        operation = document["paths"]["/v1/projects/{project_id}/acme/sites"]["get"]
        assert operation["operationId"] == "list_acme_sites"
        assert "AcmeSite" in document["components"]["schemas"]

        # The monthly quota (10 page x device checks) refuses the next 6; what was collected
        # stays the latest.
        again = c.post(
            f"/v1/projects/{project}/jobs", json={"type": "acme_audit", "params": PARAMS}
        ).json()["data"]
        assert again["status"] == "failed"
        assert again["error"]["code"] == "quota_exceeded"
        usage = {q["quota"]: q for q in c.get("/v1/usage").json()["data"]}
        assert {"acme_pages", "check", "submit"} <= set(usage)
        acme = usage["acme_pages"]
        assert (acme["used"], acme["limit"], acme["remaining"], acme["period"]) == (
            6,
            10,
            4,
            "month",
        )
        assert acme["resets_at"].endswith("-01T00:00:00Z")
        history = c.get(f"{data_url}/history", params={"subject": "acme.example"}).json()
        assert [h["job_id"] for h in history["data"]] == [job_id]

        # Another user sees none of it.
        bob = app.client(app.account("bob"), "x-api-key")
        assert_problem(bob.get(f"/v1/jobs/{job_id}/items"), 404)
        assert_problem(bob.get(data_url, params={"subject": "acme.example"}), 404)

        # The plug-in's own table came from its migration, in seojobs' one chain.
        with app.services.db.read() as conn:
            notes = conn.execute(select(acme_notes.c.job_id, acme_notes.c.note)).all()
        assert [tuple(n) for n in notes] == [(job_id, "audited 1170")]
        assert c.get("/readyz").status_code == 200
