"""`seojobs worker` tells an operator what it does: the database it uses, the provider table,
and one logfmt line per job start, end (outcome, duration, items) and failure (code), and for
a SIGTERM (what was in flight, what was released)."""

from __future__ import annotations

import re

from tests.conftest import subprocess_env
from tests.e2e.helpers import Spawner, count_starts, make_user, open_services, refresh
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
        done, _ = services.create_job(user, "test_items", {"urls": ["https://a.example/1"]})
        failed, _ = services.create_job(user, "test_fail", {"code": "broken_thing"})
        worker = spawn("worker", env=env, name="worker")
        wait_until(lambda: refresh(services, user, failed).state == "failed")
        wait_until(lambda: refresh(services, user, done).state == "completed")
        urls = [f"https://a.example/slow/{i}" for i in range(50)]
        slow, _ = services.create_job(user, "test_items", {"urls": urls, "item_delay": 0.05})
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
