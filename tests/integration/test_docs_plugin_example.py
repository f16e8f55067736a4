"""The plug-in of docs/adding-a-kind.md, taken from the page itself (the ``python`` block after
``<!-- example: mykinds -->``), loaded as ``SEOJOBS_PLUGINS=mykinds`` would load it: it
registers its kind, its quota and cost, and a job of it runs through a real worker to what the
page says (items, a finding, the project's latest collection). SQLite only: nothing here
depends on the store."""

from __future__ import annotations

import re
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.api_helpers import api
from tests.conftest import make_settings
from tests.waiting import wait_until

PAGE = Path(__file__).resolve().parents[2] / "docs" / "adding-a-kind.md"
BLOCK = re.compile(r"<!-- example: mykinds -->\s*```python\n(.*?)```", re.S)


@pytest.fixture
def mykinds() -> Iterator[types.ModuleType]:
    found = BLOCK.findall(PAGE.read_text(encoding="utf-8"))
    assert len(found) == 1, "docs/adding-a-kind.md needs one marked mykinds example"
    module = types.ModuleType("mykinds")
    sys.modules["mykinds"] = module
    try:
        exec(compile(found[0], str(PAGE), "exec"), module.__dict__)
        yield module
    finally:
        del sys.modules["mykinds"]


def test_the_example_plugin_runs_as_the_page_says(
    mykinds: types.ModuleType, sqlite_url: str
) -> None:
    settings = make_settings(sqlite_url, plugins=["mykinds"])
    with api(settings, run_worker=True) as app:
        client = app.client(app.account())
        kinds = {k["name"]: k for k in client.get("/v1/job-types").json()["data"]}
        assert "titles" in kinds
        project = client.post("/v1/projects", json={"name": "titles"}).json()["data"]["id"]
        urls = ["http://a.example/", "https://b.example/x"]
        made = client.post(
            f"/v1/projects/{project}/jobs", json={"type": "titles", "params": {"urls": urls}}
        )
        assert made.status_code == 202, made.text
        job_id = made.json()["data"]["id"]
        done = wait_until(
            lambda: (
                (j := client.get(f"/v1/jobs/{job_id}").json()["data"])["status"]
                in ("completed", "failed")
                and j
            )
        )
        assert done["status"] == "completed", done
        items = client.get(f"/v1/jobs/{job_id}/items").json()["data"]
        assert sorted(i["input"] for i in items) == urls
        findings = client.get(f"/v1/jobs/{job_id}/findings/summary").json()["data"]
        assert [(f["code"], f["count"]) for f in findings] == [("no_https", 1)]
        latest = client.get(f"/v1/projects/{project}/data/titles", params={"subject": "titles"})
        assert latest.status_code == 200, latest.text
        assert latest.json()["data"]["data"] == {"urls": 2}
        usage = {q["quota"]: q for q in client.get("/v1/usage").json()["data"]}
        assert (usage["titles"]["used"], usage["titles"]["limit"]) == (2, 1000)
        refused = client.post(
            f"/v1/projects/{project}/jobs",
            json={"type": "titles", "params": {"urls": ["not a url"]}},
        )
        assert refused.status_code == 422
