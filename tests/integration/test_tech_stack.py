"""``tech_stack`` end to end on both stores: a real app and worker look up pages of a local
site carrying the fingerprints of our own test database; the read serves the latest
collection (404 before, and never starts a job); coded failures (unreachable, over quota,
no database at creation, a database gone or broken by the time the job runs)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from tests.api_helpers import TERMINAL, Api, api, assert_problem, error_fields, stored
from tests.conftest import TEST_FINGERPRINTS, UNREACHABLE, make_settings
from tests.fakes.tech_site import EXPECTED, TechSite, found
from tests.waiting import wait_until


@pytest.fixture
def served(store_url: str) -> Iterator[Api]:
    settings = make_settings(store_url, allow_private_networks=True)
    with api(settings, run_worker=True) as running:
        yield running


def _project(client: httpx.Client) -> int:
    answer = client.post("/v1/projects", json={"name": "site"})
    assert answer.status_code == 201, answer.text
    return int(answer.json()["data"]["id"])


def _start(client: httpx.Client, project: int, urls: list[str]) -> httpx.Response:
    body = {"type": "tech_stack", "params": {"urls": urls}}
    return client.post(f"/v1/projects/{project}/jobs", json=body)


def _finished(client: httpx.Client, job_id: int) -> dict[str, Any]:
    done: dict[str, Any] = wait_until(
        lambda: (d := client.get(f"/v1/jobs/{job_id}").json()["data"])["status"] in TERMINAL and d,
        timeout=60,
    )
    return done


def _jobs(client: httpx.Client, project: int) -> list[int]:
    return [j["id"] for j in client.get(f"/v1/projects/{project}/jobs").json()["data"]]


def test_a_lookup_reports_each_pages_stack_and_the_site_is_read_back(served: Api) -> None:
    client = served.client(served.account())
    project = _project(client)
    read = f"/v1/projects/{project}/tech-stack"
    before = assert_problem(client.get(read), 404)
    assert "tech_stack" in before["detail"]
    assert _jobs(client, project) == []  # the read started nothing
    types = {t["name"]: t for t in client.get("/v1/job-types").json()["data"]}
    urls_schema = types["tech_stack"]["params_schema"]["properties"]["urls"]
    assert (urls_schema["minItems"], urls_schema["maxItems"]) == (1, 20)
    assert "charged per URL" in urls_schema["description"]
    site = TechSite()
    with site.running() as base:
        urls = [f"{base}/", f"{base}/shop/cart", f"{base}/slow", f"{base}/"]
        started = _start(client, project, urls)
        assert started.status_code == 202, started.text
        job_id = started.json()["data"]["id"]
        done = _finished(client, job_id)
    assert done["status"] == "completed", done["error"]
    assert dict(site.hits) == {"/": 1, "/shop/cart": 1, "/slow": 1}  # the duplicate once
    items = client.get(f"/v1/jobs/{job_id}/items").json()["data"]
    pages = {urlsplit(i["input"]).path: i["result"] for i in items}
    assert {path: found(page["technologies"]) for path, page in pages.items()} == EXPECTED
    assert {s["technology"] for s in pages["/slow"]["skipped"]} == {"Catastrophic"}
    csv = client.get(f"/v1/jobs/{job_id}/items", headers={"Accept": "text/csv"}).text
    assert csv.splitlines()[0].endswith(",http_status,final_url")
    assert csv.splitlines()[1].endswith(f",200,{base}/")

    answer = client.get(read)
    assert answer.status_code == 200, answer.text
    body = answer.json()
    host = urlsplit(base).netloc
    assert (body["job_id"], body["subject"]) == (job_id, host)
    assert body["collected_at"]
    data = body["data"]
    assert data["host"] == host
    techs = {t["name"]: t for t in data["technologies"]}
    assert set(techs) == {name for page in EXPECTED.values() for name in page}
    widget = techs["HtmlWidget"]
    assert (widget["version"], widget["versions"]) == ("2.x", ["1.x", "2.x"])
    assert sorted(urlsplit(u).path for u in widget["pages"]) == ["/", "/shop/cart"]
    assert {urlsplit(e["url"]).path for e in widget["evidence"]} == {"/", "/shop/cart"}
    assert techs["Rubyish"]["confidence"] == 50 and techs["MaybeCDN"]["confidence"] == 80
    cms = next(c for c in data["categories"] if c["name"] == "CMS")
    assert sorted(cms["technologies"]) == ["LegacyCMS", "PressCMS", "PressTheme Shiny"]
    assert [p["status"] for p in data["pages"]] == [200, 200, 200]
    # One site's read by its host; another host has nothing.
    assert client.get(read, params={"host": host.upper()}).json() == body
    assert_problem(client.get(read, params={"host": "elsewhere.test"}), 404)
    assert "host" in error_fields(client.get(read, params={"host": "a/b"}))
    assert _jobs(client, project) == [job_id]  # the reads started nothing


def test_failures_are_coded_and_quotas_charge_per_url(store_url: str) -> None:
    settings = make_settings(store_url, quota_tech_lookups_daily=2)
    with api(settings, run_worker=True) as served:
        client = served.client(served.account())
        project = _project(client)
        unreachable = _start(client, project, [f"{UNREACHABLE}/"]).json()["data"]
        done = _finished(client, unreachable["id"])
        assert done["status"] == "failed"
        assert done["error"]["code"] == "target_unreachable", done["error"]
        usage = {q["quota"]: q for q in client.get("/v1/usage").json()["data"]}
        assert (usage["tech_lookups"]["used"], usage["tech_lookups"]["limit"]) == (1, 2)
        assert usage["tech_lookups_month"]["used"] == 1
        over = _start(client, project, ["http://a.example/", "http://b.example/"])
        assert over.status_code == 202, over.text
        job = client.get(f"/v1/jobs/{over.json()['data']['id']}").json()["data"]
        assert (job["status"], job["error"]["code"]) == ("failed", "quota_exceeded")
        assert "resets at" in job["error"]["message"]
        assert_problem(client.get(f"/v1/projects/{project}/tech-stack"), 404)


def test_without_a_database_a_lookup_is_refused_at_creation(store_url: str, tmp_path: Path) -> None:
    missing = tmp_path / "none.json"
    with api(make_settings(store_url, fingerprints_path=str(missing))) as served:
        client = served.client(served.account())
        project = _project(client)
        before = stored(served)
        problem = assert_problem(_start(client, project, ["http://a.example/"]), 422)
        assert problem["type"].endswith("/fingerprints_missing"), problem
        assert [e["field"] for e in problem["errors"]] == ["params"]
        assert "seojobs fingerprints update" in problem["detail"], problem
        assert str(missing) in problem["detail"]
        assert stored(served) == before


@pytest.mark.parametrize(
    ("damage", "code"),
    [("delete", "fingerprints_missing"), ("garbage", "fingerprints_invalid")],
)
def test_a_database_gone_when_the_job_runs_fails_it_with_a_code(
    sqlite_url: str, tmp_path: Path, damage: str, code: str
) -> None:
    path = tmp_path / "fingerprints.json"
    shutil.copy(TEST_FINGERPRINTS, path)
    with api(make_settings(sqlite_url, fingerprints_path=str(path))) as idle:
        client = idle.client(idle.account())
        job_id = _start(client, _project(client), ["http://a.example/"]).json()["data"]["id"]
    if damage == "delete":
        path.unlink()
    else:
        path.write_text('{"technologies": "no"}')
    settings = make_settings(sqlite_url, fingerprints_path=str(path))
    with api(settings, run_worker=True) as served:
        user = served.services.accounts.user_named("alice")
        done = wait_until(lambda: (j := served.services.jobs.get(user, job_id)).is_final and j)
    assert (done.state, done.error_code) == ("failed", code)
    assert "seojobs fingerprints update" in (done.error_message or "")
