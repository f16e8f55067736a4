"""What a `seojobs` process imports to start (issue 24.1): the suite starts hundreds of them, so
a heavy import one of them does not need costs the whole suite minutes of CPU.

The real console script runs with ``PYTHONPROFILEIMPORTTIME=1``: Python itself lists every
module the process imported, from its start to its exit, and nothing in seojobs is told.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from tests.clifork import run_console_script
from tests.conftest import subprocess_env
from tests.e2e.helpers import STARTUP_TIMEOUT, Spawner, free_port, wait_http_ok
from tests.fakes.server import serve
from tests.waiting import wait_until

_IMPORTED = re.compile(r"^import time:\s+\d+ \|\s+\d+ \|\s*(\S+)\s*$", re.MULTILINE)

# A job's or a request's, never a start's: the HTTP framework, Alembic on a database already at
# its head, the parsers and clients that a kind's run or a provider's call loads when it needs
# them (DNS, certificates, the public suffix list, Google's signing), the outbound HTTP stack
# (aiohttp: a page fetch, a provider's call, a webhook delivery), and PostgreSQL's driver in a
# SQLite process.
SERVER_ONLY = ("fastapi", "starlette", "uvicorn", "alembic", "mako")
FIRST_USE = (
    "dns",
    "cryptography",
    "tldextract",
    "requests",
    "filelock",
    "google.auth",
    "psycopg",
    "aiohttp",
    "yarl",
    "seojobs.fetch.http",
)
# A kind's run-time code (its handler's modules, the parsers and adapters they use): loaded at a
# worker's first job of the kind, never at a process's start. The registry loads each kind's
# declaration alone (its params, settings, reads and view).
RUN_TIME = (
    "selectolax",
    "regex",
    "seojobs.kinds.site_audit.crawler",
    "seojobs.kinds.site_audit.checks",
    "seojobs.kinds.tech_stack.lookup",
    "seojobs.kinds.web_vitals.measure",
    "seojobs.kinds.domain_lookup.lookup",
    "seojobs.kinds.rank_check.run",
    "seojobs.kinds.local_rank_check.run",
    "seojobs.kinds.geo_lookup.run",
    "seojobs.kinds.keyword_research.run",
    "seojobs.kinds.backlink_analysis.run",
    "seojobs.kinds.backlink_refresh.run",
)
# The API's rate limiter (and its storage back-ends): loaded by `seojobs serve` alone, and by
# a process whose settings set a limit (the defaults are not parsed again at each start).
API_ONLY = ("limits",)
# What `seojobs migrate` and `seojobs users` have no use for: the kinds' declarations (they
# need the kinds' migration folders alone: seojobs.kinds.migration_dirs) and the services but
# the accounts.
KINDS = (
    "seojobs.kinds.index_submit",
    "seojobs.kinds.index_check",
    "seojobs.kinds.site_audit",
    "seojobs.kinds.domain_lookup",
    "seojobs.kinds.tech_stack",
    "seojobs.kinds.keyword_research",
    "seojobs.kinds.rank_check",
    "seojobs.kinds.web_vitals",
    "seojobs.kinds.backlink_refresh",
    "seojobs.kinds.geo_lookup",
    "seojobs.kinds.backlink_analysis",
    "seojobs.kinds.local_rank_check",
)
OTHER_SERVICES = ("seojobs.services.core", "seojobs.services.jobs", "seojobs.services.schedules")
# A client command talks HTTP: nothing of the server.
SERVER = (
    "sqlalchemy",
    "pydantic_settings",
    "alembic",
    "fastapi",
    "starlette",
    "uvicorn",
    "aiohttp",
    "seojobs.settings",
    "seojobs.store",
    "seojobs.kinds",
    "seojobs.engine",
    "seojobs.services",
    "seojobs.api",
)
# Each client command, run to its end against a server that refuses its key (exit 2: a wrong
# API key), or on an empty state file (exit 0): the whole path from the start through a request
# and its answer to the exit.
CLIENT_RUNS = {
    ("submit", "--engine", "bing", "https://example.com/"): 2,
    ("check", "--wait", "https://example.com/"): 2,
    ("wait", "--type", "index_check", "1"): 2,
    ("report", "1"): 2,
    ("poll",): 0,
    ("jobs",): 0,
}


def imported(output: str) -> set[str]:
    return set(_IMPORTED.findall(output))


def loaded(output: str, packages: tuple[str, ...]) -> list[str]:
    """The packages of ``packages`` that the process imported (any module of theirs)."""
    modules = imported(output)
    assert "seojobs.cli" in modules, f"no import list in the output:\n{output[-3000:]}"
    return [p for p in packages if any(m == p or m.startswith(p + ".") for m in modules)]


def test_a_worker_starts_and_stops_without_the_api_or_a_kinds_run_time(
    spawn: Spawner, sqlite_url: str
) -> None:
    env = subprocess_env(sqlite_url, PYTHONPROFILEIMPORTTIME="1")
    # The installed script itself: what its start imports is what is under test.
    worker = spawn("worker", env=env, name="worker", console_script=True)
    wait_until(lambda: "starting" in worker.output() or not worker.alive(), STARTUP_TIMEOUT)
    worker.sigterm()
    assert worker.wait() == 0, worker.output()[-3000:]
    assert loaded(worker.output(), SERVER_ONLY + FIRST_USE + RUN_TIME + API_ONLY) == []


def test_the_api_starts_without_a_kinds_run_time(spawn: Spawner, sqlite_url: str) -> None:
    """The app mounts every kind's routes and its in-process worker starts: the kinds'
    declarations, none of their run-time code."""
    port = free_port()
    env = subprocess_env(sqlite_url, PYTHONPROFILEIMPORTTIME="1")
    api = spawn("serve", "--port", str(port), env=env, name="serve", console_script=True)
    wait_http_ok(api, f"http://127.0.0.1:{port}/readyz")
    api.sigterm()
    assert api.wait() == 0, api.output()[-3000:]
    assert loaded(api.output(), FIRST_USE + RUN_TIME) == []


def test_users_commands_load_alembic_only_to_migrate(tmp_path: Path) -> None:
    """A fresh database is still migrated (Alembic does that work); once at its heads, the
    next command does not load Alembic to find out there is nothing to do. Neither they nor
    `seojobs migrate` load a kind's declaration or the services they do not use."""
    url = f"sqlite:///{tmp_path / 'new' / 'seojobs.db'}"
    (tmp_path / "new").mkdir()
    env = subprocess_env(url, PYTHONPROFILEIMPORTTIME="1")
    created = run_console_script("users", "create", "startup", env=env, cwd=tmp_path)
    assert created.returncode == 0, created.stderr[-3000:]
    assert loaded(created.stderr, ("alembic",)) == ["alembic"]
    listed = run_console_script("users", "list", env=env, cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr[-3000:]
    assert "startup" in listed.stdout
    assert loaded(listed.stderr, SERVER_ONLY + FIRST_USE + KINDS + OTHER_SERVICES + API_ONLY) == []
    assert loaded(created.stderr, FIRST_USE + KINDS + OTHER_SERVICES + API_ONLY) == []
    migrated = run_console_script("migrate", env=env, cwd=tmp_path)
    assert migrated.returncode == 0, migrated.stderr[-3000:]
    assert (
        loaded(migrated.stderr, SERVER_ONLY + FIRST_USE + KINDS + OTHER_SERVICES + API_ONLY) == []
    )


def test_client_commands_load_no_server_code(tmp_path: Path) -> None:
    env = subprocess_env("sqlite:///unused.db", PYTHONPROFILEIMPORTTIME="1")
    for args in (["submit", "--help"], ["jobs", "--state", str(tmp_path / "s.db")]):
        done = run_console_script(*args, env=env, cwd=tmp_path)
        assert done.returncode == 0, done.stderr[-3000:]
        assert loaded(done.stderr, SERVER) == [], args


async def _refused(request: Request) -> JSONResponse:
    return JSONResponse(
        {"type": "about:blank", "title": "Unauthorized", "status": 401, "detail": "bad key"},
        status_code=401,
        media_type="application/problem+json",
    )


@pytest.fixture
def refusing_server() -> Iterator[str]:
    methods = ["GET", "POST", "PUT", "PATCH", "DELETE"]
    with serve(Starlette(routes=[Route("/{path:path}", _refused, methods=methods)])) as base:
        yield base


def test_client_commands_that_talk_to_a_server_load_no_server_code_nor_rich(
    tmp_path: Path, refusing_server: str
) -> None:
    """Their messages on a stderr that is no terminal are plain lines: Rich (its console, its
    progress bars) is loaded only to draw on a terminal."""
    env = subprocess_env(
        "sqlite:///unused.db",
        PYTHONPROFILEIMPORTTIME="1",
        SEOJOBS_URL=refusing_server,
        SEOJOBS_API_KEY="sj_refused",
        SEOJOBS_STATE=str(tmp_path / "state.db"),
    )
    for forcing in ("FORCE_COLOR", "TTY_COMPATIBLE", "NO_COLOR"):
        env.pop(forcing, None)
    for args, status in CLIENT_RUNS.items():
        done = run_console_script(*args, env=env, cwd=tmp_path)
        assert done.returncode == status, (args, done.stderr[-3000:])
        if status:
            assert "error: the server at" in done.stderr and "refused the API key" in done.stderr
        assert loaded(done.stderr, (*SERVER, "rich")) == [], args
