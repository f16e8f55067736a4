"""Shared helpers for the HTTP API tests: a real app on a loopback socket, users with keys,
fake providers, and assertions on problem+json and rate-limit fields.

The app is served by uvicorn with its lifespan ON (unlike ``tests.fakes.server.serve``), so
``create_app``'s startup and shutdown run as in production: migrations, and the in-process
worker when ``run_worker=True``. Nothing of ours is mocked; clients talk httpx to the socket.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import faulthandler
import itertools
import json
import os
import re
import socket
import sys
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from fastapi.routing import APIRoute, iter_route_contexts
from sqlalchemy import func, select

from seojobs.api import create_app
from seojobs.api.protocol import uvicorn_config
from seojobs.records import UserRecord
from seojobs.services import Services
from seojobs.services.errors import Conflict
from seojobs.settings import Settings
from seojobs.store import tables
from tests.conftest import IN_CI, database_of, make_settings
from tests.fakes.indexnow import FakeIndexNow
from tests.fakes.serp import FakeSerper
from tests.fakes.server import ThreadServer, serve
from tests.fakes.site import FixtureSite, running_site
from tests.waiting import wait_until

# One TLS context for every test client (the same one httpx would build): without it, each
# httpx.Client and HTTPTransport builds its own, loading the CA bundle again (10 to 25 ms of
# CPU), and the suite makes thousands of clients of plain-HTTP loopback servers.
TLS = httpx.create_ssl_context()

PROBLEM_JSON = "application/problem+json"
V1 = "/api/v1"
TERMINAL = {"completed", "failed"}
INDEXNOW_KEY = "0123456789abcdef"
SERPER_KEY = "serper-key"

# Seed 000's status fields, plus the ones the design adds (created_at, title, error,
# duplicates_removed).
SUBMIT_FIELDS = {
    "job_id",
    "status",
    "total_urls",
    "submitted_urls",
    "successful_count",
    "failed_count",
    "progress_percent",
    "success_percent",
    "completed_at",
    "scheduled_check_days",
    "scheduled_check_status",
    "scheduled_check_at",
    "scheduled_check_run_id",
    "created_at",
    "title",
    "error",
    "duplicates_removed",
}
CHECK_FIELDS = {
    "job_id",
    "status",
    "total_urls",
    "checked_urls",
    "indexed_count",
    "not_indexed_count",
    "failed_count",
    "progress_percent",
    "completed_at",
    "created_at",
    "title",
    "error",
    "duplicates_removed",
}
FIELDS = {"index-submit": SUBMIT_FIELDS, "index-check": CHECK_FIELDS}

_RATELIMIT = re.compile(r'^"user";r=(?P<r>\d+);t=(?P<t>\d+)$')
_POLICY = re.compile(r'^"user";q=(?P<q>\d+);w=(?P<w>\d+)$')


# -- serving ------------------------------------------------------------------------------------


@contextlib.contextmanager
def running(app: FastAPI) -> Iterator[str]:
    """Serve ``app`` on 127.0.0.1 with its lifespan; yield the base URL; shut it down after.
    While it runs, :func:`server_loop` gives the event loop that serves it."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    # As ``seojobs serve`` configures uvicorn, with the app's settings (its request limits).
    config = uvicorn_config(
        app, app.state.settings, log_level="warning", lifespan="on", access_log=False
    )
    server = ThreadServer(config)
    failure: list[BaseException] = []

    async def serve() -> None:
        _LOOPS[app] = asyncio.get_running_loop()
        await server.serve(sockets=[sock])

    def run() -> None:
        try:
            asyncio.run(serve())
        except BaseException as exc:  # reported to the test below
            failure.append(exc)
        finally:
            _LOOPS.pop(app, None)

    thread = threading.Thread(target=run, name="seojobs-api", daemon=True)
    thread.start()
    while not server.started:
        if not thread.is_alive():
            raise RuntimeError(f"the API failed to start: {failure!r}")
        threading.Event().wait(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()
        thread.join(timeout=30)
        sock.close()
        if thread.is_alive():
            _dump_hang(_LOOPS.get(app))
            raise AssertionError("the API server did not shut down within 30 s (stacks: stderr)")
        if failure:
            raise failure[0]


def _dump_hang(loop: asyncio.AbstractEventLoop | None) -> None:
    """Every thread's stack and the loop's pending tasks, for a shutdown that hangs (seen once
    in CI, not reproduced: the next one should say where it waits)."""
    faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
    if loop is not None:
        for task in asyncio.all_tasks(loop):
            print(f"pending: {task!r}", file=sys.stderr)
            task.print_stack(limit=8, file=sys.stderr)


_LOOPS: dict[FastAPI, asyncio.AbstractEventLoop] = {}  # of the apps ``running`` serves
_ADDRESSES = itertools.count(2)


def loopback_address() -> str:
    """A loopback address no other caller of this process got (127.0.0.2, 127.0.0.3, ...; the
    whole of 127.0.0.0/8 is loopback): a client's own source address, so that what the API
    counts per client address (failed authentications) is counted per test."""
    n = next(_ADDRESSES)
    while n % 256 in (0, 255):
        n = next(_ADDRESSES)
    return f"127.{n >> 16 & 255}.{n >> 8 & 255}.{n & 255}"


def server_loop(app: FastAPI) -> asyncio.AbstractEventLoop:
    """The event loop serving ``app`` (``running``), where its requests and lifespan run."""
    return _LOOPS[app]


class InProcess(httpx.BaseTransport):
    """A sync transport that hands each request to the running app on its own event loop as
    an ASGI call, without the socket and HTTP parsing (uvicorn, h11) in between: for route
    walks of thousands of requests, which test what the app answers, not the HTTP layer (that
    is ``test_api_protocol``'s). About 2.4 times less CPU per request. The app, its
    middleware, lifespan, worker and database are the same; a request's client is 127.0.0.1,
    as over the socket (or the ``Api``'s own address), and an exception in the app answers
    500, as uvicorn does."""

    def __init__(self, app: FastAPI, host: str = "127.0.0.1") -> None:
        self._app = app
        self._asgi = httpx.ASGITransport(app=app, raise_app_exceptions=False, client=(host, 50000))

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        async def call() -> tuple[int, httpx.Headers, bytes]:
            answer = await self._asgi.handle_async_request(request)
            raw = b"".join([chunk async for chunk in answer.aiter_raw()])  # still encoded
            return answer.status_code, answer.headers, raw

        future = asyncio.run_coroutine_threadsafe(call(), server_loop(self._app))
        status, headers, body = future.result(timeout=60.0)
        return httpx.Response(status, headers=headers, content=body, request=request)


@dataclass
class Account:
    user: UserRecord
    key: str

    def headers(self, form: str = "raw") -> dict[str, str]:
        return auth_headers(self.key, form)


def auth_headers(key: str, form: str = "raw") -> dict[str, str]:
    """The three ways to present a key: seed 000's raw header, Bearer, seed 001's X-API-Key."""
    if form == "raw":
        return {"Authorization": key}
    if form == "bearer":
        return {"Authorization": f"Bearer {key}"}
    if form == "x-api-key":
        return {"X-API-Key": key}
    raise ValueError(form)


@dataclass
class Api:
    """A running app and a way to make users and clients for it."""

    base: str
    app: FastAPI
    settings: Settings
    clients: list[httpx.Client] = field(default_factory=list)
    unnamed: int = 0
    shared: bool = False  # by the tests of a module, each as its own users
    source: str | None = None  # the clients' own loopback address (``own``); else 127.0.0.1

    def own(self) -> Api:
        """This running app for one test of a module that shares it: the test's own users
        (``account``) and clients, from a loopback address of its own."""
        return dataclasses.replace(self, clients=[], unnamed=0, source=loopback_address())

    @property
    def services(self) -> Services:
        found: Services = self.app.state.services
        return found

    def account(self, name: str | None = None, rate_limit: str | None = None) -> Account:
        """A new user; unnamed ones are alice, then alice-2, alice-3... (names are unique).
        On a ``shared`` server, a name another test took gets the next free suffix."""
        if name is None:
            self.unnamed += 1
            name = "alice" if self.unnamed == 1 else f"alice-{self.unnamed}"
        given, again = name, 1
        while True:
            try:
                created = self.services.accounts.create_user(name, rate_limit=rate_limit)
            except Conflict:
                if not self.shared:
                    raise
                again += 1
                name = f"{given}-{again}"
            else:
                break
        return Account(created.user, created.api_key)

    def client(
        self, account: Account | None = None, form: str = "raw", *, in_process: bool = False
    ) -> httpx.Client:
        """A client of the running app: over its socket, or ``in_process`` (:class:`InProcess`,
        for route walks)."""
        headers = {"Accept": "application/json"}
        if account is not None:
            headers |= account.headers(form)
        transport: httpx.BaseTransport | None = None
        if in_process:
            transport = InProcess(self.app, self.source or "127.0.0.1")
        elif self.source is not None:
            transport = httpx.HTTPTransport(local_address=self.source, verify=TLS)
        made = httpx.Client(
            base_url=self.base, headers=headers, timeout=60.0, transport=transport, verify=TLS
        )
        self.clients.append(made)
        return made

    def close(self) -> None:
        for made in self.clients:
            made.close()


@contextlib.contextmanager
def api(settings: Settings, *, run_worker: bool = False) -> Iterator[Api]:
    app = create_app(settings, run_worker=run_worker)
    with running(app) as base:
        made = Api(base, app, settings)
        try:
            yield made
        finally:
            made.close()


@contextlib.contextmanager
def shared_api(
    store: str,
    request: pytest.FixtureRequest,
    *,
    run_worker: bool = False,
    settings_for: Callable[..., Settings] = make_settings,
    **overrides: Any,
) -> Iterator[Api]:
    """One app on a new database of ``store`` with these settings (``settings_for(url,
    **overrides)``: a fake's own, say) and its worker when ``run_worker``, for a module-scoped
    fixture whose tests each take :func:`owned` of it (``shared_idle`` with settings)."""
    with (
        database_of(store, request) as url,
        api(settings_for(url, **overrides), run_worker=run_worker) as running,
    ):
        running.shared = True
        yield running


def owned(shared: Api) -> Iterator[Api]:
    """For a function-scoped fixture: ``shared`` as one test's own (``Api.own()``), its
    clients closed after the test."""
    mine = shared.own()
    try:
        yield mine
    finally:
        mine.close()


@pytest.fixture(name="idle")
def shared_idle_per_test(own_idle: Api) -> Api:
    """``idle`` for a module that imports this: one app per store for the whole module
    (``shared_idle``), each test with its own users and its own client address. For tests
    that keep to their own users (the API is multi-tenant) and count nothing server-wide."""
    return own_idle


def run_project_job(
    client: httpx.Client, project: int, kind: str, params: dict[str, Any], timeout: float = 60
) -> dict[str, Any]:
    """Start a job of ``kind`` in ``project`` and wait until it has ended; the job's data."""
    answer = client.post(f"/v1/projects/{project}/jobs", json={"type": kind, "params": params})
    assert answer.status_code == 202, answer.text
    job_id = answer.json()["data"]["id"]

    def ended() -> dict[str, Any] | None:
        job: dict[str, Any] = client.get(f"/v1/jobs/{job_id}").json()["data"]
        return job if job["status"] in ("completed", "failed") else None

    return wait_until(ended, timeout=timeout)


# -- fake providers -----------------------------------------------------------------------------


@dataclass
class Providers:
    """Local fakes for every provider the v1 kinds call, and the settings that point at them."""

    indexnow: FakeIndexNow
    serper: FakeSerper
    site: FixtureSite
    site_base: str
    indexnow_endpoint: str

    def settings(self, url: str, **overrides: Any) -> Settings:
        values: dict[str, Any] = {
            "indexnow_key": INDEXNOW_KEY,
            "indexnow_endpoint": self.indexnow_endpoint,
            # Every engine submits through IndexNow, so google submissions run too.
            "submit_providers": {"google": ["indexnow"], "bing": ["indexnow"]},
            "serper_key": SERPER_KEY,
            "serper_base_url": self.serper.base_url,
            "check_providers": {"google": ["serper"]},
            "allow_private_networks": True,  # the fixture site lives on loopback
            "provider_backoff": 0.01,
            "provider_retries": 1,
        }
        values.update(overrides)
        return make_settings(url, **values)


@contextlib.contextmanager
def providers() -> Iterator[Providers]:
    indexnow = FakeIndexNow()
    serper = FakeSerper(key=SERPER_KEY)
    with (
        serve(indexnow.app()) as indexnow_base,
        serve(serper.app) as serper_base,
        running_site() as (site, site_base),
    ):
        serper.base_url = serper_base
        yield Providers(indexnow, serper, site, site_base, indexnow_base + "/indexnow")


# -- assertions ---------------------------------------------------------------------------------


def assert_problem(response: httpx.Response, status: int) -> dict[str, Any]:
    """An RFC 9457 problem document with this status; returns the body."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].split(";")[0].strip() == PROBLEM_JSON
    body: dict[str, Any] = response.json()
    assert body["status"] == status
    assert isinstance(body["title"], str) and body["title"]
    assert isinstance(body.get("type", "about:blank"), str)
    return body


def error_fields(response: httpx.Response) -> list[str]:
    """The ``field`` of each entry of a 422's ``errors`` list."""
    body = assert_problem(response, 422)
    assert isinstance(body.get("errors"), list) and body["errors"], body
    return [str(e["field"]) for e in body["errors"]]


def rate_limit_fields(response: httpx.Response) -> tuple[int, int, int, int]:
    """(q, w, r, t) from ``RateLimit-Policy`` and ``RateLimit``; fails if either is missing."""
    policy = _POLICY.match(response.headers.get("ratelimit-policy", ""))
    current = _RATELIMIT.match(response.headers.get("ratelimit", ""))
    assert policy, f"RateLimit-Policy missing or malformed: {response.headers!r}"
    assert current, f"RateLimit missing or malformed: {response.headers!r}"
    return int(policy["q"]), int(policy["w"]), int(current["r"]), int(current["t"])


def retry_after(response: httpx.Response) -> int:
    value = response.headers.get("retry-after")
    assert value is not None and value.isdigit(), f"Retry-After: {value!r}"
    return int(value)


# -- Redis --------------------------------------------------------------------------------------

REDIS_URL = os.environ.get("SEOJOBS_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")


def redis_or_skip() -> str:
    """The test Redis URL; skips when Redis is unreachable, and FAILS in CI (``CI=true``)."""
    import redis

    client = redis.Redis.from_url(REDIS_URL, socket_connect_timeout=3, socket_timeout=3)
    try:
        client.ping()
    except redis.RedisError as exc:
        message = f"Redis is not reachable at {REDIS_URL}: {exc}"
        if IN_CI:
            pytest.fail(message + " (CI=true: Redis tests must run)", pytrace=False)
        pytest.skip(message)
    finally:
        client.close()
    return REDIS_URL


def key_prefix() -> str:
    """A ``SEOJOBS_RATE_LIMIT_KEY_PREFIX`` of one test's own: user ids restart at 1 in every test
    database, so with a shared prefix a window left by another test would be charged to this
    test's users."""
    return f"seojobs-test-{uuid.uuid4().hex[:12]}"


def forget_rate_limit_keys(url: str, prefix: str) -> None:
    """Delete the limiter's windows under ``prefix`` (keys are ``<prefix>:LIMITER/...``)."""
    import redis

    client = redis.Redis.from_url(url)
    try:
        for key in client.scan_iter(match=f"{prefix}:*"):
            client.delete(key)
    finally:
        client.close()


def when(value: str) -> datetime:
    """An ISO 8601 timestamp that must carry its UTC offset."""
    parsed = datetime.fromisoformat(value)
    assert parsed.tzinfo is not None, f"{value!r} has no UTC offset"
    return parsed


# -- what the app serves and stores -------------------------------------------------------------


def app_routes(app: FastAPI, *, pages: bool = False) -> list[tuple[str, str, APIRoute]]:
    """(method, path, route) of every API route, included routers' too, as the app serves them.
    The dashboard's pages answer HTML, not problem+json: only with ``pages`` are they walked."""
    found = []
    for context in iter_route_contexts(app.routes):
        route = context.original_route
        if not isinstance(route, APIRoute) or not context.path or not context.methods:
            continue
        if pages != (context.path == "/" or context.path.startswith("/dashboard")):
            continue
        found += [(method, context.path, route) for method in sorted(context.methods)]
    return found


def send_json(
    client: httpx.Client, method: str, path: str, body: Any, **kwargs: Any
) -> httpx.Response:
    """Send ``body`` as JSON escaped to ASCII, so that what httpx cannot encode (lone surrogates,
    NaN) reaches the server as the escapes a client would write."""
    headers = {"Content-Type": "application/json"} | kwargs.pop("headers", {})
    content = json.dumps(body).encode()
    return client.request(method, path, content=content, headers=headers, **kwargs)


def stored(app: Api) -> dict[str, int]:
    """Rows per table a request could write to: jobs (and items), projects, schedules, keys."""
    with app.services.db.read() as conn:
        return {
            table.name: conn.execute(select(func.count()).select_from(table)).scalar_one()
            for table in (
                tables.jobs,
                tables.job_items,
                tables.projects,
                tables.schedules,
                tables.idempotency_keys,
            )
        }
