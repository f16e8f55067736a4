"""`seojobs submit --type TYPE --param KEY=VALUE … [--project P]` and `seojobs wait` on jobs of
any type, as real processes against a real `seojobs serve` process (SQLite) that loads the
plug-in test kinds, IndexNow faked on loopback."""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from seojobs.client import Client, ProjectJob
from seojobs.client.state import Entry, StateFile
from seojobs.store import migrate
from seojobs.store.db import Database
from tests.clifork import run_console_script, run_forked
from tests.conftest import subprocess_env
from tests.e2e.helpers import (
    Spawner,
    env_without_seojobs,
    free_port,
    open_services,
    wait_http_ok,
)
from tests.fakes.indexnow import FakeIndexNow
from tests.fakes.server import serve
from tests.kinds import log_metadata

INDEXNOW_KEY = "0123456789abcdef"
FAST = ("--interval", "0.1")


@dataclass
class Server:
    url: str
    db_url: str
    indexnow: FakeIndexNow


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    workdir = tmp_path_factory.mktemp("serve-jobs")
    db_url = f"sqlite:///{workdir / 'server.db'}"
    db = Database(db_url)  # before the server runs: the test_items kind logs to test_log
    try:
        migrate.upgrade(db)
        log_metadata.create_all(db.engine)
    finally:
        db.dispose()
    indexnow = FakeIndexNow()
    with serve(indexnow.app()) as indexnow_base:
        port = free_port()
        env = subprocess_env(
            db_url,
            SEOJOBS_INDEXNOW_KEY=INDEXNOW_KEY,
            SEOJOBS_INDEXNOW_ENDPOINT=indexnow_base + "/indexnow",
            SEOJOBS_SUBMIT_PROVIDERS=json.dumps({"google": ["indexnow"], "bing": ["indexnow"]}),
            SEOJOBS_PROVIDER_BACKOFF="0.01",
            SEOJOBS_RATE_LIMIT="6000/minute",
            SEOJOBS_POLL_INTERVAL="0.1",
        )
        spawner = Spawner(workdir)
        try:
            proc = spawner("serve", "--port", str(port), env=env, name="serve")
            wait_http_ok(proc, f"http://127.0.0.1:{port}/readyz")
            yield Server(f"http://127.0.0.1:{port}", db_url, indexnow)
        finally:
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

    def urls(self, n: int) -> list[str]:
        return [f"https://{self.tag}.example/p{i}" for i in range(n)]

    def env(self, **extra: str) -> dict[str, str]:
        return env_without_seojobs() | {
            "SEOJOBS_URL": self.server.url,
            "SEOJOBS_API_KEY": self.api_key,
            "SEOJOBS_STATE": str(self.state_path),
            "NO_COLOR": "1",
            **extra,
        }

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

    def jobs(self) -> list[ProjectJob]:
        """Every job of this user on the server, in every project, oldest first."""
        with self.client() as client:
            found = [j for p in client.projects.list() for j in client.jobs.list(p, limit=1000)]
        return sorted(found, key=lambda j: j.id)

    def entries(self) -> list[Entry]:
        if not self.state_path.exists():
            return []
        with StateFile(self.state_path) as state:
            return state.entries()


@pytest.fixture
def cli(server: Server, tmp_path: Path) -> Cli:
    with open_services(server.db_url) as services:
        created = services.accounts.create_user(f"cli-{uuid.uuid4().hex[:6]}")
    return Cli(server, created.api_key, tmp_path)


def ok(done: subprocess.CompletedProcess[str], code: int = 0) -> subprocess.CompletedProcess[str]:
    assert done.returncode == code, (done.returncode, done.stdout, done.stderr)
    return done


# -- submit --type ------------------------------------------------------------------------------


def test_submit_a_typed_job_in_a_named_project_and_wait_for_it(cli: Cli) -> None:
    with cli.client() as client:
        project = client.projects.create("example.com")
    urls = cli.urls(2)
    done = ok(
        cli.run(
            *("submit", "--type", "test_items", "--param", f"urls={json.dumps(urls)}"),
            *("--param", "item_delay=0.01", "--project", "example.com", "--title", "two"),
            *("--wait", "--json", *FAST),
        )
    )
    body = json.loads(done.stdout)  # exactly one JSON document
    assert (body["type"], body["status"], body["project_id"]) == (
        "test_items",
        "completed",
        project.id,
    )
    assert body["items_done"] == 2 and body["counters"] == {"ok": 2} and body["title"] == "two"
    assert f"test_items job {body['id']}: completed" in done.stderr
    [job] = cli.jobs()
    assert job.id == body["id"]
    [entry] = cli.entries()
    assert (entry.kind, entry.surface, entry.job_id, entry.state) == (
        "test_items",
        "projects",
        job.id,
        "done",
    )
    assert entry.request == {
        "project_id": project.id,
        "type": "test_items",
        "params": {"urls": urls, "item_delay": 0.01},
        "title": "two",
    }
    assert entry.result is not None and entry.result["job"]["status"] == "completed"


def test_submit_goes_to_the_default_project_prints_the_id_and_wait_finds_it(cli: Cli) -> None:
    # The installed console script itself (the others fork from tests/clifork.py's zygote).
    done = ok(cli.run("submit", "--type", "test_noop", console_script=True))
    job_id = int(done.stdout)  # stdout is the job id and nothing else
    with cli.client() as client:
        default = client.projects.default()
        assert client.jobs.get(job_id).project_id == default.id
    waited = ok(cli.run("wait", str(job_id), *FAST))
    assert waited.stdout.split() == [str(job_id), "test_noop", "completed"]
    [entry] = cli.entries()
    assert entry.state == "done" and entry.status == "completed"


@pytest.mark.parametrize(
    ("params", "code", "message"),
    [
        (["code=bad_input", "message=no way"], "bad_input", "no way"),
        # The schema says text: what looks like a number or a boolean stays as typed.
        (["code=404", "message=true"], "404", "true"),
        (["code=1e3", "message=null"], "1e3", "null"),  # message may not be null
    ],
)
def test_a_failing_typed_job_exits_1_with_its_error(
    cli: Cli, params: list[str], code: str, message: str
) -> None:
    args = [a for p in params for a in ("--param", p)]
    done = ok(cli.run("submit", "--type", "test_fail", *args, "--wait", "--json", *FAST), 1)
    body = json.loads(done.stdout)
    assert body["status"] == "failed"
    assert body["error"] == {"code": code, "message": message}
    assert f"test_fail job {body['id']}: failed ({code}:" in done.stderr


@pytest.mark.parametrize(
    ("param", "expected"),
    [
        ("seconds=0.05", 0.05),  # a JSON number
        ("seconds=0", 0),
    ],
)
def test_param_values_are_json_when_they_parse(cli: Cli, param: str, expected: Any) -> None:
    done = ok(cli.run("submit", "--type", "test_sleep", "--param", param, "--wait", *FAST))
    job_id = int(done.stdout.split()[0])
    [entry] = cli.entries()
    assert entry.job_id == job_id and entry.request["params"] == {"seconds": expected}
    assert entry.status == "completed"


def test_a_number_sent_as_json_text_is_refused_naming_the_param(cli: Cli) -> None:
    """``seconds="0.1"`` is a JSON string; the type's schema asks for a number, and a value
    a lax parser would convert is refused rather than read as 0.1. Nothing is stored."""
    done = ok(cli.run("submit", "--type", "test_sleep", "--param", 'seconds="0.1"', *FAST), 2)
    assert 'params.seconds: must be a number, not a string (got "0.1")' in done.stderr
    assert cli.entries() == []


def test_urls_from_a_file_become_the_urls_param(cli: Cli) -> None:
    urls = cli.urls(3)
    path = cli.workdir / "urls.txt"
    path.write_text(f"# mine\n{urls[0]}\n\n{urls[1]}\n{urls[2]}\n", encoding="utf-8")
    done = ok(cli.run("submit", "--type", "test_items", "-f", str(path), "--wait", *FAST))
    [entry] = cli.entries()
    assert entry.request["params"] == {"urls": urls} and entry.status == "completed"
    assert int(done.stdout.split()[0]) == entry.job_id


def test_an_index_type_through_the_projects_api_is_followed_with_its_report(cli: Cli) -> None:
    urls = cli.urls(2)
    done = ok(
        cli.run(
            *("submit", "--type", "index_submit", "--param", "engine=bing"),
            *(*urls, "--wait", "--json", *FAST),
        )
    )
    body = json.loads(done.stdout)
    assert body["status"] == "completed" and body["successful_count"] == 2  # v1's body
    [entry] = cli.entries()
    assert entry.surface == "projects" and entry.kind == "index_submit"
    assert entry.result is not None and len(entry.result["report"]) == 2
    assert sorted(r["url"] for r in entry.result["report"]) == urls
    csv = ok(cli.run("report", str(body["job_id"])))
    assert all(url in csv.stdout for url in urls)


# -- refused before anything is sent ------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--type", "test_noop", "--param", "seconds"], "use KEY=VALUE"),
        (["--type", "test_noop", "--param", "=5"], "use KEY=VALUE"),
        (["--type", "test_noop", "--param", "a=1", "--param", "a=2"], "given twice"),
        (["--param", "seconds=1"], "--param needs --type"),
        (["--project", "x", "https://a.example/"], "--project needs --type"),
        (["--type", "test_noop", "--engine", "bing"], "--param engine="),
        (["--type", "test_noop", "--checker", "2"], "--param checker="),
        (["--type", "test_noop", "--project", "no such project"], "no project 'no such project'"),
        (["--type", "test_noop", "--project", "999999"], "no project '999999'"),
        (["--type", " "], "--type: a job type"),
        (["--type", "test_items", "--param", 'urls=["https://a.example/"]', "https://b.example/"],
         "urls: given both"),
        (["--type", "test_items", "-f", "missing.txt"], "cannot read missing.txt"),
        # Keys the type does not take (the server would drop them unread).
        (["--type", "test_sleep", "--param", "second=1"],
         "second: not a param of test_sleep (it takes: seconds)"),
        (["--type", "test_noop", "--param", "x=1", "--param", "y=2"],
         "x, y: not a param of test_noop (it takes: no params)"),
        (["--type", "test_fail", "https://a.example/"], "urls: not a param of test_fail"),
    ],
)  # fmt: skip
def test_bad_arguments_exit_2_and_send_nothing(cli: Cli, args: list[str], says: str) -> None:
    done = ok(cli.run("submit", *args), 2)
    assert says in done.stderr and done.stdout == ""
    assert cli.jobs() == [] and cli.entries() == []


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["--type", "no_such_type"], "type"),
        (["--type", "test_sleep"], "params.seconds"),
        (["--type", "test_sleep", "--param", "seconds=-1"], "params.seconds"),
        (["--type", "test_items", "--param", "urls=[]"], "params.urls"),
    ],
)
def test_a_refused_start_names_the_field_and_is_forgotten(
    cli: Cli, args: list[str], field: str
) -> None:
    done = ok(cli.run("submit", *args), 2)
    assert f"{field}:" in done.stderr and "422" in done.stderr
    assert cli.jobs() == [] and cli.entries() == []  # no job, and nothing left to replay


# -- wait ---------------------------------------------------------------------------------------


def test_wait_on_jobs_made_elsewhere_of_any_type_and_index_jobs_together(cli: Cli) -> None:
    with cli.client() as client:
        project = client.projects.create("elsewhere")
        noop = client.jobs.start(project, "test_noop")
        fail = client.jobs.start(project, "test_fail", {"code": "x"})
        index = client.submit(cli.urls(1), engine="bing")
    ids = [str(noop.id), str(index.job_id), str(fail.id)]
    done = ok(cli.run("wait", *ids, "--json", *FAST), 1)  # one failed
    bodies = json.loads(done.stdout)
    assert {(b.get("id") or b.get("job_id"), b["status"]) for b in bodies} == {
        (noop.id, "completed"),
        (fail.id, "failed"),
        (index.job_id, "completed"),
    }
    kinds = {e.job_id: (e.kind, e.surface, e.state) for e in cli.entries()}
    assert kinds == {
        noop.id: ("test_noop", "projects", "done"),
        fail.id: ("test_fail", "projects", "done"),
        index.job_id: ("index_submit", "v1", "done"),
    }


def test_wait_type_checks_the_jobs_type_and_unknown_ids_are_usage_errors(cli: Cli) -> None:
    with cli.client() as client:
        job = client.jobs.start(client.projects.default(), "test_noop")
    ok(cli.run("wait", str(job.id), "--type", "test_noop", *FAST))
    wrong = ok(cli.run("wait", str(job.id), "--type", "test_fail", "--state", "other.db"), 2)
    assert f"job {job.id} is a test_noop job, not test_fail" in wrong.stderr
    missing = ok(cli.run("wait", "987654", *FAST), 2)
    assert "no such job" in missing.stderr and "987654" in missing.stderr
    both = ok(cli.run("wait", str(job.id), "--type", "test_noop", "--kind", "index_check"), 2)
    assert "not both" in both.stderr


def test_report_of_a_typed_job_says_what_report_covers(cli: Cli) -> None:
    job_id = int(ok(cli.run("submit", "--type", "test_noop")).stdout)
    done = ok(cli.run("report", str(job_id)), 2)
    assert f"job {job_id} is a test_noop job" in done.stderr


# -- the state file: crash replay, poll, jobs ---------------------------------------------------


def test_crash_before_the_id_is_saved_is_replayed_to_the_projects_api(cli: Cli) -> None:
    with cli.client() as client:
        project = client.projects.create("crash")
    request = {"project_id": project.id, "type": "test_noop", "params": {}}
    # What `submit --type` does, stopped where a crash would stop it: the intent and its key
    # are saved, the POST is sent and answered, and the process dies before submitted().
    with StateFile(cli.state_path) as state:
        entry = state.intend(cli.server.url, "test_noop", request, surface="projects")
    with cli.client() as client:
        sent = client.jobs.start(project.id, "test_noop", {}, idempotency_key=entry.idempotency_key)

    done = ok(cli.run("poll", "--json", *FAST))
    summary = json.loads(done.stdout)
    assert summary["resubmitted"] == [
        {"local_id": entry.local_id, "kind": "test_noop", "job_id": sent.id}
    ]
    assert summary["saved"] == [{"kind": "test_noop", "job_id": sent.id, "status": "completed"}]
    assert [j.id for j in cli.jobs()] == [sent.id]  # one job, not two
    [row] = cli.entries()
    assert row.state == "done" and row.result is not None


@pytest.mark.parametrize("sent", [False, True], ids=["never-sent", "answer-lost"])
def test_a_submission_whose_project_was_deleted_is_forgotten_by_poll(cli: Cli, sent: bool) -> None:
    with cli.client() as client:
        project = client.projects.create("short-lived")
        keep = client.projects.create("kept")
    requests = [
        {"project_id": project.id, "type": "test_noop", "params": {}},
        {"project_id": keep.id, "type": "test_noop", "params": {}},
    ]
    with StateFile(cli.state_path) as state:
        gone, kept = (
            state.intend(cli.server.url, "test_noop", r, surface="projects") for r in requests
        )
    with cli.client() as client:
        if sent:  # the first try made a job; the project went with it
            client.jobs.start(project.id, "test_noop", idempotency_key=gone.idempotency_key)
        client.projects.delete(project.id)

    done = ok(cli.run("poll", "--json", *FAST))  # not stuck on it: the rest goes on
    summary = json.loads(done.stdout)
    assert summary["abandoned"] == [{"local_id": gone.local_id, "kind": "test_noop"}]
    assert [r["local_id"] for r in summary["resubmitted"]] == [kept.local_id]
    assert f"submission {gone.local_id}" in done.stderr and "404" in done.stderr
    [entry] = cli.entries()
    assert entry.local_id == kept.local_id and entry.state == "done"


def test_poll_and_jobs_handle_typed_jobs(cli: Cli) -> None:
    with cli.client() as client:
        slow = client.jobs.start(client.projects.default(), "test_sleep", {"seconds": 60})
    job_id = int(ok(cli.run("submit", "--type", "test_noop")).stdout)
    ok(cli.run("wait", str(slow.id), "--timeout", "0.3", *FAST), 3)  # tracked, still open

    refreshed = json.loads(ok(cli.run("jobs", "--refresh", "--json")).stdout)
    rows = {r["job_id"]: (r["kind"], r["surface"], r["state"]) for r in refreshed}
    assert rows == {
        slow.id: ("test_sleep", "projects", "open"),
        job_id: ("test_noop", "projects", "open"),
    }
    summary = json.loads(ok(cli.run("poll", "--once", "--json", *FAST)).stdout)
    assert {(s["kind"], s["job_id"]) for s in summary["saved"]} == {("test_noop", job_id)}
    assert summary["open"][0]["kind"] == "test_sleep" and summary["open"][0]["job_id"] == slow.id
    with cli.client() as client:
        client.jobs.cancel(slow.id)
    summary = json.loads(ok(cli.run("poll", "--once", "--json", *FAST)).stdout)
    assert summary["saved"] == [{"kind": "test_sleep", "job_id": slow.id, "status": "failed"}]


def test_help_shows_the_typed_options_and_an_example(cli: Cli) -> None:
    submit = ok(cli.run("submit", "--help", env=cli.env(COLUMNS="200"))).stdout
    for flag in ("--type", "--param", "--project", "KEY=VALUE"):
        assert flag in submit
    assert "seojobs submit --type" in submit
    wait = ok(cli.run("wait", "--help", env=cli.env(COLUMNS="200"))).stdout
    assert "--type" in wait
