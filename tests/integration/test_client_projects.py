"""client.projects and client.jobs (sync and async) against the real server:
jobs of the plug-in test kinds started in projects and waited on, failures with their
errors, several jobs on one timer, cancel, other users' things, lost answers, Retry-After and
long polls on /v1/jobs/{id}.

On SQLite: the client is the subject. What the server stores and answers, on both stores, is
test_api_projects' and test_api_v1's (projects, jobs, tenants, idempotency, long polls)."""

from __future__ import annotations

from typing import Any

import pytest

from seojobs.client import (
    ConflictError,
    InvalidRequestError,
    NotFoundError,
    PollPolicy,
    Project,
    ProjectJob,
    WaitTimeout,
)
from tests.api_helpers import Api
from tests.dashboard_helpers import collected_job
from tests.integration.client_helpers import MODES, Driver, NoWait, aw, edge
from tests.waiting import wait_until

pytestmark = pytest.mark.stores("sqlite")


@pytest.fixture
def idle(shared_idle: Api) -> Api:
    """One server per store for the module: every test works as its own new users."""
    return shared_idle


@pytest.fixture
def working(shared_working: Api) -> Api:
    return shared_working


FAST = PollPolicy(start=0.1, factor=1.5, ceiling=0.5, deadline=60)
PLENTY = "6000/minute"  # waits poll every 0.1-0.5 s: not what these tests are about


def urls(n: int) -> list[str]:
    return [f"https://a.example/p{i}" for i in range(n)]


# -- start and wait -----------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_start_a_job_in_a_new_project_and_wait_until_completed(working: Api, mode: str) -> None:
    alice = working.account("alice", rate_limit=PLENTY)
    transport = edge(mode)
    driver = Driver(mode, working.base, alice.key, transport=transport)

    async def scenario(c: Any) -> tuple[Project, ProjectJob, ProjectJob, ProjectJob]:
        project = await aw(c.projects.create("example.com"))
        started = await aw(c.jobs.start(project.id, "test_items", {"urls": urls(3)}, title="t"))
        done = await aw(c.jobs.wait(started.id, policy=FAST))
        return project, started, done, await aw(c.jobs.get(started.id))

    project, started, done, again = driver.run(scenario)
    assert project.name == "example.com" and not project.is_default
    assert started.status == "pending" and started.type == "test_items"
    assert started.project_id == project.id and started.title == "t"
    assert started.params == {"urls": urls(3)}  # what was sent; the server does not echo it
    [post] = transport.requests("POST", f"/v1/projects/{project.id}/jobs")
    assert post.status == 202 and post.response_headers["location"] == f"/v1/jobs/{started.id}"
    assert started.retry_after == float(post.response_headers["retry-after"])
    assert post.headers["idempotency-key"]
    assert done.id == started.id and done.status == "completed" and done.error is None
    assert done.items_total == 3 and done.items_done == 3 and done.counters == {"ok": 3}
    assert done.result == {"seen": 3} and done.completed_at is not None
    assert done.progress_percent == 100 and done.is_terminal
    assert again == done and again.params is None
    # Every read went to /v1/jobs/{id}, the surface that serves every job type.
    reads = transport.requests("GET", "/v1/jobs/")
    assert reads and all(r.path == f"/v1/jobs/{started.id}" for r in reads)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("params", "code", "message"),
    [
        ({"code": "site_unreachable", "message": "no answer from a.example"}, "site_unreachable",
         "no answer from a.example"),
        ({"code": "quota_exhausted", "message": "daily quota"}, "quota_exhausted", "daily quota"),
        ({}, "boom", "it failed"),
    ],
)  # fmt: skip
def test_a_failing_kind_ends_failed_with_its_error(
    working: Api, mode: str, params: dict[str, Any], code: str, message: str
) -> None:
    alice = working.account("alice", rate_limit=PLENTY)

    async def scenario(c: Any) -> ProjectJob:
        project = await aw(c.projects.create("failing"))
        started = await aw(c.jobs.start(project, "test_fail", params))
        return await aw(c.jobs.wait(started.id, policy=FAST))

    done = Driver(mode, working.base, alice.key).run(scenario)
    assert done.status == "failed" and done.error is not None
    assert (done.error.code, done.error.message) == (code, message)


@pytest.mark.parametrize("mode", MODES)
def test_wait_on_several_jobs_of_several_types_returns_each_in_order(
    working: Api, mode: str
) -> None:
    alice = working.account("alice", rate_limit=PLENTY)
    transport = edge(mode)
    driver = Driver(mode, working.base, alice.key, transport=transport)

    async def scenario(c: Any) -> tuple[list[ProjectJob], list[ProjectJob]]:
        project = await aw(c.projects.create("many"))
        default = await aw(c.projects.default())
        started = [
            await aw(c.jobs.start(project, "test_sleep", {"seconds": 0.5})),
            await aw(c.jobs.start(project, "test_fail", {"code": "nope"})),
            await aw(c.jobs.start(project, "test_noop")),
            await aw(c.jobs.start(default, "index_submit", {"urls": urls(2), "engine": "bing"})),
        ]
        # Ids and handles mixed; the same job twice is waited on twice.
        targets = [started[0].id, started[1], started[2].id, started[3].id, started[2]]
        return started, await aw(c.jobs.wait(targets, policy=FAST))

    started, done = driver.run(scenario)
    assert [j.id for j in done] == [started[i].id for i in (0, 1, 2, 3, 2)]
    assert [(j.type, j.status) for j in done] == [
        ("test_sleep", "completed"),
        ("test_fail", "failed"),
        ("test_noop", "completed"),
        ("index_submit", "completed"),
        ("test_noop", "completed"),
    ]
    assert done[1].error is not None and done[1].error.code == "nope"
    assert done[3].items_total == 2 and done[3].items_done == 2
    assert not any(r.path.startswith("/api/") for r in transport.seen)


@pytest.mark.parametrize("mode", MODES)
def test_a_timed_out_wait_on_several_carries_every_last_state(idle: Api, mode: str) -> None:
    alice = idle.account("alice", rate_limit=PLENTY)  # the pacer's own sleeps are not at issue
    clock = NoWait()
    driver = Driver(mode, idle.base, alice.key, clock=clock.clock)
    driver.recording = clock

    async def scenario(c: Any) -> tuple[list[ProjectJob], WaitTimeout]:
        project = await aw(c.projects.create("stuck"))
        started = [await aw(c.jobs.start(project, "test_noop")) for _ in range(3)]
        cancelled = await aw(c.jobs.cancel(started[1]))
        try:
            await aw(c.jobs.wait([j.id for j in started], timeout=30, policy=FAST))
        except WaitTimeout as exc:
            return [*started[:1], cancelled, *started[2:]], exc
        raise AssertionError("no worker runs: the wait must time out")

    started, timed_out = driver.run(scenario)
    last = timed_out.last
    assert isinstance(last, list) and [j.id for j in last] == [j.id for j in started]
    assert [j.status for j in last] == ["pending", "failed", "pending"]
    assert "2 of 3 jobs not finished" in str(timed_out)
    assert clock.now <= 30 + 1e-6  # never slept past the deadline


# -- Retry-After and Prefer: wait on /v1/jobs/{id} ----------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_the_first_poll_after_start_waits_for_the_202s_retry_after(idle: Api, mode: str) -> None:
    alice = idle.account("alice")
    clock = NoWait()
    transport = edge(mode)
    driver = Driver(mode, idle.base, alice.key, clock=clock.clock, transport=transport)
    driver.recording = clock
    # The schedule alone: the first long polls (the server holds them) come at once.
    policy = PollPolicy(start=0.1, factor=1.5, ceiling=1, deadline=12, first_long_polls=0)

    async def scenario(c: Any) -> tuple[ProjectJob, Any, list[float]]:
        project = await aw(c.projects.create("later"))
        started = await aw(c.jobs.start(project, "test_noop"))
        with pytest.raises(WaitTimeout) as by_handle:  # no worker: it stays pending
            await aw(c.jobs.wait(started, policy=policy))
        after_handle = list(clock.delays)
        clock.delays.clear()
        with pytest.raises(WaitTimeout):
            await aw(c.jobs.wait(started.id, policy=policy))
        return started, by_handle.value, after_handle

    started, timed_out, delays = driver.run(scenario)
    told = started.retry_after
    assert told is not None and told >= 1
    # The 202 said when to come back: the first poll after it comes no sooner, then back-off.
    assert delays[0] >= told and delays[1:3] == pytest.approx([0.15, 0.225])
    assert isinstance(timed_out.last, ProjectJob) and timed_out.last.status == "pending"
    # Waiting on an id (state unknown) reads at once, then sleeps the policy's first interval.
    assert clock.delays[0] == pytest.approx(0.1)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("hold", [0.8, 1.5, 3.0])
def test_a_long_poll_the_server_does_not_honour_is_not_taken_off_the_next_sleep(
    idle: Api, mode: str, hold: float
) -> None:
    alice = idle.account("alice")
    clock = NoWait()

    def slow_answer() -> None:  # each round trip takes ``hold`` seconds of the client's clock
        clock.now += hold

    transport = edge(mode, on_request=slow_answer, strip_prefer=True)
    driver = Driver(mode, idle.base, alice.key, clock=clock.clock, transport=transport)
    driver.recording = clock
    policy = PollPolicy(start=4, factor=1, ceiling=4, deadline=30, long_poll=5)

    async def scenario(c: Any) -> int:
        project = await aw(c.projects.create("held"))
        job = await aw(c.jobs.start(project, "test_noop"))
        clock.delays.clear()
        with pytest.raises(WaitTimeout):
            await aw(c.jobs.wait(job.id, policy=policy))
        return int(job.id)

    job_id = driver.run(scenario)
    reads = transport.requests("GET", f"/v1/jobs/{job_id}")
    # The first read learns the job's type; the wait's first long poll is not honoured, so the
    # schedule takes over at once, its polls asking to be held as the policy says.
    assert len(reads) >= 4 and "prefer" not in reads[0].headers
    assert reads[1].headers.get("prefer") == "wait=20"
    assert all(r.headers.get("prefer") == "wait=5" for r in reads[2:])
    assert not any("preference-applied" in r.response_headers for r in reads)
    # Nothing was held by the server: every sleep is the policy's whole interval.
    assert clock.delays[:-1] and clock.delays[:-1] == pytest.approx([4.0] * len(clock.delays[:-1]))


@pytest.mark.parametrize("mode", MODES)
def test_a_job_that_ends_at_once_is_reported_by_a_long_poll_on_v1_jobs(
    working: Api, mode: str
) -> None:
    # Issue 27.6: /v1/jobs/{id} holds a read per Prefer: wait, and a wait on one job asks it
    # first: reported as it ends, not a first interval (the kind's hint) later.
    alice = working.account("alice", rate_limit=PLENTY)
    transport = edge(mode)
    driver = Driver(mode, working.base, alice.key, transport=transport)

    async def scenario(c: Any) -> tuple[ProjectJob, ProjectJob, PollPolicy]:
        project = await aw(c.projects.create("at-once"))
        started = await aw(c.jobs.start(project, "test_sleep", {"seconds": 0.3}))
        done = await aw(c.jobs.wait(started))  # the handle: no first read to learn its type
        return started, done, await aw(c.poll_policy("test_sleep"))

    started, done, hint = driver.run(scenario)
    assert done.status == "completed" and hint.start >= 2
    reads = transport.requests("GET", f"/v1/jobs/{started.id}")
    assert 1 <= len(reads) <= 3 and all(r.headers["prefer"] == "wait=20" for r in reads)
    # The server held them (the job was open when they came) and said so.
    assert reads[0].response_headers.get("preference-applied") == "wait=20"
    assert all(delay <= 1.0 for delay in driver.recording.delays), driver.recording.delays


# -- cancel -------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_cancel_ends_a_running_job_failed_cancelled(working: Api, mode: str) -> None:
    alice = working.account("alice", rate_limit=PLENTY)
    driver = Driver(mode, working.base, alice.key)

    async def begin(c: Any) -> tuple[ProjectJob, ProjectJob]:
        project = await aw(c.projects.create("cancel"))
        long = await aw(c.jobs.start(project, "test_sleep", {"seconds": 60}))
        quick = await aw(c.jobs.start(project, "test_noop"))
        return long, await aw(c.jobs.wait(quick, policy=FAST))

    long, quick = driver.run(begin)
    wait_until(lambda: driver.run(lambda c: c.jobs.get(long.id)).status == "processing")

    async def cancel(c: Any) -> tuple[ProjectJob, ProjectJob, ProjectJob]:
        cancelled = await aw(c.jobs.cancel(long.id))
        finished = await aw(c.jobs.wait(long.id, policy=FAST))
        return cancelled, finished, await aw(c.jobs.cancel(long.id))

    cancelled, finished, again = driver.run(cancel)
    assert cancelled.status == "failed" and cancelled.error is not None
    assert cancelled.error.code == "cancelled"
    assert finished.status == "failed" and finished.error == cancelled.error
    assert again == finished  # cancelling a cancelled job again is harmless

    async def cancel_finished(c: Any) -> ProjectJob:
        return await aw(c.jobs.cancel(quick))

    with pytest.raises(ConflictError) as refused:  # a completed job cannot be cancelled
        driver.run(cancel_finished)
    assert refused.value.code == "job_finished"
    assert refused.value.extensions["job_status"] == "completed"
    assert driver.run(lambda c: c.jobs.get(quick.id)) == quick


# -- projects -----------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_projects_list_follows_cursors_get_delete_and_conflicts(working: Api, mode: str) -> None:
    alice = working.account("alice", rate_limit=PLENTY)
    transport = edge(mode)
    driver = Driver(mode, working.base, alice.key, transport=transport)
    names = [f"site-{i:03}" for i in range(104)]  # with the default project: two pages

    async def scenario(c: Any) -> dict[str, Any]:
        made = [await aw(c.projects.create(name)) for name in names]
        listed = await aw(c.projects.list())
        default = await aw(c.projects.default())
        got = await aw(c.projects.get(made[7].id))
        with pytest.raises(ConflictError) as taken:
            await aw(c.projects.create(names[0]))
        with pytest.raises(ConflictError) as undeletable:
            await aw(c.projects.delete(default))
        await aw(c.projects.delete(made[7]))
        with pytest.raises(NotFoundError):
            await aw(c.projects.get(made[7].id))
        with pytest.raises(NotFoundError):
            await aw(c.projects.delete(made[7].id))
        after = await aw(c.projects.list())
        return {
            "made": made,
            "listed": listed,
            "default": default,
            "got": got,
            "taken": taken.value,
            "undeletable": undeletable.value,
            "after": after,
        }

    out = driver.run(scenario)
    listed = out["listed"]
    assert [p.name for p in listed] == ["default", *names]
    assert len(transport.requests("GET", "/v1/projects")) >= 2  # two pages, at least once
    assert listed[0].is_default and out["default"] == listed[0]
    assert out["got"] == out["made"][7]
    assert out["taken"].status == 409 and out["undeletable"].status == 409
    assert [p.name for p in out["after"]] == ["default", *names[:7], *names[8:]]


@pytest.mark.parametrize("mode", MODES)
def test_another_users_project_and_jobs_are_404(working: Api, mode: str) -> None:
    alice = working.account("alice", rate_limit=PLENTY)
    bob = working.account("bob", rate_limit=PLENTY)

    async def setup(c: Any) -> tuple[Project, ProjectJob]:
        project = await aw(c.projects.create("alice's"))
        return project, await aw(c.jobs.start(project, "test_noop"))

    project, job = Driver(mode, working.base, alice.key).run(setup)
    calls = {
        "projects.get": lambda c: c.projects.get(project.id),
        "projects.delete": lambda c: c.projects.delete(project.id),
        "jobs.start": lambda c: c.jobs.start(project.id, "test_noop"),
        "jobs.list": lambda c: c.jobs.list(project.id),
        "jobs.get": lambda c: c.jobs.get(job.id),
        "jobs.wait": lambda c: c.jobs.wait(job.id, policy=FAST),
        "jobs.wait-several": lambda c: c.jobs.wait([job.id], policy=FAST),
        "jobs.cancel": lambda c: c.jobs.cancel(job.id),
    }
    as_bob = Driver(mode, working.base, bob.key)
    for name, call in calls.items():
        with pytest.raises(NotFoundError) as caught:
            as_bob.run(call)
        assert caught.value.status == 404, name
    # Nothing of alice's changed: her project is there, her job was not cancelled.
    assert [p.id for p in working.services.projects(alice.user)][1:] == [project.id]
    assert working.services.jobs.get(alice.user, job.id).error_code is None


# -- bad input ------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("type_", "params", "field"),
    [
        ("no_such_type", {}, "type"),
        ("test_sleep", {}, "params.seconds"),
        ("test_sleep", {"seconds": "soon"}, "params.seconds"),
        ("test_items", {"urls": []}, "params.urls"),
    ],
)
def test_refused_starts_name_the_field(
    working: Api, mode: str, type_: str, params: dict[str, Any], field: str
) -> None:
    alice = working.account("alice", rate_limit=PLENTY)

    async def scenario(c: Any) -> None:
        project = await aw(c.projects.create("bad"))
        await aw(c.jobs.start(project, type_, params))

    with pytest.raises(InvalidRequestError) as caught:
        Driver(mode, working.base, alice.key).run(scenario)
    assert caught.value.status == 422
    assert field in [e["field"] for e in caught.value.errors]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("bad", ["7", 7.0, True, 0, -3, None])
def test_a_malformed_id_is_refused_before_anything_is_sent(
    idle: Api, mode: str, bad: object
) -> None:
    alice = idle.account("alice")
    transport = edge(mode)
    driver = Driver(mode, idle.base, alice.key, transport=transport)
    calls = [
        lambda c: c.jobs.get(bad),
        lambda c: c.jobs.cancel(bad),
        lambda c: c.jobs.wait(bad),
        lambda c: c.jobs.wait([bad]),
        lambda c: c.jobs.start(bad, "test_noop"),
        lambda c: c.projects.get(bad),
        lambda c: c.projects.delete(bad),
    ]
    for call in calls:
        with pytest.raises(TypeError):
            driver.run(call)
    assert transport.seen == []


# -- lost answers -------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_lost_answers_to_start_create_and_delete_make_one_of_each(working: Api, mode: str) -> None:
    alice = working.account("alice", rate_limit=PLENTY)
    services, user = working.services, alice.user

    post_lost = edge(mode, drop_first="POST")
    project = Driver(mode, working.base, alice.key, transport=post_lost).run(
        lambda c: c.projects.create("once")
    )
    assert [p.name for p in services.projects(user)] == ["default", "once"]
    posts = post_lost.requests("POST")
    assert len(posts) == 2 and posts[1].response_headers.get("idempotent-replayed") == "true"

    post_lost = edge(mode, drop_first="POST")
    job = Driver(mode, working.base, alice.key, transport=post_lost).run(
        lambda c: c.jobs.start(project.id, "test_noop")
    )
    assert [j.id for j in services.jobs.page(user, project_id=project.id)] == [job.id]
    keys = {p.headers["idempotency-key"] for p in post_lost.requests("POST")}
    assert len(keys) == 1

    delete_lost = edge(mode, drop_first="DELETE")
    Driver(mode, working.base, alice.key, transport=delete_lost).run(
        lambda c: c.projects.delete(project.id)
    )
    assert [d.status for d in delete_lost.requests("DELETE")] == [204, 404]
    assert [p.name for p in services.projects(user)] == ["default"]


@pytest.mark.parametrize("mode", MODES)
def test_jobs_list_newest_first_filtered_and_limited(working: Api, mode: str) -> None:
    alice = working.account("alice", rate_limit=PLENTY)

    async def scenario(c: Any) -> dict[str, list[ProjectJob]]:
        project = await aw(c.projects.create("listed"))
        made = [
            await aw(c.jobs.start(project, "test_noop")),
            await aw(c.jobs.start(project, "test_fail")),
            await aw(c.jobs.start(project, "test_noop")),
        ]
        await aw(c.jobs.wait(made, policy=FAST))
        return {
            "all": await aw(c.jobs.list(project)),
            "two": await aw(c.jobs.list(project, limit=2)),
            "failed": await aw(c.jobs.list(project, status=["failed"])),
            "noop": await aw(c.jobs.list(project, type="test_noop")),
            "made": made,
        }

    out = Driver(mode, working.base, alice.key).run(scenario)
    ids = [j.id for j in out["made"]]
    assert [j.id for j in out["all"]] == ids[::-1]
    assert [j.id for j in out["two"]] == ids[::-1][:2]
    assert [j.id for j in out["failed"]] == [ids[1]]
    assert [j.id for j in out["noop"]] == [ids[2], ids[0]]


# -- reads of collected data ---------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_reads_of_collected_data_follow_pages_and_never_start_work(idle: Api, mode: str) -> None:
    alice = idle.account("alice", rate_limit=PLENTY)
    pid = alice.user.default_project_id
    transport = edge(mode)
    driver = Driver(mode, idle.base, alice.key, transport=transport)
    with pytest.raises(NotFoundError):  # nothing collected yet: 404, and no job started
        driver.run(lambda c: c.projects.read(pid, "data/test_crawl"))
    assert idle.services.jobs.page(alice.user, project_id=pid) == []

    first = collected_job(idle.services, alice.user, pid, {"pages": 1})
    second = collected_job(idle.services, alice.user, pid, {"pages": 2})
    latest = driver.run(lambda c: c.projects.read(pid, "data/test_crawl", subject="shop.test"))
    assert latest["job_id"] == second.id and latest["data"] == {"pages": 2}
    history = driver.run(lambda c: c.projects.read_all(pid, "data/test_crawl/history", limit=1))
    assert [row["job_id"] for row in history] == [second.id, first.id]
    pages = transport.requests("GET", f"/v1/projects/{pid}/data/test_crawl/history")
    assert len(pages) == 2  # one row a page: the second page says there is no more
    assert {j.id for j in idle.services.jobs.page(alice.user, project_id=pid)} == {
        first.id,
        second.id,
    }

    for odd in ("../jobs", "/data/test_crawl", "data//x", "data/test_crawl?x=1", ""):
        with pytest.raises(ValueError, match="what: a read under"):
            driver.run(lambda c, odd=odd: c.projects.read(pid, odd))
    with pytest.raises(NotFoundError):  # another user's project: 404 as everywhere
        bob = Driver(mode, idle.base, idle.account("bob", rate_limit=PLENTY).key)
        bob.run(lambda c: c.projects.read(pid, "data/test_crawl"))
