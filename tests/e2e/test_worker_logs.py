"""`seojobs worker` tells an operator what it does: the database it uses, the provider table,
and one logfmt line per job start, end (outcome, duration, items) and failure (code), and for
a SIGTERM (what was in flight, what was released)."""

from __future__ import annotations

import json
import re
from typing import Any

import httpx

from tests.conftest import subprocess_env
from tests.e2e.helpers import (
    Spawner,
    count_starts,
    free_port,
    make_user,
    open_services,
    refresh,
    wait_http_ok,
)
from tests.waiting import wait_until


def events(output: str, name: str) -> list[dict[str, str]]:
    """The fields of each ``event=NAME`` line."""
    found = []
    for line in output.splitlines():
        if f"event={name} " in line:
            text = line[line.index(f"event={name} ") :]
            found.append(dict(re.findall(r'(\w+)=("[^"]*"|\S+)', text)))
    return found


def test_worker_logs_job_events_and_its_shutdown(spawn: Spawner, store_url: str) -> None:
    env = subprocess_env(store_url, SEOJOBS_LEASE_SECONDS="10")
    with open_services(store_url) as services:
        user = make_user(services)
        done, _ = services.jobs.create(user, "test_items", {"urls": ["https://a.example/1"]})
        failed, _ = services.jobs.create(user, "test_fail", {"code": "broken_thing"})
        worker = spawn("worker", env=env, name="worker")
        wait_until(lambda: refresh(services, user, failed).state == "failed")
        wait_until(lambda: refresh(services, user, done).state == "completed")
        urls = [f"https://a.example/slow/{i}" for i in range(50)]
        slow, _ = services.jobs.create(user, "test_items", {"urls": urls, "item_delay": 0.05})
        wait_until(lambda: count_starts(services, slow.id) >= 2)
        worker.sigterm()
        assert worker.wait() == 0, worker.output()
        out = worker.output()

    assert f"database: {store_url.split('://')[0]}" in out
    assert f"{store_url.rsplit('/', 1)[1]}\n" in out  # the database's name, or SQLite file
    # No provider key in this environment: index jobs would be refused, and the table says so.
    assert "providers role=index_checks engine=google uses=- jobs=refused order=" in out
    starts = {e["job"]: e for e in events(out, "job_start")}
    assert set(starts) == {str(done.id), str(failed.id), str(slow.id)}
    assert starts[str(slow.id)]["items"] == "50" and starts[str(slow.id)]["kind"] == "test_items"
    ends = {e["job"]: e for e in events(out, "job_end")}
    assert set(ends) == {str(done.id), str(failed.id)}
    assert ends[str(done.id)]["outcome"] == "completed" and ends[str(done.id)]["items"] == "1"
    assert float(ends[str(done.id)]["duration_s"]) >= 0
    assert (ends[str(failed.id)]["outcome"], ends[str(failed.id)]["code"]) == (
        "failed",
        "broken_thing",
    )
    [released] = events(out, "job_released")
    assert released["job"] == str(slow.id) and 2 <= int(released["items"]) < 50
    [begun] = events(out, "shutdown")
    [ended] = events(out, "shutdown_done")
    assert begun["in_flight"] == ended["in_flight"] == ended["released"] == str(slow.id)
    assert ended["ended"] == "-"


def _json_lines(output: str) -> list[dict[str, Any]]:
    """Every line of ``output`` as the JSON object it must be."""
    records = []
    for line in output.splitlines():
        record = json.loads(line)  # raises on a line that is not JSON
        assert set(record) >= {"ts", "level", "logger", "message"}, line
        assert record["ts"].endswith("+00:00"), line
        records.append(record)
    return records


def test_json_logs_from_the_worker_and_the_api(spawn: Spawner, store_url: str) -> None:
    env = subprocess_env(store_url, SEOJOBS_LOG_FORMAT="json")
    with open_services(store_url) as services:
        user = make_user(services)
        failed, _ = services.jobs.create(user, "test_fail", {"code": "broken_thing"})
        worker = spawn("worker", env=env, name="worker")
        wait_until(lambda: refresh(services, user, failed).state == "failed")
        worker.sigterm()
        assert worker.wait() == 0, worker.output()
    records = _json_lines(worker.output())
    messages = [r["message"] for r in records]
    assert any(m.startswith(f"database: {store_url.split('://')[0]}") for m in messages)
    [end] = [m for m in messages if "event=job_end " in m]
    assert f"job={failed.id} " in end and "code=broken_thing" in end
    assert any(r["logger"] == "seojobs.providers" for r in records)

    port = free_port()
    api = spawn("serve", "--no-worker", "--port", str(port), env=env, name="api")
    wait_http_ok(api, f"http://127.0.0.1:{port}/healthz")
    assert httpx.get(f"http://127.0.0.1:{port}/v1/nothing-here", timeout=60).status_code == 404
    api.sigterm()
    assert api.wait() == 0, api.output()
    records = _json_lines(api.output())
    access = [r["message"] for r in records if r["logger"] == "uvicorn.access"]
    assert any('"GET /healthz HTTP/1.1" 200' in m for m in access), access
    assert any('"GET /v1/nothing-here HTTP/1.1" 404' in m for m in access), access
    assert any(r["logger"] == "uvicorn.error" for r in records)  # startup and shutdown
