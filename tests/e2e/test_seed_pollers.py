"""The client pollers printed in the seeds, run as written against a real `seojobs serve`.

Seed 000's poller is embedded verbatim (``SEED_000_POLLER``); the only change is the base URL
in ``API = ...``. It reads the key from ``INDEXCHEX_API_KEY`` as printed, so the test sets that
variable in the poller's environment. The poller runs in its own Python process, with
``requests`` as the seed imports it.

Its first poll is immediate and only then does it sleep (15 s at first), so a job that is
already finished costs one request and no sleep; the back-off loop itself is exercised with the
seed's own ``start`` parameter.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from tests.conftest import ROOT, migrated_sqlite, subprocess_env
from tests.e2e.helpers import Spawner, free_port, open_services, wait_http_ok
from tests.fakes.audit_site import AuditSite
from tests.fakes.serp import FakeSerper
from tests.fakes.server import serve
from tests.fakes.site import FixtureSite, running_site
from tests.waiting import wait_until

# Seed 000, "Python poller with back-off", exactly as printed.
SEED_000_POLLER = '''\
import os, time, requests

API = "https://indexchex.com/api/v1"
H = {"Authorization": os.environ["INDEXCHEX_API_KEY"], "Accept": "application/json"}
TERMINAL = {"completed", "failed"}

def wait_for(kind, job_id, start=15, ceiling=300, deadline_s=86400):
    """kind is 'index-submit' or 'index-check'."""
    delay, waited = start, 0
    while waited < deadline_s:
        r = requests.get(f"{API}/{kind}/jobs/{job_id}", headers=H, timeout=30)
        if r.status_code == 429:
            delay = min(delay * 2, ceiling)
        else:
            r.raise_for_status()
            body = r.json()
            if body["status"] in TERMINAL:
                return body
            delay = min(int(delay * 1.5), ceiling)
        time.sleep(delay)
        waited += delay
    raise TimeoutError(f"{kind} job {job_id} still running after {waited}s")

done = wait_for("index-check", 90314)
print(done["indexed_count"], "of", done["total_urls"], "indexed")
'''
SEED_000_API = 'API = "https://indexchex.com/api/v1"'
SEED_000_EXAMPLE_ID = "90314"

# Seed 001, "The pattern", exactly as printed.
SEED_001_POLLER = """\
import time, requests

BASE = "https://api.surnex.io/v1"
H = {"X-API-Key": "YOUR_KEY"}

def wait_for(url, timeout=3600, interval=15):
    deadline = time.time() + timeout
    while time.time() < deadline:
        job = requests.get(url, headers=H).json()["data"]
        if job["status"] in ("completed", "failed"):
            return job
        time.sleep(interval)
    raise TimeoutError(f"job did not finish within {timeout}s")
"""
SEED_001_BASE = 'BASE = "https://api.surnex.io/v1"'
SEED_001_KEY = 'H = {"X-API-Key": "YOUR_KEY"}'

SEEDS = ROOT.parent / "shared" / "seeds"


def seed_000_definitions(base_url: str) -> str:
    """The poller's imports, settings and ``wait_for``, pointed at ``base_url``."""
    definitions, _example = SEED_000_POLLER.split("\ndone = wait_for(", 1)
    assert SEED_000_API in definitions
    return definitions.replace(SEED_000_API, f'API = "{base_url}/api/v1"') + "\n"


def seed_000_program(base_url: str, job_id: int) -> str:
    """The whole printed program; its example call names our job instead of job 90314."""
    program = (
        seed_000_definitions(base_url)
        + "\ndone = wait_for("
        + SEED_000_POLLER.split("\ndone = wait_for(", 1)[1]
    )
    assert program.count(SEED_000_EXAMPLE_ID) == 1
    return program.replace(SEED_000_EXAMPLE_ID, str(job_id))


def run_python(code: str, env_extra: dict[str, str], timeout: float = 30) -> str:
    env = subprocess_env("sqlite://") | env_extra
    done = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


# -- a real server with fake providers ----------------------------------------------------------


@dataclass
class Running:
    """The module's one ``seojobs serve`` and the fixture site its checks fetch."""

    base: str
    db_url: str
    site: FixtureSite
    site_base: str


class Server:
    """The running server as one test's own: a user of its own (its key, its rate limit, its
    project names), and the fixture site's held pages held again."""

    def __init__(self, running: Running, key: str):
        self.base = running.base
        self.key = key
        self.site = running.site
        self.site_base = running.site_base
        self.client = httpx.Client(base_url=self.base, headers={"Authorization": key}, timeout=30)

    def create(self, kind: str, urls: list[str]) -> int:
        answer = self.client.post(f"/api/v1/{kind}/jobs", json={"urls": urls})
        assert answer.status_code == 202, answer.text
        job_id: int = answer.json()["job_id"]
        return job_id

    def status(self, kind: str, job_id: int) -> dict[str, Any]:
        body: dict[str, Any] = self.client.get(f"/api/v1/{kind}/jobs/{job_id}").json()
        return body

    def finished(self, kind: str, job_id: int) -> dict[str, Any]:
        return wait_until(
            lambda: (b := self.status(kind, job_id))["status"] in ("completed", "failed") and b,
            timeout=20,
            interval=0.2,
        )


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    """One server for the module: the tests keep to their own users (the API is
    multi-tenant), and none is about the process itself."""
    workdir = tmp_path_factory.mktemp("seed-pollers")
    db_url = migrated_sqlite(workdir)
    serper = FakeSerper()
    spawner = Spawner(workdir)
    try:
        with serve(serper.app) as serper_base, running_site() as (site, site_base):
            serper.base_url = serper_base
            serper.index("google", f"{site_base}/ok")
            env = subprocess_env(
                db_url,
                SEOJOBS_SERPER_KEY=serper.key,
                SEOJOBS_SERPER_BASE_URL=serper_base,
                SEOJOBS_CHECK_PROVIDERS=json.dumps({"google": ["serper"]}),
                SEOJOBS_ALLOW_PRIVATE_NETWORKS="true",
                SEOJOBS_PROVIDER_BACKOFF="0.01",
                SEOJOBS_RATE_LIMIT="1000/minute",
            )
            port = free_port()
            proc = spawner("serve", "--port", str(port), env=env, name="serve")
            base = f"http://127.0.0.1:{port}"
            wait_http_ok(proc, f"{base}/readyz")
            yield Running(base, db_url, site, site_base)
    finally:
        spawner.stop_all()


@pytest.fixture
def server(running: Running) -> Iterator[Server]:
    with open_services(running.db_url) as services:
        key = services.accounts.create_user(f"poller-{uuid.uuid4().hex[:12]}").api_key
    running.site.release.clear()  # a test before this one let its held pages go
    mine = Server(running, key)
    try:
        yield mine
    finally:
        mine.client.close()
        running.site.release.set()


# -- seed 000 -----------------------------------------------------------------------------------


def test_embedded_poller_is_the_seeds_text() -> None:
    """Guard against transcription slips: the embedded code appears in the seed as printed."""
    found = sorted(SEEDS.glob("000_*.txt")) if SEEDS.is_dir() else []
    if not found:
        pytest.skip(f"the seeds are not beside the repository ({SEEDS})")
    text = found[0].read_text()
    assert SEED_000_POLLER.strip() in text
    assert SEED_001_POLLER.strip() in sorted(SEEDS.glob("001_*.txt"))[0].read_text()


@pytest.mark.timeout(120)  # a bound for a hung run, not a timing
def test_seed_000_program_returns_a_finished_check(server: Server) -> None:
    urls = [f"{server.site_base}/ok", f"{server.site_base}/plain"]
    job_id = server.create("index-check", urls)
    server.finished("index-check", job_id)  # finished before the poller's first (only) poll
    out = run_python(seed_000_program(server.base, job_id), {"INDEXCHEX_API_KEY": server.key})
    assert out.strip() == "1 of 2 indexed"


@pytest.mark.timeout(120)  # a bound for a hung run, not a timing
def test_seed_000_wait_for_returns_the_finished_job_body(server: Server) -> None:
    job_id = server.create("index-check", [f"{server.site_base}/ok"])
    expected = server.finished("index-check", job_id)
    code = seed_000_definitions(server.base) + (
        f"import json\nprint(json.dumps(wait_for('index-check', {job_id})))\n"
    )
    body = json.loads(run_python(code, {"INDEXCHEX_API_KEY": server.key}))
    assert body == expected
    assert body["status"] == "completed" and body["indexed_count"] == 1


def output_of_a_poller_that_waited(
    server: Server, job_id: int, code: str, env: dict[str, str]
) -> str:
    """Run ``code`` (a poller) while job ``job_id`` is held open; once it has polled twice
    with the job still processing, let the job finish; return the poller's output."""

    def remaining() -> int:
        answer = server.client.get("/api/v1/usage")
        return int(answer.headers["ratelimit"].split("r=")[1].split(";")[0])

    outputs: list[str] = []
    errors: list[BaseException] = []

    def run_poller() -> None:
        try:
            outputs.append(run_python(code, env))
        except BaseException as exc:  # re-raised in the test below
            errors.append(exc)

    poller = threading.Thread(target=run_poller)
    first = remaining()
    probes = 0
    poller.start()
    try:

        def polled_twice() -> bool:
            nonlocal probes
            probes += 1
            # Every request is charged to the same key: what our probes don't explain is polls.
            return first - remaining() - probes >= 2

        wait_until(polled_twice, timeout=20, interval=0.5)
        assert server.status("index-check", job_id)["status"] == "processing"
    finally:
        server.site.release.set()
        poller.join(timeout=30)
    assert not poller.is_alive()
    if errors:
        raise errors[0]
    [out] = outputs
    return out


@pytest.mark.timeout(120)  # a bound for a hung run, not a timing
def test_seed_000_wait_for_polls_an_open_job_until_it_finishes(server: Server) -> None:
    """The back-off loop, with the seed's own ``start`` parameter at 1 s instead of 15 s."""
    job_id = server.create("index-check", [f"{server.site_base}/hold"])
    wait_until(lambda: server.status("index-check", job_id)["status"] == "processing")
    code = seed_000_definitions(server.base) + (
        f"import json\nprint(json.dumps(wait_for('index-check', {job_id}, start=1)))\n"
    )
    out = output_of_a_poller_that_waited(server, job_id, code, {"INDEXCHEX_API_KEY": server.key})
    body = json.loads(out)
    assert body["job_id"] == job_id and body["status"] == "completed"
    assert body["checked_urls"] == 1


# -- seed 001 -----------------------------------------------------------------------------------


def seed_001_program(server: Server, call: str) -> str:
    """The printed poller pointed at ``server`` with its key, then ``call`` printed as JSON."""
    assert SEED_001_BASE in SEED_001_POLLER and SEED_001_KEY in SEED_001_POLLER
    return (
        SEED_001_POLLER.replace(SEED_001_BASE, f'BASE = "{server.base}/v1"').replace(
            SEED_001_KEY, f'H = {{"X-API-Key": "{server.key}"}}'
        )
        + f"import json\nprint(json.dumps({call}))\n"
    )


def start_in_project(server: Server, urls: list[str]) -> int:
    """An index check started the seed 001 way: in a project, through /v1."""
    headers = {"X-API-Key": server.key}
    project = server.client.post("/v1/projects", json={"name": "site"}, headers=headers)
    assert project.status_code == 201, project.text
    answer = server.client.post(
        f"/v1/projects/{project.json()['data']['id']}/jobs",
        json={"type": "index_check", "params": {"urls": urls}},
        headers=headers,
    )
    assert answer.status_code == 202, answer.text
    job_id: int = answer.json()["data"]["id"]
    assert answer.headers["location"] == f"/v1/jobs/{job_id}"
    return job_id


@pytest.mark.timeout(120)  # a bound for a hung run, not a timing
def test_seed_001_poller_returns_a_finished_job(server: Server) -> None:
    job_id = start_in_project(server, [f"{server.site_base}/ok", f"{server.site_base}/plain"])
    server.finished("index-check", job_id)  # finished before the first poll
    job = json.loads(
        run_python(seed_001_program(server, f"wait_for(f'{{BASE}}/jobs/{job_id}')"), {})
    )
    assert job == server.client.get(f"/v1/jobs/{job_id}").json()["data"]
    assert job["id"] == job_id and job["status"] == "completed" and job["type"] == "index_check"
    assert job["counters"] == {"indexed": 1, "not_indexed": 1} and job["error"] is None


@pytest.mark.timeout(120)  # a bound for a hung run, not a timing
def test_seed_001_poller_waits_for_an_open_job(server: Server) -> None:
    """The poll loop, with the seed's own ``interval`` parameter at 1 s instead of 15 s."""
    job_id = start_in_project(server, [f"{server.site_base}/hold"])
    wait_until(lambda: server.status("index-check", job_id)["status"] == "processing")
    code = seed_001_program(server, f"wait_for(f'{{BASE}}/jobs/{job_id}', interval=1)")
    job = json.loads(output_of_a_poller_that_waited(server, job_id, code, {}))
    assert job["id"] == job_id and job["status"] == "completed" and job["items_done"] == 1


@pytest.mark.timeout(60)
def test_seed_001_poller_returns_a_finished_site_audit(server: Server) -> None:
    """Issue 13: the printed poller, unmodified but for its base URL and key, on an audit."""
    headers = {"X-API-Key": server.key}
    project = server.client.post("/v1/projects", json={"name": "site"}, headers=headers)
    with AuditSite(generated=5, sitemaps=False).running() as site:
        answer = server.client.post(
            f"/v1/projects/{project.json()['data']['id']}/audits",
            json={"start_url": f"{site}/g/0", "thresholds": {"slow_response_ms": 600_000}},
            headers=headers,
        )
        assert answer.status_code == 202, answer.text
        job_id = answer.json()["data"]["id"]
        wait_until(
            lambda: (
                server.client.get(f"/v1/jobs/{job_id}").json()["data"]["status"]
                in ("completed", "failed")
            ),
            timeout=40,
        )
    job = json.loads(
        run_python(seed_001_program(server, f"wait_for(f'{{BASE}}/jobs/{job_id}')"), {})
    )
    assert job["id"] == job_id and job["type"] == "site_audit" and job["status"] == "completed"
    assert job["items_done"] == job["items_total"] == 5 and job["error"] is None
