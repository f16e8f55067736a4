"""``web_vitals`` with a real Lighthouse in Debian's Chromium against loopback pages.

Each real run costs ~5 CPU-s (Lighthouse and Chromium) on a 2-core machine shared with
others, so there are few: one job (one URL, both form factors, CrUX from a local fake) on
SQLite, one (mobile) on PostgreSQL of an https page signed by the fetcher's own CA (which two
tests read), a run killed by the timeout, and a worker SIGKILLed mid-run. Chromium is held to
loopback by ``--host-resolver-rules`` (SEOJOBS_WEB_VITALS_RESOLVER_RULES). Missing Chromium or
Lighthouse fails these tests (``scripts/test`` installs both), never skips them.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from fastapi.responses import HTMLResponse

from seojobs.browsers.reaper import MARKER_ENV
from seojobs.kinds.web_vitals import WebVitalsSettings
from seojobs.providers.base import ProviderError
from seojobs.providers.crux import CruxClient
from tests.api_helpers import TERMINAL, api, assert_problem
from tests.conftest import database_of, make_settings
from tests.fakes.crux import KEY, FakeCrux
from tests.fakes.server import serve
from tests.fakes.tls_site import TlsSite
from tests.procs import Procs
from tests.waiting import wait_until

PROJECTS = itertools.count(1)
# A real Lighthouse run in Chromium (8-25 s each): marked slow so that tests/scheduling.py
# starts them first. Unmarked, each counted as one short integration test and ran in the last
# 100 s of a full run, one worker finishing 20 s after the others (the module is left to CI
# either way: it is not in INNER_LOOP).
SLOW = pytest.mark.slow
LOOPBACK_ONLY = "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost"
PAGE = """<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width"><title>Vitals</title></head>
<body><h1>Measured</h1><p id="msg">A page measured by Lighthouse.</p>
<script>let n = 0; for (let i = 0; i < 3e6; i++) { n += i; }
document.getElementById("msg").textContent = "done " + n;</script></body></html>"""


def _installed() -> None:
    """Fail (not skip) without the browser tooling: scripts/test installs both."""
    lighthouse = WebVitalsSettings().lighthouse_path
    missing = [p for p in ("/usr/bin/chromium", lighthouse) if not Path(p).is_file()]
    if missing:
        pytest.fail(
            f"missing {missing}: run scripts/test (apt-get chromium, npm ci in lighthouse/)"
        )


class Site:
    """A loopback site: ``/`` a small page, ``/hang`` a page that never answers (until the
    test ends), and the hits of each."""

    def __init__(self) -> None:
        self.hits: dict[str, int] = {}
        self.released = threading.Event()
        self.app = FastAPI()
        self.app.get("/")(self.page)
        self.app.get("/hang")(self.hang)

    async def page(self) -> HTMLResponse:
        self.hits["/"] = self.hits.get("/", 0) + 1
        return HTMLResponse(PAGE)

    async def hang(self) -> HTMLResponse:
        self.hits["/hang"] = self.hits.get("/hang", 0) + 1
        while not self.released.is_set():
            await asyncio.sleep(0.05)
        return HTMLResponse(PAGE)

    @classmethod
    def running(cls) -> Iterator[tuple[Site, str]]:
        site = cls()
        with serve(site.app) as base:
            try:
                yield site, base
            finally:
                site.released.set()


@pytest.fixture
def site() -> Iterator[tuple[Site, str]]:
    yield from Site.running()


@pytest.fixture
def crux() -> Iterator[tuple[FakeCrux, str]]:
    fake = FakeCrux(set())
    with serve(fake.app) as base:
        yield fake, base


@pytest.fixture
def vitals_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    _installed()
    reports = tmp_path / "reports"
    reports.mkdir()
    monkeypatch.setenv("SEOJOBS_WEB_VITALS_RESOLVER_RULES", LOOPBACK_ONLY)
    monkeypatch.setenv("SEOJOBS_WEB_VITALS_REPORT_DIR", str(reports))
    return reports


def marked(prefix: str) -> dict[int, str]:
    """Processes of runs whose marker starts with ``prefix`` (a worker's pid): pid -> cmdline."""
    found = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            environ = Path(f"/proc/{name}/environ").read_bytes().split(b"\0")
            cmdline = Path(f"/proc/{name}/cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        if any(e.startswith(f"{MARKER_ENV}={prefix}-".encode()) for e in environ):
            found[int(name)] = cmdline.decode(errors="replace")
    return found


def _chromium_running(prefix: str) -> bool:
    return any("chromium" in cmd for cmd in marked(prefix).values())


def _start(client: httpx.Client, urls: list[str], **params: Any) -> tuple[int, int]:
    name = f"vitals-{next(PROJECTS)}"  # project names are unique per user
    project = client.post("/v1/projects", json={"name": name}).json()["data"]["id"]
    body = {"type": "web_vitals", "params": {"urls": urls, **params}}
    answer = client.post(f"/v1/projects/{project}/jobs", json=body)
    assert answer.status_code == 202, answer.text
    return project, answer.json()["data"]["id"]


def _finished(client: httpx.Client, job_id: int, timeout: float = 180) -> dict[str, Any]:
    done: dict[str, Any] = wait_until(
        lambda: (d := client.get(f"/v1/jobs/{job_id}").json()["data"])["status"] in TERMINAL and d,
        timeout=timeout,
        interval=1.0,  # within the 120 requests per minute
    )
    return done


def _jobs(client: httpx.Client, project: int) -> list[int]:
    return [j["id"] for j in client.get(f"/v1/projects/{project}/jobs").json()["data"]]


def _report_values(raw: dict[str, Any]) -> dict[str, Any]:
    """The report's own values at the documented JSON paths (not through our parser)."""
    audits = raw["audits"]
    items = audits["metrics"]["details"]["items"][0]
    return {
        "score": round(raw["categories"]["performance"]["score"] * 100),
        "lcp": audits["largest-contentful-paint"]["numericValue"],
        "cls": audits["cumulative-layout-shift"]["numericValue"],
        "tbt": audits["total-blocking-time"]["numericValue"],
        "fcp": audits["first-contentful-paint"]["numericValue"],
        "speed_index": audits["speed-index"]["numericValue"],
        "ttfb": audits["server-response-time"]["numericValue"],
        "observed_lcp": items["observedLargestContentfulPaint"],
        "simulated_lcp": items["largestContentfulPaint"],
        "version": raw["lighthouseVersion"],
        "form_factor": raw["configSettings"]["formFactor"],
    }


def _stored_values(lab: dict[str, Any]) -> dict[str, Any]:
    metrics = lab["metrics"]
    return {
        "score": lab["performance_score"],
        **{name: metrics[name]["value"] for name in ("lcp", "cls", "tbt", "fcp", "speed_index")},
        "ttfb": metrics["ttfb"]["value"],
        "observed_lcp": metrics["lcp"]["observed"],
        "simulated_lcp": metrics["lcp"]["simulated"],
        "version": lab["lighthouse_version"],
        "form_factor": lab["form_factor"],
    }


@SLOW
def test_a_real_lighthouse_job_stores_the_reports_values_and_reads_serve_them(
    sqlite_url: str,
    site: tuple[Site, str],
    crux: tuple[FakeCrux, str],
    vitals_env: Path,
) -> None:
    pages, base = site
    fake, crux_base = crux
    url = f"{base}/"
    fake.urls.add(url)
    settings = make_settings(
        sqlite_url, allow_private_networks=True, crux_api_key=KEY, crux_base_url=crux_base
    )
    with api(settings, run_worker=True) as served:
        client = served.client(served.account())
        project = client.post("/v1/projects", json={"name": "first"}).json()["data"]["id"]
        read = f"/v1/projects/{project}/web-vitals"
        assert "web_vitals" in assert_problem(client.get(read), 404)["detail"]
        assert_problem(client.get(f"{read}/history", params={"url": url}), 404)
        assert _jobs(client, project) == []  # the reads started nothing

        body = {"type": "web_vitals", "params": {"urls": [url]}}
        started = client.post(f"/v1/projects/{project}/jobs", json=body)
        assert started.status_code == 202, started.text
        job_id = started.json()["data"]["id"]
        done = _finished(client, job_id)
        assert done["status"] == "completed", done["error"]
        assert pages.hits["/"] >= 2  # both form factors loaded the page
        usage = {q["quota"]: q["used"] for q in client.get("/v1/usage").json()["data"]}
        assert (usage["web_vitals"], usage["web_vitals_month"]) == (2, 2)

        item = client.get(f"/v1/jobs/{job_id}/items").json()["data"][0]
        assert item["status"] == "measured", item
        runs = item["result"]["form_factors"]
        assert set(runs) == {"mobile", "desktop"}
        for factor, run in runs.items():
            [kept] = list(vitals_env.glob(f"job-{job_id}-*-{factor}.json"))
            raw = json.loads(kept.read_text())
            assert _stored_values(run["lab"]) == _report_values(raw)
            # No full-page screenshot taken (nothing reads it): 2.2 -> 0.7 MB a report.
            assert "fullPageScreenshot" not in raw
            assert run["lab"]["lighthouse_version"] == "12.2.3"
            lcp = run["lab"]["metrics"]["lcp"]
            expected = "good" if lcp["value"] <= 2500 else "needs_improvement"
            assert lcp["rating"] == expected or lcp["value"] > 4000
        # Field data beside the lab data: CrUX was asked per form factor, with our key.
        assert sorted(r["formFactor"] for r in fake.requests) == ["DESKTOP", "PHONE"]
        assert {r["key"] for r in fake.requests} == {KEY}
        mobile_field = runs["mobile"]["field"]
        assert mobile_field["collection_period"] == {
            "first_date": "2026-10-30",
            "last_date": "2026-11-26",
        }
        assert mobile_field["metrics"]["lcp"]["p75"] == 3100
        assert mobile_field["metrics"]["lcp"]["rating"] == "needs_improvement"
        assert mobile_field["metrics"]["inp"]["rating"] == "poor"
        assert mobile_field["metrics"]["cls"] == {
            "p75": 0.05,
            "rating": "good",
            "histogram": [
                {"start": 0.0, "end": 0.1, "density": 0.9},
                {"start": 0.1, "end": 0.25, "density": 0.06},
                {"start": 0.25, "end": None, "density": 0.04},
            ],
        }

        latest = client.get(read).json()["data"]
        assert sorted((d["form_factor"], d["url"]) for d in latest) == [
            ("desktop", url),
            ("mobile", url),
        ]
        for entry in latest:
            assert entry["job_id"] == job_id and entry["collected_at"]
            assert entry["data"]["lab"] == runs[entry["form_factor"]]["lab"]
            assert entry["data"]["field"] == runs[entry["form_factor"]]["field"]
        only_mobile = client.get(read, params={"form_factor": "mobile"}).json()["data"]
        assert [d["form_factor"] for d in only_mobile] == ["mobile"]
        history = client.get(f"{read}/history", params={"url": url}).json()
        assert sorted(d["form_factor"] for d in history["data"]) == ["desktop", "mobile"]
        assert history["next_cursor"] is None
        assert_problem(client.get(f"{read}/history", params={"url": f"{base}/other"}), 404)
        assert _jobs(client, project) == [job_id]  # the reads started nothing


@dataclass
class HttpsRun:
    """A completed job (mobile) of an https page of the fetcher's CA, on PostgreSQL, and the
    running API that ran it."""

    client: httpx.Client
    project: int
    job_id: int
    done: dict[str, Any]
    site: TlsSite
    reports: Path  # SEOJOBS_WEB_VITALS_REPORT_DIR
    tempdir: Path  # this process's temporary folders while the module runs


@pytest.fixture(scope="module")
def https_run(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[HttpsRun]:
    """One real Lighthouse run serves two tests: the job path on PostgreSQL (what is stored and
    read) and Chromium's trust in ``SEOJOBS_FETCH_CA_FILE`` (neither depends on the other, and
    a run costs ~6 CPU-s). While the job runs, this process's temporary folders are in one of
    the fixture's own, short enough for Chromium's sockets in a profile under it (a pytest
    ``tmp_path`` is not); only then: the module's other tests share the process."""
    _installed()
    reports = tmp_path_factory.mktemp("reports")
    tempdir = Path(tempfile.mkdtemp(prefix="sj-"))
    fake = TlsSite()
    try:
        with contextlib.ExitStack() as stack:
            url = stack.enter_context(database_of("postgresql", request))
            served = stack.enter_context(fake.running())
            with pytest.MonkeyPatch.context() as patch:
                patch.setenv("SEOJOBS_WEB_VITALS_RESOLVER_RULES", LOOPBACK_ONLY)
                patch.setenv("SEOJOBS_WEB_VITALS_REPORT_DIR", str(reports))
                patch.setattr(tempfile, "tempdir", str(tempdir))
                settings = make_settings(
                    url, allow_private_networks=True, fetch_ca_file=served.ca_file
                )
                running = stack.enter_context(api(settings, run_worker=True))
                client = running.client(running.account())
                project, job_id = _start(client, [f"{served.base}/"], form_factors=["mobile"])
                done = _finished(client, job_id)
            yield HttpsRun(client, project, job_id, done, fake, reports, tempdir)
    finally:
        shutil.rmtree(tempdir, ignore_errors=True)


@SLOW
def test_the_job_path_on_postgresql(https_run: HttpsRun) -> None:
    client, project, job_id = https_run.client, https_run.project, https_run.job_id
    assert https_run.done["status"] == "completed", https_run.done["error"]
    [entry] = client.get(f"/v1/projects/{project}/web-vitals").json()["data"]
    [kept] = list(https_run.reports.glob(f"job-{job_id}-*-mobile.json"))
    assert _stored_values(entry["data"]["lab"]) == _report_values(json.loads(kept.read_text()))
    assert entry["data"]["field"] is None  # no CrUX key: no field data
    history = f"/v1/projects/{project}/web-vitals/history"
    every = client.get(history).json()  # without url: every URL's, newest first
    assert [d["data"] for d in every["data"]] == [entry["data"]]
    assert client.get(history, params={"form_factor": "desktop"}).json()["data"] == []
    assert _jobs(client, project) == [job_id]  # the reads started nothing
    csv = client.get(f"/v1/jobs/{job_id}/items", headers={"Accept": "text/csv"}).text
    header, row = csv.splitlines()[:2]
    assert header.endswith(",mobile_score,desktop_score")
    assert row.endswith(f",{entry['data']['lab']['performance_score']},")  # no desktop run


@SLOW
def test_an_https_page_of_the_fetchers_ca_is_measured(https_run: HttpsRun) -> None:
    """Chromium trusts ``SEOJOBS_FETCH_CA_FILE`` as the fetcher does: an https page whose
    certificate the test CA issued is measured (without that trust, Lighthouse fails it with
    ``ERR_CERT_AUTHORITY_INVALID``), and the job's trusting home is gone when it ends. The
    trust is Chromium's, not the store's: the run is ``https_run``'s (mobile, warm slot)."""
    done = https_run.done
    item = https_run.client.get(f"/v1/jobs/{https_run.job_id}/items").json()["data"][0]
    assert done["status"] == "completed", done["error"]
    assert item["status"] == "measured", item
    lab = item["result"]["form_factors"]["mobile"]["lab"]
    assert lab["performance_score"] is not None and lab["metrics"]["lcp"]["value"] > 0
    assert https_run.site.hits[("https", "/")] >= 1  # Chromium loaded it over https
    # The trusting home and the slot's scratch removed, and no Lighthouse or Chromium left
    # behind, once the job has ended (its worker still runs: the job cleans up, not shutdown).
    wait_until(lambda: list(https_run.tempdir.iterdir()) == [], timeout=30)
    wait_until(lambda: marked(str(os.getpid())) == {}, timeout=30)


@SLOW
def test_a_run_past_its_timeout_is_killed_with_its_chromium(
    sqlite_url: str,
    site: tuple[Site, str],
    vitals_env: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pages, base = site
    monkeypatch.setenv("SEOJOBS_WEB_VITALS_RUN_TIMEOUT", "25")
    settings = make_settings(sqlite_url, allow_private_networks=True)
    with api(settings, run_worker=True) as served:
        client = served.client(served.account())
        _, job_id = _start(client, [f"{base}/hang"], form_factors=["mobile"])
        wait_until(lambda: pages.hits.get("/hang"), timeout=60)  # Chromium is loading it
        assert _chromium_running(str(os.getpid())), marked(str(os.getpid()))
        done = _finished(client, job_id)
        assert done["status"] == "failed"
        assert done["error"]["code"] == "lighthouse_timeout", done["error"]
        item = client.get(f"/v1/jobs/{job_id}/items").json()["data"][0]
        assert item["error"]["code"] == "lighthouse_timeout"
        assert marked(str(os.getpid())) == {}  # nothing of the run is left


@SLOW
def test_a_cancelled_jobs_run_is_killed_with_its_chromium(
    sqlite_url: str, site: tuple[Site, str], vitals_env: Path
) -> None:
    pages, base = site
    settings = make_settings(sqlite_url, allow_private_networks=True)
    with api(settings, run_worker=True) as served:
        client = served.client(served.account())
        _, job_id = _start(client, [f"{base}/hang"], form_factors=["mobile"])
        wait_until(lambda: pages.hits.get("/hang"), timeout=60)
        assert _chromium_running(str(os.getpid())), marked(str(os.getpid()))
        assert client.post(f"/v1/jobs/{job_id}/cancel").status_code == 200
        wait_until(lambda: not marked(str(os.getpid())), timeout=60)
        assert client.get(f"/v1/jobs/{job_id}").json()["data"]["error"]["code"] == "cancelled"


@SLOW
@pytest.mark.parametrize("warm", ["true", "false"])
def test_a_sigkilled_workers_lighthouse_and_chromium_die_with_it(
    sqlite_url: str, site: tuple[Site, str], tmp_path: Path, warm: str
) -> None:
    """Warm (a long-lived Node slot keeping its Chromium) and cold (the CLI per run) alike:
    no Node, Lighthouse or Chromium process of the worker's is left."""
    _installed()
    pages, base = site
    settings = make_settings(sqlite_url, allow_private_networks=True)
    procs = Procs(sqlite_url, tmp_path)
    with api(settings) as served:  # no worker in this process
        client = served.client(served.account())
        _start(client, [f"{base}/hang"], form_factors=["mobile"])
        worker = procs.worker(
            SEOJOBS_ALLOW_PRIVATE_NETWORKS="true",
            SEOJOBS_WEB_VITALS_RESOLVER_RULES=LOOPBACK_ONLY,
            SEOJOBS_WEB_VITALS_RUN_TIMEOUT="600",
            SEOJOBS_WEB_VITALS_WARM=warm,
        )
        try:
            wait_until(lambda: pages.hits.get("/hang"), timeout=90)
            prefix = str(worker.pid)
            assert _chromium_running(prefix), (marked(prefix), procs.exits())
            running = marked(prefix).values()
            assert any("lighthouse" in cmd for cmd in running)
            assert any("lighthouse_worker.mjs" in cmd for cmd in running) == (warm == "true")
            os.kill(worker.pid, signal.SIGKILL)
            worker.wait(timeout=30)
            wait_until(lambda: not marked(prefix), timeout=60)  # the reaper's sweep
        finally:
            procs.stop_all()


def test_coded_failures_and_quotas_need_no_browser_run(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _installed()
    monkeypatch.setenv("SEOJOBS_WEB_VITALS_RESOLVER_RULES", LOOPBACK_ONLY)
    # The fetcher's address policy refuses loopback (allow_private_networks is off): the URL
    # is refused before any Chromium starts (nothing listens there either).
    settings = make_settings(sqlite_url, quota_web_vitals_daily=3)
    with api(settings, run_worker=True) as served:
        client = served.client(served.account())
        project, job_id = _start(client, ["http://127.0.0.1:9/"], form_factors=["mobile"])
        done = _finished(client, job_id)
        assert (done["status"], done["error"]["code"]) == ("failed", "ssrf_refused"), done
        assert marked(str(os.getpid())) == {}
        # Charged per URL and form factor: 1 used, 4 more would pass the limit of 3.
        _, over = _start(client, ["http://a.example/", "http://b.example/"])
        job = client.get(f"/v1/jobs/{over}").json()["data"]
        assert (job["status"], job["error"]["code"]) == ("failed", "quota_exceeded")
        assert "resets at" in job["error"]["message"]
        usage = {q["quota"]: q for q in client.get("/v1/usage").json()["data"]}
        assert (usage["web_vitals"]["used"], usage["web_vitals"]["limit"]) == (1, 3)
        assert usage["web_vitals_month"]["used"] == 1
        assert_problem(client.get(f"/v1/projects/{project}/web-vitals"), 404)
    monkeypatch.setenv("SEOJOBS_WEB_VITALS_LIGHTHOUSE_PATH", str(tmp_path / "none"))
    with api(make_settings(sqlite_url), run_worker=True) as served:
        client = served.client(served.account("bob"))
        _, job_id = _start(client, ["http://a.example/"], form_factors=["desktop"])
        done = _finished(client, job_id)
        assert done["error"]["code"] == "lighthouse_missing", done
        assert "npm ci" in done["error"]["message"]


def test_the_crux_client_speaks_the_wire_format(crux: tuple[FakeCrux, str]) -> None:
    fake, base = crux
    fake.urls.add("https://example.com/")
    settings = make_settings("sqlite://", crux_api_key=KEY, crux_base_url=base)

    async def ask() -> tuple[Any, Any, Any]:
        client = CruxClient(settings)
        try:
            found = await client.record("https://example.com/", "desktop")
            missing = await client.record("https://example.com/none", "mobile")
        finally:
            await client.aclose()
        refused = CruxClient(settings.model_copy(update={"crux_api_key": "wrong"}))
        try:
            await refused.record("https://example.com/", "mobile")
        except ProviderError as exc:
            return found, missing, exc
        finally:
            await refused.aclose()
        raise AssertionError("a wrong key was accepted")

    found, missing, error = asyncio.run(ask())
    assert found["metrics"]["lcp"]["p75"] == 1200
    assert found["metrics"]["cls"]["p75"] == 0.0
    assert "inp" in found["metrics"] and "ttfb" not in found["metrics"]
    assert missing is None  # 404 NOT_FOUND: CrUX has no data for that URL
    assert error.code == "provider_rejected" and "API key not valid" in error.message
    assert fake.requests[0] == {
        "key": KEY,
        "url": "https://example.com/",
        "formFactor": "DESKTOP",
        "metrics": [
            "largest_contentful_paint",
            "cumulative_layout_shift",
            "interaction_to_next_paint",
            "first_contentful_paint",
            "experimental_time_to_first_byte",
        ],
    }


# The cold path's CLI arguments as Lighthouse's own CLI parses them (cli/bin.js: getFlags).
_CLI_FLAGS = """
import path from 'node:path';
import {pathToFileURL} from 'node:url';
const [modules, args] = JSON.parse(process.argv[2]);
const load = (file) => import(pathToFileURL(path.join(modules, file)).href);
const {getFlags} = await load('lighthouse/cli/cli-flags.js');
process.stdout.write(JSON.stringify(getFlags(args)));
"""


@pytest.mark.parametrize("form_factor", ["mobile", "desktop"])
def test_the_cli_run_and_the_warm_slot_ask_lighthouse_for_the_same_settings(
    form_factor: str, tmp_path: Path
) -> None:
    """A run without warm slots (the CLI, ``runner.command``) and a warm slot's request
    (``runner.request``, Lighthouse's flags as an object) set the same Lighthouse flags: the
    categories, no full-page screenshot, the load wait and the throttling."""
    from seojobs.browsers.slots import Browser
    from seojobs.kinds.web_vitals import runner

    _installed()
    browser = Browser(
        lighthouse=WebVitalsSettings().lighthouse_path,
        chrome="/usr/bin/chromium",
        timeout=60,
        max_wait=30,
        throttling="devtools",
    )
    out = str(tmp_path / "report.json")
    cli = runner.command(browser, "http://127.0.0.1:9/", form_factor, LOOPBACK_ONLY, out)
    warm = runner.request(browser, "http://127.0.0.1:9/", form_factor, LOOPBACK_ONLY, out)
    modules = str(Path(__file__).resolve().parents[2] / "lighthouse" / "node_modules")
    script = tmp_path / "flags.mjs"
    script.write_text(_CLI_FLAGS, encoding="utf-8")
    parsed = json.loads(
        subprocess.run(
            ["node", str(script), json.dumps([modules, cli[1:]])],
            capture_output=True,
            check=True,
            timeout=60,
        ).stdout
    )
    for name, value in warm["flags"].items():
        assert parsed.get(name) == value, (name, parsed.get(name), value)
    assert warm["flags"]["disableFullPageScreenshot"] is True
    assert parsed.get("preset") == ("desktop" if form_factor == "desktop" else None)
    assert warm["form_factor"] == form_factor
