"""client.jobs.items (sync and async) against the real server on both stores: a job's items
in order, page by page, filtered by outcome; another user's job is 404."""

from __future__ import annotations

from typing import Any

import pytest

from seojobs.client import JobItem, NotFoundError, PollPolicy
from tests.api_helpers import Api
from tests.integration.client_helpers import MODES, Driver, aw, edge


@pytest.fixture
def working(shared_working: Api) -> Api:
    """One server per store for the module: every test works as its own new users."""
    return shared_working


FAST = PollPolicy(start=0.1, factor=1.5, ceiling=0.5, deadline=60)
PLENTY = "6000/minute"
URLS = [f"https://a.example/p{i}" for i in range(5)]
FAILING = [URLS[1], URLS[3]]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("page_size", [1000, 2, 1])
def test_items_in_order_page_by_page_and_by_outcome(
    working: Api, mode: str, page_size: int
) -> None:
    alice = working.account("alice", rate_limit=PLENTY)
    transport = edge(mode)
    driver = Driver(mode, working.base, alice.key, transport=transport)

    async def scenario(c: Any) -> dict[str, Any]:
        project = await aw(c.projects.create("items"))
        job = await aw(c.jobs.start(project, "test_items", {"urls": URLS, "fail_items": FAILING}))
        done = await aw(c.jobs.wait(job.id, policy=FAST))
        before = len(transport.requests("GET", "/items"))
        every = await aw(c.jobs.items(done, page_size=page_size))
        pages = len(transport.requests("GET", "/items")) - before
        return {
            "job": done,
            "every": every,
            "pages": pages,
            "ok": await aw(c.jobs.items(done.id, "ok", page_size=page_size)),
            "both": await aw(c.jobs.items(done.id, ["ok", "nothing-like-it"])),
            "none": await aw(c.jobs.items(done.id, "nothing-like-it")),
        }

    out = driver.run(scenario)
    assert out["job"].status == "completed" and out["job"].items_failed == len(FAILING)
    every: list[JobItem] = out["every"]
    assert all(isinstance(i, JobItem) for i in every)
    assert [i.input for i in every] == URLS and [i.seq for i in every] == sorted(
        i.seq for i in every
    )
    assert out["pages"] == -(-len(URLS) // page_size)  # every page fetched, none twice
    for item in every:
        if item.input in FAILING:
            assert item.status == "failed" and item.error is not None
            assert item.error.code == "item_failed" and item.result is None
        else:
            assert item.status == "ok" and item.error is None
            assert item.result == {"length": len(item.input)}
        assert item.finished_at is not None
    wanted = [u for u in URLS if u not in FAILING]
    assert [i.input for i in out["ok"]] == wanted
    assert [i.input for i in out["both"]] == wanted  # several outcomes: any of them
    assert out["none"] == []


@pytest.mark.parametrize("mode", MODES)
def test_another_users_job_items_are_404(working: Api, mode: str) -> None:
    alice = working.account("alice", rate_limit=PLENTY)
    bob = working.account("bob", rate_limit=PLENTY)

    async def setup(c: Any) -> int:
        project = await aw(c.projects.create("mine"))
        job = await aw(c.jobs.start(project, "test_items", {"urls": URLS[:1]}))
        return int(job.id)

    job_id = Driver(mode, working.base, alice.key).run(setup)
    with pytest.raises(NotFoundError):
        Driver(mode, working.base, bob.key).run(lambda c: c.jobs.items(job_id))
