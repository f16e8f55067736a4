"""`seojobs serve` as a real process on a SQLite file: health, OpenAPI, in-process worker."""

from __future__ import annotations

import httpx

from tests.conftest import subprocess_env
from tests.e2e.helpers import (
    Proc,
    Spawner,
    free_port,
    log_starts,
    make_user,
    open_services,
    refresh,
    wait_http_ok,
)
from tests.rawhttp import (
    connect,
    drip,
    one_byte_at_a_time,
    only_reply,
    read_reply,
    read_until_closed,
    request_head,
)
from tests.waiting import wait_until


def _serve(
    spawn: Spawner, url: str, *extra: str, console_script: bool = False, **env: str
) -> tuple[str, Proc]:
    port = free_port()
    proc = spawn(
        "serve",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        *extra,
        env=subprocess_env(url, **env),
        name="serve",
        console_script=console_script,
    )
    base = f"http://127.0.0.1:{port}"
    wait_http_ok(proc, f"{base}/healthz")
    return base, proc


def test_serve_health_and_openapi(spawn: Spawner, sqlite_url: str) -> None:
    # The installed console script (the other tests' servers are forked: tests/clifork.py).
    base, _proc = _serve(spawn, sqlite_url, console_script=True)

    health = httpx.get(f"{base}/healthz", timeout=60)
    assert health.status_code == 200
    assert health.json() == {"status": "ok"}

    ready = httpx.get(f"{base}/readyz", timeout=60)
    assert ready.status_code == 200
    assert ready.json()["status"] == "ready"

    openapi = httpx.get(f"{base}/openapi.json", timeout=60)
    assert openapi.status_code == 200
    paths = openapi.json()["paths"]
    assert "/healthz" in paths
    assert "/readyz" in paths


def test_serve_runs_jobs_in_process(spawn: Spawner, sqlite_url: str) -> None:
    base, proc = _serve(spawn, sqlite_url)
    wait_http_ok(proc, f"{base}/readyz")

    with open_services(sqlite_url) as services:
        user = make_user(services)
        noop, _ = services.jobs.create(user, "test_noop", {})
        items, _ = services.jobs.create(user, "test_items", {"urls": ["https://example.com/a"]})

        wait_until(lambda: refresh(services, user, noop).state == "completed")
        wait_until(lambda: refresh(services, user, items).state == "completed")
        assert refresh(services, user, items).items_done == 1
        # The server process itself ran the item: its worker is in-process.
        assert log_starts(services, items.id) == [("https://example.com/a", proc.pid)]


def test_serve_no_worker_leaves_jobs_for_a_worker_process(spawn: Spawner, sqlite_url: str) -> None:
    base, server = _serve(spawn, sqlite_url, "--no-worker")
    wait_http_ok(server, f"{base}/readyz")

    with open_services(sqlite_url) as services:
        user = make_user(services)
        job, _ = services.jobs.create(user, "test_items", {"urls": ["https://example.com/b"]})
        # The server keeps answering while the job sits there.
        assert httpx.get(f"{base}/readyz", timeout=60).status_code == 200
        assert refresh(services, user, job).state == "pending"
        assert log_starts(services, job.id) == []

        worker = spawn("worker", env=subprocess_env(sqlite_url), name="worker")
        wait_until(lambda: refresh(services, user, job).state == "completed")
        # The job was waiting for a worker: the separate worker process ran it, not the server.
        assert log_starts(services, job.id) == [("https://example.com/b", worker.pid)]
        assert server.alive()

        worker.sigterm()
        assert worker.wait() == 0, worker.output()


def test_serve_exits_cleanly_on_sigterm(spawn: Spawner, sqlite_url: str) -> None:
    base, proc = _serve(spawn, sqlite_url, console_script=True)
    wait_http_ok(proc, f"{base}/readyz")
    proc.sigterm()
    returncode = proc.wait()
    output = proc.output()
    # Graceful: the lifespan (which stops the in-process worker) ran to its end.
    assert "Application shutdown complete" in output
    assert returncode == 0, output


def test_serve_refuses_slow_and_oversized_requests(spawn: Spawner, sqlite_url: str) -> None:
    """The request limits are seojobs serve's, set from the environment."""
    base, proc = _serve(spawn, sqlite_url, SEOJOBS_HEADER_TIMEOUT="1", SEOJOBS_BODY_TIMEOUT="1")
    slow_head = b"GET /healthz HTTP/1.1\r\nX-Slow: " + b"a" * 300
    with connect(base) as sock:
        answer = drip(sock, one_byte_at_a_time(slow_head), 0.1)
    assert answer is not None and only_reply(answer).status == 408

    # The default limit (32 KiB) for 1 MB and 8 MB of header.
    for size in (1_000_000, 8_000_000):
        with connect(base) as sock:
            sock.sendall(request_head("GET", "/healthz", "X-Big: " + "a" * size))
            assert only_reply(read_until_closed(sock)).status == 431

    with connect(base) as sock:
        sock.sendall(request_head("POST", "/api/v1/index-check/jobs", "Content-Length: 100"))
        assert only_reply(read_until_closed(sock)).status == 408

    with connect(base) as sock:
        sock.sendall(request_head("GET", "/healthz"))
        assert read_reply(sock).status == 200
    assert proc.alive()
    assert "408 header_timeout" in proc.output()
