"""``seojobs wait --webhook-port N`` (issue 27.6): a one-shot receiver on loopback, registered
as a temporary endpoint, verifies each delivery's signature and has the job read at once;
polling goes on beneath, and takes over when the server refuses the endpoint. The CLI runs in
process (typer's runner) against a real server with its worker on a loopback socket."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from standardwebhooks import Webhook
from typer.testing import CliRunner, Result

from seojobs.cli import app
from seojobs.client.cli_hook import Receiver
from tests.api_helpers import Account, Api, api
from tests.conftest import make_settings


@pytest.fixture(scope="module")
def hooked(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    """A server with its worker, allowed to deliver to loopback, looking for due deliveries
    often. SQLite: the receiver does not depend on the store."""
    url = f"sqlite:///{tmp_path_factory.mktemp('hooked') / 'server.db'}"
    settings = make_settings(url, allow_private_networks=True, webhook_poll_interval=0.05)
    with api(settings, run_worker=True) as running:
        running.shared = True
        yield running


@pytest.fixture
def hook(hooked: Api) -> Iterator[Api]:
    """``hooked`` for one test: its own users and clients."""
    mine = hooked.own()
    try:
        yield mine
    finally:
        mine.close()


def wait_cli(server: Api, account: Account, state: Path, *args: str) -> Result:
    env = {"SEOJOBS_URL": server.base, "SEOJOBS_API_KEY": account.key, "NO_COLOR": "1"}
    return CliRunner().invoke(app, ["wait", "--state", str(state), *args], env=env)


def start(server: Api, account: Account, kind: str, **params: object) -> int:
    http = server.client(account)
    project = http.post("/v1/projects", json={"name": f"p{time.monotonic_ns()}"})
    project_id = project.json()["data"]["id"]
    started = http.post(f"/v1/projects/{project_id}/jobs", json={"type": kind, "params": params})
    assert started.status_code == 202, started.text
    job_id: int = started.json()["data"]["id"]
    return job_id


def two_jobs(server: Api, account: Account) -> list[str]:
    """Two jobs that end in 3 s: a wait on several is never long-polled, only read in rounds."""
    return [str(start(server, account, "test_sleep", seconds=3)) for _ in range(2)]


def test_deliveries_end_the_wait_before_the_next_round(hook: Api, tmp_path: Path) -> None:
    alice = hook.account("alice")
    jobs = two_jobs(hook, alice)
    # The rounds are 60 s apart and the wait may take 20: by polling alone it would give up
    # (exit 3) after its first read. Only the deliveries can end it in time.
    result = wait_cli(
        hook, alice, tmp_path / "state.db", *jobs, "--type", "test_sleep",
        "--webhook-port", "0", "--interval", "60", "--timeout", "20", "--json",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    done = json.loads(result.stdout)
    assert [(str(j["id"]), j["status"]) for j in done] == [(i, "completed") for i in jobs]
    assert "waiting for webhooks on http://127.0.0.1:" in result.stderr
    # The temporary endpoint is gone with the wait.
    assert hook.client(alice).get("/v1/webhooks").json()["data"] == []


def test_without_the_receiver_the_same_wait_gives_up(hook: Api, tmp_path: Path) -> None:
    # The other side of the test above: the same wait by polling alone times out.
    alice = hook.account("alice")
    jobs = two_jobs(hook, alice)
    result = wait_cli(
        hook, alice, tmp_path / "state.db", *jobs, "--type", "test_sleep",
        "--interval", "60", "--timeout", "20",
    )  # fmt: skip
    assert result.exit_code == 3, result.output


def test_a_server_that_refuses_the_endpoint_is_polled_instead(
    own_idle: Api, tmp_path: Path
) -> None:
    # This server may not deliver to loopback: 422 at registration, then a plain wait.
    alice = own_idle.account("alice")
    job_id = start(own_idle, alice, "test_noop")
    cancelled = own_idle.client(alice).post(f"/v1/jobs/{job_id}/cancel")
    assert cancelled.status_code == 200, cancelled.text
    result = wait_cli(
        own_idle, alice, tmp_path / "state.db", str(job_id), "--webhook-port", "0",
        "--interval", "0.1", "--timeout", "30",
    )  # fmt: skip
    assert result.exit_code == 1, result.output  # it ended failed (cancelled), seen by a poll
    assert "polling instead" in result.stderr
    assert f"{job_id} test_noop failed" in result.stdout


def test_a_taken_port_is_a_usage_error(hook: Api, tmp_path: Path) -> None:
    alice = hook.account("alice")
    job_id = start(hook, alice, "test_noop")
    taken = Receiver(0)
    try:
        port = str(taken.server.server_address[1])
        result = wait_cli(hook, alice, tmp_path / "s.db", str(job_id), "--webhook-port", port)
    finally:
        taken.server.server_close()
    assert result.exit_code == 2, result.output
    assert f"--webhook-port: cannot listen on 127.0.0.1:{port}" in result.stderr


# -- the receiver -------------------------------------------------------------------------------


def test_the_receiver_takes_only_deliveries_signed_with_its_secret() -> None:
    receiver = Receiver(0)
    receiver.secret = "whsec_" + "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo0NTY3ODk="
    body = json.dumps({"type": "job.completed", "timestamp": "t", "data": {"id": 42}})
    now = time.time()
    stamp = datetime.fromtimestamp(now, tz=UTC)
    signed = Webhook(receiver.secret).sign("msg_1", stamp, body)
    good = {"webhook-id": "msg_1", "webhook-timestamp": str(int(now)), "webhook-signature": signed}
    forged = good | {"webhook-signature": Webhook("whsec_" + "A" * 44).sign("msg_1", stamp, body)}
    with receiver.running(), httpx.Client() as http:
        assert http.post(receiver.url, content=body, headers=forged).status_code == 400
        assert http.post(receiver.url + "x", content=body, headers=good).status_code == 404
        assert http.post(receiver.url, content=b"x" * (2 << 20), headers=good).status_code == 413
        assert receiver.wait(0) == []
        assert http.post(receiver.url, content=body, headers=good).status_code == 204
        assert receiver.wait(5) == [42]
    assert receiver.refused == 1
