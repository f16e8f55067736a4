"""Real processes (issue 26.3): a request's id on every log line the API writes for it, in
both log formats, and `seojobs worker --metrics-port` serving that worker's own counters."""

from __future__ import annotations

import json

import httpx
import pytest

from tests.conftest import subprocess_env
from tests.e2e.helpers import Spawner, free_port, make_user, open_services, refresh, wait_http_ok
from tests.waiting import wait_until

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("form", ["plain", "json"])
def test_request_id_on_the_request_log_lines(spawn: Spawner, sqlite_url: str, form: str) -> None:
    port = free_port()
    server = spawn(
        "serve",
        "--port",
        str(port),
        "--no-worker",
        env=subprocess_env(sqlite_url, SEOJOBS_LOG_FORMAT=form),
        name="serve",
    )
    base = f"http://127.0.0.1:{port}"
    wait_http_ok(server, f"{base}/healthz")
    answer = httpx.get(f"{base}/v1/projects", headers={"X-Request-ID": "trace-4242"}, timeout=60)
    assert (answer.status_code, answer.headers["x-request-id"]) == (401, "trace-4242")

    def lines() -> list[str]:
        return [line for line in server.output().splitlines() if "/v1/projects" in line]

    [access] = wait_until(lines)  # uvicorn's access line, written as the answer went out
    if form == "json":
        assert json.loads(access)["request_id"] == "trace-4242"
    else:
        assert access.endswith(" request_id=trace-4242")


def test_worker_metrics_port(spawn: Spawner, sqlite_url: str) -> None:
    port = free_port()
    with open_services(sqlite_url) as services:
        user = make_user(services)
        worker = spawn(
            "worker", "--metrics-port", str(port), env=subprocess_env(sqlite_url), name="worker"
        )
        job, _ = services.jobs.create(user, "test_noop", {})
        wait_until(lambda: refresh(services, user, job).state == "completed")

        def scraped() -> str | None:
            try:
                return httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
            except httpx.TransportError:
                return None

        text = wait_until(scraped)
        assert 'seojobs_jobs_claimed_total{type="test_noop"} 1.0' in text
        assert 'seojobs_job_duration_seconds_count{outcome="completed",type="test_noop"} 1.0' in (
            text
        )
        assert "process_cpu_seconds_total" in text
        worker.sigterm()
        assert worker.wait() == 0, worker.output()
