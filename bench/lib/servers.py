"""One uvicorn process per system, started and stopped by ``bench/api.py``, and the two apps.

How it works and what each figure counts: docs/bench/api.md.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI

from bench.lib import REPO, procstat
from seojobs.api.protocol import UVICORN_HTTP, UVICORN_LOOP, UVICORN_PROXY_HEADERS

if TYPE_CHECKING:
    from bench.lib.ours import Seeded

UVICORN_OPTIONS = (
    "--host",
    "127.0.0.1",
    # The protocol and loop seojobs serve uses (seojobs.api.protocol), for both.
    "--loop",
    UVICORN_LOOP,
    "--http",
    UVICORN_HTTP,
    "--proxy-headers" if UVICORN_PROXY_HEADERS else "--no-proxy-headers",
    "--no-access-log",
    "--log-level",
    "warning",
)
START_TIMEOUT = 60.0
STATUS_PATH = "/api/v1/index-check/jobs/"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _clean_env(extra: dict[str, str]) -> dict[str, str]:
    """The caller's environment without any SEOJOBS_* setting, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEOJOBS_")}
    env.update(extra)
    return env


class Server:
    """``uvicorn --factory <factory>`` on a free loopback port, until ``stop()``."""

    def __init__(self, factory: str, ready_path: str, env: dict[str, str], log: Path) -> None:
        self.factory = factory
        self.ready_path = ready_path
        self.env = _clean_env(env)
        self.log = log
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def command(self) -> list[str]:
        return [
            sys.executable,
            "-m",
            "uvicorn",
            "--factory",
            self.factory,
            "--port",
            str(self.port),
            *UVICORN_OPTIONS,
        ]

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def __enter__(self) -> Server:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def start(self) -> None:
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                self.command,
                cwd=REPO,
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.factory} exited at start-up:\n{self.log_tail()}")
            if self._answers():
                return
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"{self.factory} did not answer in {START_TIMEOUT:.0f} s")

    def _answers(self) -> bool:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
        try:
            conn.request("GET", self.ready_path)
            return conn.getresponse().status == 200
        except OSError:
            return False
        finally:
            conn.close()

    def get(self, path: str, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        """One request, for the sanity check before the load."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            conn.request("GET", path, headers=headers)
            response = conn.getresponse()
            return response.status, dict(response.getheaders()), response.read()
        finally:
            conn.close()

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None:
            procstat.stop(proc)

    def log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"


# -- sanity checks before the load ----------------------------------------------------------


def check_bare(server: Server) -> None:
    """The bare endpoint answers its constant."""
    status, _headers, body = server.get(BARE_PATH, {})
    if status != 200 or json.loads(body) != CONSTANT:
        raise RuntimeError(f"bare endpoint answered {status}: {body[:200]!r}")


def check_ours(server: Server, label: str, seeded: Seeded) -> str:
    """One open job, one completed job and one bad key; returns the rate-limit headers seen."""
    auth = {"Authorization": seeded.api_key}
    for job_id, state in ((seeded.first_id, "pending"), (seeded.first_id + 1, "completed")):
        status, headers, body = server.get(f"{STATUS_PATH}{job_id}", auth)
        doc = json.loads(body)
        if status != 200 or doc.get("job_id") != job_id or doc.get("status") != state:
            raise RuntimeError(f"{label}: job {job_id} answered {status}: {body[:200]!r}")
        lower = {k.lower(): v for k, v in headers.items()}
        if state == "pending" and "retry-after" not in lower:
            raise RuntimeError(f"{label}: no Retry-After on an open job")
        if "ratelimit-policy" not in lower:
            raise RuntimeError(f"{label}: no RateLimit-Policy header: the limiter did not run")
    status, _h, _b = server.get(f"{STATUS_PATH}{seeded.first_id}", {"Authorization": "x"})
    if status != 401:
        raise RuntimeError(f"{label}: a wrong key answered {status}, not 401")
    return f"RateLimit-Policy: {lower['ratelimit-policy']}, RateLimit: {lower['ratelimit']}"


def limiter_count(server: Server, seeded: Seeded, limit: int) -> int:
    """Requests the limiter counted in its current window (from the RateLimit header)."""
    _s, headers, _b = server.get(
        f"{STATUS_PATH}{seeded.first_id}", {"Authorization": seeded.api_key}
    )
    lower = {k.lower(): v for k, v in headers.items()}
    remaining = int(lower["ratelimit"].split("r=")[1].split(";")[0])
    return limit - remaining


# -- the two apps (uvicorn --factory bench.lib.servers:ours / :bare) ----------------------------

BARE_PATH = "/const"

CONSTANT: dict[str, Any] = {
    "job_id": 1,
    "status": "pending",
    "title": None,
    "total_urls": 1,
    "failed_count": 0,
    "progress_percent": 0,
    "created_at": "2025-01-01T00:00:00+00:00",
    "completed_at": None,
    "error": None,
    "checked_urls": 0,
    "indexed_count": 0,
    "not_indexed_count": 0,
}


def ours() -> FastAPI:
    from seojobs.api import create_app
    from seojobs.settings import Settings

    return create_app(Settings(), run_worker=False)


def bare() -> FastAPI:
    app = FastAPI()

    @app.get(BARE_PATH)
    async def const() -> dict[str, Any]:
        return CONSTANT

    return app
