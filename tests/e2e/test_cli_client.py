"""The client commands (submit, check, wait, poll, report, jobs) as real processes against a real
`seojobs serve` process, with the providers faked on loopback.

Slow jobs are made by holding the fake IndexNow's answer for a host until the test lets it go,
so "the poller was killed mid-run" and "Ctrl-C while waiting" happen at a known point, not
after a guessed sleep.
"""

from __future__ import annotations

import asyncio
import csv
import io
import json
import os
import pty
import re
import signal
import subprocess
import sys
import threading
import uuid
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from seojobs.client import Client
from seojobs.client.state import Entry, StateFile
from tests.clifork import SEOJOBS, run_console_script, run_forked
from tests.e2e.helpers import (
    PROCESS_TIMEOUT,
    Proc,
    Spawner,
    env_without_seojobs,
    free_port,
    open_services,
    wait_http_ok,
)
from tests.fakes.serp import FakeSerper
from tests.fakes.server import serve
from tests.fakes.site import running_site
from tests.waiting import wait_until

INDEXNOW_KEY = "0123456789abcdef"
SERPER_KEY = "serper-key"
FAST = ("--interval", "0.1")  # poll often: the jobs here take well under a second
SAVED = re.compile(r"saved (index_submit|index_check) job (\d+) \(")
ANSI = "\x1b["
BAR = "\u2501"  # the heavy line Rich draws progress bars with


# -- fakes ------------------------------------------------------------------------------------


class GatedIndexNow:
    """An IndexNow endpoint that answers 200, except that a held host waits until released."""

    def __init__(self) -> None:
        self._held: set[str] = set()
        self._lock = threading.Lock()
        self.posts: list[tuple[str, list[str]]] = []
        self.app = Starlette(routes=[Route("/indexnow", self._post, methods=["POST"])])

    def hold(self, *hosts: str) -> None:
        with self._lock:
            self._held.update(hosts)

    def release(self, *hosts: str) -> None:
        with self._lock:
            self._held.difference_update(hosts or set(self._held))

    def is_held(self, host: str) -> bool:
        with self._lock:
            return host in self._held

    def posts_for(self, host: str) -> int:
        with self._lock:
            return sum(1 for h, _ in self.posts if h == host)

    async def _post(self, request: Request) -> Response:
        body = json.loads(await request.body())
        host = str(body["host"])
        while self.is_held(host):
            await asyncio.sleep(0.02)
        with self._lock:
            self.posts.append((host, list(body["urlList"])))
        return Response(status_code=200)


class GatedProxy:
    """Forwards every request to the server; while closed, requests wait at the door."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.gate = threading.Event()
        self.gate.set()
        self._lock = threading.Lock()
        self.arrived = 0
        methods = ["GET", "POST", "PUT", "PATCH", "DELETE"]
        self.app = Starlette(routes=[Route("/{path:path}", self._forward, methods=methods)])

    def count(self) -> int:
        with self._lock:
            return self.arrived

    async def _forward(self, request: Request) -> Response:
        with self._lock:
            self.arrived += 1
        while not self.gate.is_set():
            await asyncio.sleep(0.02)
        skip = {"host", "content-length"}
        headers = {k: v for k, v in request.headers.items() if k.lower() not in skip}
        async with httpx.AsyncClient(base_url=self.target, timeout=30) as client:
            answer = await client.request(
                request.method,
                request.url.path,
                params=list(request.query_params.multi_items()),
                content=await request.body(),
                headers=headers,
            )
        drop = {"content-length", "content-encoding", "transfer-encoding", "connection"}
        kept = {k: v for k, v in answer.headers.items() if k.lower() not in drop}
        return Response(answer.content, status_code=answer.status_code, headers=kept)


# -- the server and a client per test ---------------------------------------------------------


@dataclass
class Server:
    url: str
    db_url: str
    indexnow: GatedIndexNow
    serper: FakeSerper
    site_base: str


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    workdir = tmp_path_factory.mktemp("serve")
    db_url = f"sqlite:///{workdir / 'server.db'}"
    indexnow = GatedIndexNow()
    serper = FakeSerper(key=SERPER_KEY)
    with (
        serve(indexnow.app) as indexnow_base,
        serve(serper.app) as serper_base,
        running_site() as (_site, site_base),
    ):
        serper.base_url = serper_base
        port = free_port()
        env = env_without_seojobs() | {
            "SEOJOBS_DATABASE_URL": db_url,
            "SEOJOBS_INDEXNOW_KEY": INDEXNOW_KEY,
            "SEOJOBS_INDEXNOW_ENDPOINT": indexnow_base + "/indexnow",
            # yandex gets a provider whose key file is missing: a job that fails.
            "SEOJOBS_SUBMIT_PROVIDERS": json.dumps(
                {"google": ["indexnow"], "bing": ["indexnow"], "yandex": ["google_indexing"]}
            ),
            "SEOJOBS_GOOGLE_CREDENTIALS_FILE": str(workdir / "missing-key.json"),
            "SEOJOBS_SERPER_KEY": SERPER_KEY,
            "SEOJOBS_SERPER_BASE_URL": serper_base,
            "SEOJOBS_CHECK_PROVIDERS": json.dumps({"google": ["serper"]}),
            "SEOJOBS_ALLOW_PRIVATE_NETWORKS": "true",  # checks fetch the loopback fixture site
            "SEOJOBS_PROVIDER_TIMEOUT": "120",  # a held IndexNow answer is not a timeout
            "SEOJOBS_PROVIDER_BACKOFF": "0.01",
            "SEOJOBS_RATE_LIMIT": "6000/minute",
            "SEOJOBS_DAY_SECONDS": "1",  # --checker 1: the follow-up check a second later
            # The poll and maintenance intervals are the defaults (a second): the jobs the
            # tests submit wake the worker, and at 0.1 s the idle server's passes cost more
            # than its work (about 4 % of a core against 1.5 %).
        }
        spawner = Spawner(workdir)
        try:
            proc = spawner("serve", "--port", str(port), env=env, name="serve")
            wait_http_ok(proc, f"http://127.0.0.1:{port}/readyz")
            yield Server(f"http://127.0.0.1:{port}", db_url, indexnow, serper, site_base)
        finally:
            indexnow.release()  # held jobs finish, so the server stops promptly
            spawner.stop_all()


@dataclass
class Cli:
    server: Server
    api_key: str
    workdir: Path
    tag: str = field(default_factory=lambda: uuid.uuid4().hex[:8])

    @property
    def state_path(self) -> Path:
        return self.workdir / "state" / "client.db"

    def host(self, name: str) -> str:
        return f"{name}-{self.tag}.example"

    def urls(self, name: str, n: int = 2) -> list[str]:
        return [f"https://{self.host(name)}/p{i}" for i in range(n)]

    def env(self, **extra: str) -> dict[str, str]:
        env = env_without_seojobs() | {
            "SEOJOBS_URL": self.server.url,
            "SEOJOBS_API_KEY": self.api_key,
            "SEOJOBS_STATE": str(self.state_path),
        }
        env.pop("NO_COLOR", None)
        env.pop("FORCE_COLOR", None)
        return env | extra

    def run(
        self,
        *args: str,
        stdin: str | None = None,
        env: dict[str, str] | None = None,
        console_script: bool = False,
    ) -> subprocess.CompletedProcess[str]:
        """A command to completion, forked from the zygote (tests/clifork.py), or run by the
        installed console script itself."""
        run = run_console_script if console_script else run_forked
        done = run(*args, env=env or self.env(), cwd=self.workdir, stdin=stdin, timeout=90)
        assert "Traceback" not in done.stderr, done.stderr
        return done

    def client(self) -> Client:
        return Client(self.server.url, self.api_key)

    def server_jobs(self, kind: str = "index_submit") -> list[Any]:
        """This user's jobs of a kind, as the server lists them."""
        with self.client() as client:
            return client.jobs(kind, limit=1000)

    def server_job(self, kind: str, job_id: int) -> Any:
        with self.client() as client:
            return client.get(kind, job_id)

    def finished_on_server(self, kind: str, job_id: int) -> Any:
        def check() -> Any:
            job = self.server_job(kind, job_id)
            return job if job.is_terminal else None

        return wait_until(check, timeout=PROCESS_TIMEOUT)

    def entries(self) -> list[Entry]:
        if not self.state_path.exists():
            return []
        with StateFile(self.state_path) as state:
            return state.entries()


@pytest.fixture
def cli(server: Server, tmp_path: Path) -> Iterator[Cli]:
    with open_services(server.db_url) as services:
        created = services.accounts.create_user(f"cli-{uuid.uuid4().hex[:6]}")
    made = Cli(server, created.api_key, tmp_path)
    try:
        yield made
    finally:
        server.indexnow.release()


def saved_in(text: str) -> list[tuple[str, int]]:
    return [(kind, int(job_id)) for kind, job_id in SAVED.findall(text)]


def submit_ok(cli: Cli, *urls: str) -> int:
    done = cli.run("submit", "--engine", "bing", *urls)
    assert done.returncode == 0, done.stderr
    return int(done.stdout.strip())


# -- input ------------------------------------------------------------------------------------


def test_submit_from_arguments_prints_the_job_id_and_records_it(cli: Cli) -> None:
    urls = cli.urls("args", 3)
    done = cli.run("submit", "--engine", "bing", *urls)
    assert done.returncode == 0, done.stderr
    job_id = int(done.stdout)  # stdout is the job id and nothing else
    [job] = cli.server_jobs()
    assert job.job_id == job_id and job.total_urls == 3
    [entry] = cli.entries()
    assert (entry.kind, entry.job_id, entry.state) == ("index_submit", job_id, "open")
    assert entry.request == {"urls": urls, "engine": "bing"}
    assert entry.idempotency_key and entry.server == cli.server.url and entry.created_at > 0


def test_submit_from_a_file_with_comments_and_blank_lines(cli: Cli) -> None:
    urls = cli.urls("file", 2)
    path = cli.workdir / "urls.txt"
    path.write_text(f"# my links\n{urls[0]}\n\n  {urls[1]}  \n", encoding="utf-8")
    done = cli.run("submit", "--engine", "bing", "-f", str(path), "--json")
    assert done.returncode == 0, done.stderr
    body = json.loads(done.stdout)
    assert body["total_urls"] == 2 and body["status"] == "pending"
    assert [j.job_id for j in cli.server_jobs()] == [body["job_id"]]


@pytest.mark.parametrize("how", [["-f", "-"], []], ids=["dash-f-dash", "piped"])
def test_submit_from_stdin(cli: Cli, how: list[str]) -> None:
    urls = cli.urls("stdin", 2)
    done = cli.run("submit", "--engine", "bing", "--json", *how, stdin="\n".join(urls) + "\n")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["total_urls"] == 2
    assert len(cli.server_jobs()) == 1


def test_a_malformed_line_is_reported_with_its_number_and_nothing_is_sent(cli: Cli) -> None:
    good = cli.urls("bad", 2)
    path = cli.workdir / "urls.txt"
    path.write_text(f"{good[0]}\n# fine\nftp://nope.example/x\n{good[1]}\nnot a url\n")
    done = cli.run("submit", "--engine", "bing", "-f", str(path))
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "line 3" in done.stderr and "ftp://nope.example/x" in done.stderr
    assert "line 5" in done.stderr
    assert "line 1:" not in done.stderr and "line 4:" not in done.stderr
    assert done.stdout == ""
    assert cli.server_jobs() == [] and cli.entries() == []


def test_no_urls_at_all_is_a_usage_error(cli: Cli) -> None:
    done = cli.run("check", stdin="")
    assert done.returncode == 2
    assert "no URLs" in done.stderr


# -- waiting, exit codes, --json --------------------------------------------------------------


def test_submit_wait_json_completed_exit_0_one_document_progress_on_stderr(cli: Cli) -> None:
    urls = cli.urls("ok", 3)
    done = cli.run("submit", "--engine", "bing", "--wait", "--json", *FAST, *urls)
    assert done.returncode == 0, done.stderr
    body = json.loads(done.stdout)  # the whole of stdout is one JSON document
    assert body["status"] == "completed" and body["successful_count"] == 3
    assert f"index_submit job {body['job_id']}" in done.stderr  # progress went to stderr
    [entry] = cli.entries()
    assert entry.state == "done" and entry.status == "completed"
    assert entry.result is not None
    assert entry.result["job"]["job_id"] == body["job_id"]
    assert sorted(row["url"] for row in entry.result["report"]) == sorted(urls)
    assert cli.server.indexnow.posts_for(cli.host("ok")) == 1


def test_submit_wait_failed_job_exits_1(cli: Cli) -> None:
    done = cli.run("submit", "--engine", "yandex", "--wait", *FAST, *cli.urls("fail", 1))
    assert done.returncode == 1, (done.stdout, done.stderr)
    job_id = int(done.stdout)  # without --json: the job id on stdout
    assert "provider_auth_failed" in done.stderr and "missing-key.json" in done.stderr
    assert cli.server_job("index_submit", job_id).status == "failed"
    [entry] = cli.entries()
    assert entry.state == "done" and entry.status == "failed"


def test_a_job_no_provider_can_run_is_refused_and_leaves_no_state(cli: Cli) -> None:
    done = cli.run("check", "--engine", "bing", *cli.urls("refused", 1))
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "provider is configured for index checks on engine 'bing'" in done.stderr
    assert "add a provider in SEOJOBS_INDEX_CHECK_PROVIDERS" in done.stderr
    assert cli.entries() == [] and cli.server_jobs("index_check") == []


def test_submit_wait_timeout_exits_3_and_the_job_runs_on(cli: Cli) -> None:
    cli.server.indexnow.hold(cli.host("slow"))
    done = cli.run(
        "submit", "--engine", "bing", "--wait", "--timeout", "1", "--json", *FAST,
        *cli.urls("slow", 1),
    )  # fmt: skip
    assert done.returncode == 3, (done.stdout, done.stderr)
    assert "timed out" in done.stderr
    body = json.loads(done.stdout)  # still exactly one document: the last state seen
    assert body["status"] in ("pending", "processing")
    [entry] = cli.entries()
    assert entry.state == "open" and entry.job_id == body["job_id"]
    cli.server.indexnow.release()
    assert cli.finished_on_server("index_submit", body["job_id"]).status == "completed"


def test_check_wait_then_report_csv_and_json(cli: Cli) -> None:
    base = cli.server.site_base
    cli.server.serper.index("google", f"{base}/ok")
    urls = [f"{base}/ok", f"{base}/plain"]
    done = cli.run("check", "--wait", "--json", *FAST, *urls)
    assert done.returncode == 0, done.stderr
    body = json.loads(done.stdout)
    assert (body["status"], body["indexed_count"], body["not_indexed_count"]) == (
        "completed",
        1,
        1,
    )
    job_id = str(body["job_id"])

    as_json = cli.run("report", job_id, "--format", "json")
    assert as_json.returncode == 0, as_json.stderr
    report = json.loads(as_json.stdout)
    assert report["kind"] == "index_check" and report["job_id"] == body["job_id"]
    verdicts = {row["url"]: row["status"] for row in report["rows"]}
    assert verdicts == {f"{base}/ok": "indexed", f"{base}/plain": "not_indexed"}

    as_csv = cli.run("report", job_id)  # CSV is the default; the kind comes from the state
    assert as_csv.returncode == 0, as_csv.stderr
    rows = list(csv.DictReader(io.StringIO(as_csv.stdout)))
    assert {row["url"]: row["status"] for row in rows} == verdicts


def test_wait_on_several_jobs_from_another_client(cli: Cli) -> None:
    first = submit_ok(cli, *cli.urls("w1", 1))
    second = submit_ok(cli, *cli.urls("w2", 1))
    other_state = cli.workdir / "other.db"  # a client that has never seen these jobs
    env = cli.env(SEOJOBS_STATE=str(other_state))
    done = cli.run("wait", str(first), str(second), "--json", *FAST, env=env)
    assert done.returncode == 0, done.stderr
    bodies = json.loads(done.stdout)
    assert sorted((b["job_id"], b["status"]) for b in bodies) == [
        (first, "completed"),
        (second, "completed"),
    ]
    with StateFile(other_state) as state:
        assert {(e.kind, e.job_id, e.state) for e in state.entries()} == {
            ("index_submit", first, "done"),
            ("index_submit", second, "done"),
        }


def test_wait_for_an_unknown_job_is_a_usage_error(cli: Cli) -> None:
    done = cli.run("wait", "987654321", *FAST)
    assert done.returncode == 2
    assert "no such job" in done.stderr


def test_submit_with_checker_waits_for_the_scheduled_check_and_saves_both(cli: Cli) -> None:
    base = cli.server.site_base
    cli.server.serper.index("google", f"{base}/ok")
    done = cli.run(
        "submit", "--checker", "1", "--wait", "--json", *FAST,  # engine google: checkable
        f"{base}/ok", f"{base}/plain",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    body = json.loads(done.stdout)
    assert body["scheduled_check_status"] == "completed"
    check_id = body["scheduled_check_run_id"]
    entries = {e.kind: e for e in cli.entries()}
    assert entries["index_submit"].state == "done"
    check = entries["index_check"]
    assert (check.job_id, check.follow_up_of, check.state) == (check_id, body["job_id"], "done")
    assert check.result is not None
    assert {r["url"]: r["status"] for r in check.result["report"]} == {
        f"{base}/ok": "indexed",
        f"{base}/plain": "not_indexed",
    }


# -- errors -----------------------------------------------------------------------------------


def test_unreachable_server_is_a_clear_message_exit_4(cli: Cli) -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    done = cli.run("submit", "--url", dead, *cli.urls("dead", 1))
    assert done.returncode == 4, (done.stdout, done.stderr)
    assert f"cannot reach the seojobs server at {dead}" in done.stderr
    assert done.stdout == ""
    assert cli.entries() == []  # the connection was refused: nothing to replay later
    polled = cli.run("poll", "--once", "--url", dead)
    assert polled.returncode == 0  # nothing open for that server: no request needed


def test_poll_against_an_unreachable_server_exits_4(cli: Cli) -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    with StateFile(cli.state_path) as state:  # an open job on a server that is down
        state.track(dead, "index_submit", 1)
    done = cli.run("poll", "--once", "--url", dead)
    assert done.returncode == 4, done.stderr
    assert f"cannot reach the seojobs server at {dead}" in done.stderr
    [entry] = cli.entries()
    assert entry.state == "open"  # kept for the next run


def test_poll_names_jobs_the_server_does_not_know_and_keeps_them(cli: Cli) -> None:
    job_id = submit_ok(cli, *cli.urls("known", 1))
    with StateFile(cli.state_path) as state:  # e.g. pruned, or made with another key
        state.track(cli.server.url, "index_submit", 987654321)
    cli.finished_on_server("index_submit", job_id)
    done = cli.run("poll", "--once", "--json", *FAST)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["missing"] == [{"kind": "index_submit", "job_id": 987654321}]
    assert [s["job_id"] for s in summary["saved"]] == [job_id]
    assert "does not know index_submit job 987654321" in done.stderr
    states = {e.job_id: e.state for e in cli.entries()}
    assert states == {job_id: "done", 987654321: "open"}


def test_a_wrong_api_key_is_a_clear_message(cli: Cli) -> None:
    done = cli.run("submit", *cli.urls("key", 1), env=cli.env(SEOJOBS_API_KEY="wrong"))
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "refused the API key" in done.stderr and "SEOJOBS_API_KEY" in done.stderr
    assert done.stdout == ""
    assert cli.entries() == []  # refused: no submission left to replay
    assert cli.server_jobs() == []


def test_what_the_cli_can_check_is_refused_before_sending_and_said_once(cli: Cli) -> None:
    """No key, a URL without a scheme, an unknown engine: exit 2, one message, nothing sent,
    nothing left in the state file."""
    no_key = cli.env()
    no_key.pop("SEOJOBS_API_KEY")
    cases = [
        (("submit", *cli.urls("nokey", 1)), no_key, "no API key: pass --api-key"),
        (("poll", "--once"), no_key, "no API key"),
        (
            ("submit", *cli.urls("scheme", 1)),
            cli.env(SEOJOBS_URL=cli.server.url.removeprefix("http://")),
            "a URL with http:// or https://",
        ),
        (("submit", "--engine", "altavista", *cli.urls("engine", 1)), None, "--engine: one of"),
    ]
    for args, env, said in cases:
        done = cli.run(*args, env=env)
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        assert said in done.stderr and "refused the API key" not in done.stderr
        assert done.stderr.count("error:") == 1 and "warning" not in done.stderr, done.stderr
        assert done.stdout == ""
    assert cli.entries() == []
    assert cli.server_jobs() == []


def test_a_server_refusal_is_printed_once(cli: Cli) -> None:
    long_title = "x" * 5000  # over the server's title limit: only the server knows it
    done = cli.run("submit", "--title", long_title, *cli.urls("title", 1))
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("title") == 1, done.stderr
    assert cli.entries() == [] and cli.server_jobs() == []


def test_no_color_means_no_escape_sequences(cli: Cli) -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    args = ("submit", "--url", dead, *cli.urls("color", 1))
    # FORCE_COLOR makes Rich colour even a pipe, so the control run shows what NO_COLOR stops.
    coloured = cli.run(*args, env=cli.env(FORCE_COLOR="1"))
    assert coloured.returncode == 4 and ANSI in coloured.stderr
    plain = cli.run(*args, env=cli.env(FORCE_COLOR="1", NO_COLOR="1"))
    assert plain.returncode == 4
    assert "cannot reach" in plain.stderr
    assert ANSI not in plain.stderr and ANSI not in plain.stdout

    listed = cli.run("jobs", env=cli.env(FORCE_COLOR="1", NO_COLOR="1"))
    waited = cli.run(
        "submit", "--engine", "bing", "--wait", *FAST, *cli.urls("color2", 1),
        env=cli.env(FORCE_COLOR="1", NO_COLOR="1"),
    )  # fmt: skip
    for done in (listed, waited):
        assert done.returncode == 0, done.stderr
        assert ANSI not in done.stdout and ANSI not in done.stderr


# -- the state file: crash, cron, locks, Ctrl-C -----------------------------------------------


def test_crash_between_post_and_saving_the_id_is_replayed_to_the_same_job(cli: Cli) -> None:
    urls = cli.urls("crash", 2)
    request = {"urls": urls, "engine": "bing"}
    # What `seojobs submit` does, stopped where a crash would stop it: the intent and its key
    # are saved, the POST is sent and answered, and the process dies before submitted().
    with StateFile(cli.state_path) as state:
        entry = state.intend(cli.server.url, "index_submit", request)
    with cli.client() as client:
        sent = client.submit(urls, engine="bing", idempotency_key=entry.idempotency_key)
    assert [e.state for e in cli.entries()] == ["submitting"]

    done = cli.run("poll", "--once", "--json", *FAST)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["resubmitted"] == [
        {"local_id": entry.local_id, "kind": "index_submit", "job_id": sent.job_id}
    ]
    assert [j.job_id for j in cli.server_jobs()] == [sent.job_id]  # one job, not two
    [row] = cli.entries()
    assert row.job_id == sent.job_id and row.state in ("open", "done")

    cli.finished_on_server("index_submit", sent.job_id)
    again = cli.run("poll", "--once", "--json", *FAST)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["resubmitted"] == []
    [row] = cli.entries()
    assert row.state == "done" and row.result is not None
    assert [j.job_id for j in cli.server_jobs()] == [sent.job_id]


def test_a_submission_that_never_reached_the_server_is_sent_once_by_poll(cli: Cli) -> None:
    urls = cli.urls("unsent", 1)
    with StateFile(cli.state_path) as state:
        entry = state.intend(cli.server.url, "index_submit", {"urls": urls, "engine": "bing"})
    for _ in range(2):
        done = cli.run("poll", "--once", *FAST)
        assert done.returncode == 0, done.stderr
    [job] = cli.server_jobs()
    [row] = cli.entries()
    assert row.local_id == entry.local_id and row.job_id == job.job_id


def test_poller_killed_mid_run_then_cron_finishes_without_resubmitting(
    cli: Cli, spawn: Spawner
) -> None:
    names = [f"k{i}" for i in range(5)]
    held = names[2:]
    cli.server.indexnow.hold(*(cli.host(n) for n in held))
    ids = {name: submit_ok(cli, *cli.urls(name, 2)) for name in names}
    assert len(cli.server_jobs()) == 5

    poller = spawn("poll", *FAST, env=cli.env(), name="poll")  # forked: tests/clifork.py

    def quick_ones_saved() -> bool:
        done = {e.job_id for e in cli.entries() if e.state == "done"}
        return done == {ids["k0"], ids["k1"]}

    wait_until(quick_ones_saved, timeout=PROCESS_TIMEOUT)
    assert poller.alive(), poller.output()  # still waiting on the held jobs
    poller.popen.kill()  # SIGKILL: no cleanup of any kind
    assert poller.wait() == -signal.SIGKILL
    killed_log = poller.output()

    cli.server.indexnow.release()
    runs: list[dict[str, Any]] = []

    def cron_round() -> bool:
        done = cli.run("poll", "--once", "--json", *FAST)
        assert done.returncode == 0, done.stderr
        runs.append(json.loads(done.stdout))
        return all(e.state == "done" for e in cli.entries())

    wait_until(cron_round, timeout=PROCESS_TIMEOUT, interval=0.2)

    saves = saved_in(killed_log) + [(s["kind"], s["job_id"]) for run in runs for s in run["saved"]]
    assert Counter(saves) == Counter(("index_submit", i) for i in ids.values())  # once each
    assert all(run["resubmitted"] == [] for run in runs)
    assert len(cli.server_jobs()) == 5  # nothing resubmitted
    for name in names:
        assert cli.server.indexnow.posts_for(cli.host(name)) == 1
    for entry in cli.entries():
        assert entry.status == "completed" and entry.result is not None
        assert entry.result["job"]["status"] == "completed"
        assert len(entry.result["report"]) == 2


def test_a_second_poll_skips_while_the_first_holds_the_lock(
    cli: Cli, server: Server, spawn: Spawner
) -> None:
    proxy = GatedProxy(server.url)
    with serve(proxy.app) as proxy_url:
        env = cli.env(SEOJOBS_URL=proxy_url)
        ids = []
        for name in ("l1", "l2"):
            done = cli.run("submit", "--engine", "bing", *cli.urls(name, 1), env=env)
            assert done.returncode == 0, done.stderr
            ids.append(int(done.stdout))
        for job_id in ids:
            cli.finished_on_server("index_submit", job_id)

        proxy.gate.clear()
        seen = proxy.count()
        first = spawn("poll", "--once", *FAST, env=env, name="poll-a")
        wait_until(lambda: proxy.count() > seen, timeout=PROCESS_TIMEOUT)  # A holds the lock
        second = cli.run("poll", "--once", "--json", *FAST, env=env)
        assert second.returncode == 0, second.stderr
        summary = json.loads(second.stdout)
        assert summary["skipped"] is True and summary["saved"] == []
        assert "another `seojobs poll` is running" in second.stderr
        assert first.alive()
        assert all(e.state == "open" for e in cli.entries())

        proxy.gate.set()
        assert first.wait() == 0, first.output()
    assert sorted(job_id for _, job_id in saved_in(first.output())) == sorted(ids)
    assert all(e.state == "done" for e in cli.entries())


def test_concurrent_cron_polls_save_each_result_once(cli: Cli) -> None:
    ids = [submit_ok(cli, *cli.urls(f"c{i}", 1)) for i in range(4)]
    for job_id in ids:
        cli.finished_on_server("index_submit", job_id)
    # Four at once, each its own process forked from the zygote (tests/clifork.py).
    with ThreadPoolExecutor(4) as pool:
        runs = list(pool.map(lambda _: cli.run("poll", "--once", "--json", *FAST), range(4)))
    summaries = []
    for done in runs:
        assert done.returncode == 0, done.stderr
        summaries.append(json.loads(done.stdout))
    saves = [s["job_id"] for summary in summaries for s in summary["saved"]]
    assert sorted(saves) == sorted(ids)
    assert all(e.state == "done" for e in cli.entries())


def test_ctrl_c_exits_130_and_leaves_the_job_running(cli: Cli, spawn: Spawner) -> None:
    cli.server.indexnow.hold(cli.host("int"))
    waiting = start(
        spawn,
        *("submit", "--engine", "bing", "--wait", *FAST, *cli.urls("int", 1)),
        env=cli.env(),
        name="submit-wait",
    )

    def job_recorded() -> int | None:
        return next((e.job_id for e in cli.entries() if e.state == "open"), None)

    job_id = wait_until(job_recorded, timeout=PROCESS_TIMEOUT)
    waiting.popen.send_signal(signal.SIGINT)
    assert waiting.wait() == 130, waiting.output()
    output = waiting.output()
    assert "not cancelled" in output and "Traceback" not in output
    assert cli.server_job("index_submit", job_id).status in ("pending", "processing")
    [entry] = cli.entries()
    assert entry.state == "open"  # the state file is intact; `seojobs poll` resumes it

    cli.server.indexnow.release()
    assert cli.finished_on_server("index_submit", job_id).status == "completed"
    done = cli.run("poll", "--once", *FAST)
    assert done.returncode == 0, done.stderr
    [entry] = cli.entries()
    assert entry.state == "done" and entry.status == "completed"


def test_jobs_lists_the_state_file(cli: Cli) -> None:
    job_id = submit_ok(cli, *cli.urls("list", 2))
    elsewhere = cli.env(SEOJOBS_STATE=str(cli.workdir / "empty.db"), SEOJOBS_URL="http://x:1")
    state, url = ("--state", str(cli.state_path)), ("--url", cli.server.url)
    # The flags win over the environment, before the command (global) or after it.
    before = cli.run(*state, *url, "jobs", "--json", env=elsewhere)
    after = cli.run("jobs", *state, *url, "--json", env=elsewhere)
    assert [r["job_id"] for r in json.loads(before.stdout)] == [job_id]
    created = json.loads(before.stdout)[0]["created_at"]  # spelt as the API spells times
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", created), created
    assert [r["job_id"] for r in json.loads(after.stdout)] == [job_id]
    assert json.loads(cli.run("jobs", "--json", env=elsewhere).stdout) == []

    done = cli.run("jobs", "--refresh", "--json")
    assert done.returncode == 0, done.stderr
    [row] = json.loads(done.stdout)
    assert (row["job_id"], row["kind"], row["state"], row["urls"]) == (
        job_id,
        "index_submit",
        "open",
        2,
    )
    table = cli.run("jobs")
    assert table.returncode == 0
    assert table.stdout.splitlines()[0].split()[:4] == ["JOB", "KIND", "STATE", "STATUS"]
    assert str(job_id) in table.stdout


def test_progress_bars_only_on_a_terminal_and_without_colour_under_no_color(cli: Cli) -> None:
    args = [str(SEOJOBS), "submit", "--engine", "bing", "--wait", *FAST]
    piped = cli.run(*args[1:], *cli.urls("pipe", 1))
    assert piped.returncode == 0, piped.stderr
    assert BAR not in piped.stderr and "index_submit job" in piped.stderr  # plain lines

    env = cli.env(NO_COLOR="1", TERM="xterm-256color", COLUMNS="100")
    master, replica = pty.openpty()
    try:
        with subprocess.Popen(
            [*args, *cli.urls("tty", 1)],
            env=env,
            cwd=cli.workdir,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=replica,
        ) as proc:
            os.close(replica)
            replica = -1
            shown = _read_all(master)
            assert proc.wait(timeout=60) == 0, shown
            assert proc.stdout is not None
            job_id = int(proc.stdout.read())
    finally:
        os.close(master)
        if replica >= 0:
            os.close(replica)
    text = shown.decode(errors="replace")
    assert BAR in text and f"index_submit {job_id}" in text  # a live bar on the terminal
    assert not re.search(r"\x1b\[[0-9;]*m", text), "NO_COLOR: no colours or styles"


def _read_all(fd: int) -> bytes:
    """Everything written to a pty until its last writer closes it."""
    out = b""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO: the other side is closed
            return out
        if not chunk:
            return out
        out += chunk


def test_help_documents_exit_codes(cli: Cli) -> None:
    for command in ("submit", "check", "wait", "poll"):
        done = cli.run(command, "--help", env=cli.env(COLUMNS="200"))
        assert done.returncode == 0
        assert "130" in done.stdout and "Examples" in done.stdout


# Python turns SIGINT into KeyboardInterrupt only if SIGINT is not ignored when it starts, and
# a test run started as a background job of a non-interactive shell ignores it (inherited).
# exec keeps a default disposition, so the child gets the SIGINT a terminal would deliver.
_SIGINT_DEFAULT = (
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
    "os.execv(sys.argv[1], sys.argv[1:])"
)


def start(spawner: Spawner, *args: str, env: dict[str, str], name: str) -> Proc:
    """A background `seojobs` process (output to a log), stopped and reaped at teardown: the
    installed script with SIGINT's default disposition, as from a terminal (Ctrl-C's test)."""
    log_path = spawner.workdir / f"{name}-{len(spawner.procs)}.log"
    log_file = log_path.open("wb")
    try:
        popen = subprocess.Popen(
            [sys.executable, "-c", _SIGINT_DEFAULT, str(SEOJOBS), *args],
            env=env,
            cwd=spawner.workdir,
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=subprocess.STDOUT,
        )
    except BaseException:
        log_file.close()
        raise
    proc = Proc(popen, log_path, log_file)
    spawner.procs.append(proc)
    return proc


def test_check_wait_reports_a_job_that_ends_at_once_without_waiting_a_poll_period(
    cli: Cli,
) -> None:
    """Issue 27.6: the wait long-polls first (`Prefer: wait`), so a job that completes at
    once is reported as it completes. The poll hints' schedule alone (no --interval) would
    read it again only after index_check's first interval, 15 s after the first read: the
    bound below (from the job's completion to the command's exit, so that the process's
    start on a loaded machine is not counted) is far from both."""
    base = cli.server.site_base
    cli.server.serper.index("google", f"{base}/ok")
    done = cli.run("check", "--wait", "--json", f"{base}/ok")
    exited = datetime.now(UTC)
    assert done.returncode == 0, done.stderr
    body = json.loads(done.stdout)
    assert body["status"] == "completed"
    job = cli.finished_on_server("index_check", body["job_id"])
    late = (exited - job.completed_at).total_seconds()
    assert late < 10, f"reported {late:.1f} s after the job completed: no long poll"
