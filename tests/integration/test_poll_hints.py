"""Every kind's poll hint is served in /v1/job-types and is what the SDK (sync and async) and
the CLI's wait poll by: no table of the client's own. The plug-in kind (tests/acme) declares
one with no change in seojobs, and its jobs are polled at it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from seojobs.client import Client, PollPolicy, WaitTimeout
from seojobs.client.cli_common import Output
from seojobs.client.cli_watch import Watcher
from seojobs.client.state import StateFile
from seojobs.engine.hints import PollHint
from tests.acme import POLL_HINT
from tests.api_helpers import Api, api
from tests.conftest import make_settings
from tests.integration.client_helpers import MODES, Driver, NoWait, aw, edge

PLUGINS = ["tests.kinds", "tests.acme"]
ACME = {"site": "acme.example", "pages": {"/": 1000}}


@pytest.fixture
def idle(sqlite_url: str) -> Iterator[Api]:
    """No worker: a job stays pending, so a wait runs to its deadline. (What a client polls
    by does not depend on the store: SQLite only.)"""
    with api(make_settings(sqlite_url, plugins=PLUGINS), run_worker=False) as running:
        yield running


def expected(hint: PollHint) -> PollPolicy:
    fixed = hint.first == hint.ceiling
    return PollPolicy(
        start=hint.first,
        ceiling=hint.ceiling,
        deadline=hint.deadline,
        factor=1.0 if fixed else PollPolicy.factor,
    )


@pytest.mark.parametrize("mode", MODES)
def test_every_registered_kinds_hint_is_served_and_is_what_the_sdk_uses(
    idle: Api, mode: str
) -> None:
    kinds = idle.services.registry.kinds()
    served = {t["name"]: t for t in idle.client(idle.account()).get("/v1/job-types").json()["data"]}
    assert sorted(served) == sorted(kind.name for kind in kinds)
    driver = Driver(mode, idle.base, idle.account().key)

    async def scenario(c: Any) -> dict[str, PollPolicy]:
        return {kind.name: await aw(c.poll_policy(kind.name)) for kind in kinds}

    used = driver.run(scenario)
    for kind in kinds:
        assert served[kind.name]["poll_hint"] == kind.poll_hint.as_dict(), kind.name
        assert used[kind.name] == expected(kind.poll_hint), kind.name


@pytest.mark.parametrize("mode", MODES)
def test_a_plugin_kinds_jobs_are_waited_on_at_its_hint(idle: Api, mode: str) -> None:
    alice = idle.account("alice")
    clock = NoWait()
    # The server would hold the first long polls for real seconds (no worker: the job stays
    # pending); through a proxy that drops Prefer, the wait goes by the hint's schedule.
    transport = edge(mode, strip_prefer=True)
    driver = Driver(mode, idle.base, alice.key, clock=clock.clock, transport=transport)
    driver.recording = clock

    async def scenario(c: Any) -> WaitTimeout:
        project = await aw(c.projects.create("acme"))
        started = await aw(c.jobs.start(project, "acme_audit", ACME))
        clock.delays.clear()  # the pacer's, if any: only the wait's sleeps are at issue
        try:
            await aw(c.jobs.wait(started.id))  # no policy given: the kind's hint
        except WaitTimeout as exc:
            return exc
        raise AssertionError("no worker runs: the wait must end at the hint's deadline")

    timed_out = driver.run(scenario)
    rounds = int(POLL_HINT.deadline // POLL_HINT.first)
    assert clock.delays == [POLL_HINT.first] * rounds
    assert f"deadline {POLL_HINT.deadline:.0f}s" in str(timed_out)


def test_the_clis_wait_polls_a_plugin_kinds_jobs_at_its_hint(idle: Api, tmp_path: Path) -> None:
    alice = idle.account("alice")
    http = idle.client(alice)
    project = http.post("/v1/projects", json={"name": "acme"}).json()["data"]["id"]
    started = http.post(f"/v1/projects/{project}/jobs", json={"type": "acme_audit", "params": ACME})
    job_id = started.json()["data"]["id"]
    clock = NoWait()
    with (
        Client(
            idle.base,
            alice.key,
            sleep=clock.sleep,
            clock=clock.clock,
            transport=edge("sync", strip_prefer=True),  # as above: no real holds
        ) as client,
        StateFile(tmp_path / "state.db") as state,
    ):
        watcher = Watcher(client, state, Output(), server=idle.base, interval=None)
        watcher.add("acme_audit", job_id)
        with pytest.raises(WaitTimeout):
            watcher.run(timeout=5 * POLL_HINT.first)
    periods = watcher.scheduler.stats.periods
    assert periods and set(periods) == {POLL_HINT.first}
