"""Change events (issue 27) from scheduled collections against the fakes: a schedule fires a
kind's job, an in-process worker runs it against a local fake (Serper, a donor site, a site to
audit), and the completion writes the outbox rows of what changed since the previous
collection of the subject. Nothing is written when nothing changed; endpoint filters apply.
The rank and scheduled-check tests run on both stores (their SQL is the store's), the others
on SQLite."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest
from standardwebhooks import Webhook
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response
from starlette.routing import Route

from seojobs.engine import maintenance
from seojobs.fetch.webhook import WebhookSender
from seojobs.kinds import load_registry
from seojobs.records import UserRecord
from seojobs.services import Services
from seojobs.store.coltypes import utcnow
from seojobs.store.db import Database
from seojobs.webhook_records import EndpointRecord
from tests.api_helpers import providers
from tests.conftest import make_settings
from tests.fakes.backlinks import FakeDataForSeoBacklinks, Link
from tests.fakes.donor_site import TARGET, DonorSite
from tests.fakes.ranks import FakeSerperRanks
from tests.fakes.server import serve
from tests.fakes.webhook_receiver import receiver
from tests.waiting import run_until_final

HOOK = "http://127.0.0.1:9/hook"  # never dialled here: the outbox is read, not sent


@contextlib.contextmanager
def world(store_url: str, **settings: Any) -> Iterator[tuple[Services, UserRecord, int]]:
    made = make_settings(store_url, allow_private_networks=True, **settings)
    services = Services(Database(store_url), made, load_registry(made))
    try:
        user = services.accounts.create_user("alice").user
        project = services.accounts.create_project(user, "site")
        yield services, user, project.id
    finally:
        services.db.dispose()


class Ticks:
    """A schedule's ticks, fired one by one by the maintenance loop, each run to its end."""

    def __init__(self, services: Services, user: UserRecord, schedule_id: int) -> None:
        self.services, self.user, self.schedule_id = services, user, schedule_id
        self.at = utcnow() - timedelta(hours=12)
        self.seen: set[int] = set()

    async def run(self) -> None:
        services = self.services
        fire = services.schedules.fire
        assert maintenance.run_once(services.db, services.settings, "a", self.at, fire).fired == 1
        self.at += timedelta(hours=1)
        [job] = [
            j
            for j in services.jobs.page(self.user)
            if j.schedule_id == self.schedule_id and j.id not in self.seen
        ]
        self.seen.add(job.id)
        done = await run_until_final(services, self.user, job, timeout=60)
        assert done.state == "completed", done.error


def schedule(
    services: Services, user: UserRecord, project: int, kind: str, params: dict[str, Any]
) -> Ticks:
    made = services.schedules.create(
        user,
        name=kind,
        kind=kind,
        params=params,
        every_seconds=3600,
        start_at=utcnow() - timedelta(hours=12),
        project_id=project,
    )
    return Ticks(services, user, made.id)


def events(services: Services, user: UserRecord, hook: EndpointRecord) -> list[dict[str, Any]]:
    """The endpoint's outbox, oldest first, as the bodies it will be sent (a job event's
    body is made when it is first sent: its type only)."""
    found = services.webhooks.deliveries(user, hook.id, before=None, limit=100)
    return [
        json.loads(d.payload) if d.payload else {"type": d.event_type}
        for d, _attempts in reversed(found)
    ]


def hook(services: Services, user: UserRecord, *events: str, **filters: Any) -> EndpointRecord:
    return services.webhooks.create(user, url=HOOK, events=list(events), filters=filters or None)


# -- rank.changed -------------------------------------------------------------------------------


def serp(position: int) -> list[str]:
    others = [f"https://other{n}.example/" for n in range(1, 10)]
    return [*others[: position - 1], "https://www.example.com/hoses/", *others[position - 1 :]]


async def test_a_keyword_moving_8_to_3_sends_rank_changed_once(store_url: str) -> None:
    """On both stores: the comparison's SQL is the store's."""
    serper = FakeSerperRanks()
    serper.results("garden hose", *serp(8))
    with (
        serve(serper.app) as serper.base_url,
        world(
            store_url,
            serper_key="serper-key",
            serper_base_url=serper.base_url,
            provider_backoff=0.0,
            provider_retries=1,
        ) as (services, user, project),
    ):
        every = hook(services, user, "rank.changed")
        jobs_only = hook(services, user, "job.completed")
        near = hook(services, user, "rank.changed", **{"rank.changed": {"min_change": 5, "top": 3}})
        far = hook(services, user, "rank.changed", **{"rank.changed": {"min_change": 6}})
        top2 = hook(services, user, "rank.changed", **{"rank.changed": {"top": 2}})
        ticks = schedule(
            services,
            user,
            project,
            "rank_check",
            {"keywords": ["garden hose"], "target": "example.com"},
        )
        await ticks.run()  # the first check: nothing to compare with
        await ticks.run()  # the same position: nothing changed
        assert events(services, user, every) == []
        serper.results("garden hose", *serp(3))
        await ticks.run()

        [event] = events(services, user, every)
        assert event["type"] == "rank.changed" and event["timestamp"]
        data = event["data"]
        assert (data["project_id"], data["kind"], data["keyword"]) == (
            project,
            "rank_check",
            "garden hose",
        )
        assert (data["change"], data["position_before"], data["position_after"]) == ("moved", 8, 3)
        assert data["moved_by"] == 5
        # before and after are the rankings read's rows
        assert (data["before"]["position"], data["after"]["position"]) == (8, 3)
        assert data["after"]["url"] == "https://www.example.com/hoses/"
        assert data["before"]["job_id"] != data["after"]["job_id"]
        # the filters: min_change 5 within the top 3 hears it; 6 places or the top 2 do not
        assert [e["type"] for e in events(services, user, near)] == ["rank.changed"]
        assert events(services, user, far) == events(services, user, top2) == []
        assert {e["type"] for e in events(services, user, jobs_only)} == {"job.completed"}

        # Sent signed, as every delivery (the Standard Webhooks reference verifies it).
        with receiver() as consumer:
            signed = services.webhooks.create(
                user, url=consumer.url + "/ranks", events=["rank.changed"]
            )
            serper.results("garden hose", *serp(4))
            await ticks.run()
            await dispatch(services)
            [got] = consumer.at("/ranks")
        verified = Webhook(signed.secret).verify(got.body, got.headers)
        assert verified["type"] == "rank.changed"
        assert (verified["data"]["position_before"], verified["data"]["position_after"]) == (3, 4)


# -- backlink.lost / new / changed -------------------------------------------------------------


async def test_a_donor_removing_its_link_sends_backlink_lost_with_the_reason(
    sqlite_url: str,
) -> None:
    site = DonorSite()
    site.pages["/kept"] = f'<html><body><a href="{TARGET}">kept</a></body></html>'
    with site.running() as base, world(sqlite_url) as (services, user, project):
        lost = hook(services, user, "backlink.lost")
        every = services.webhooks.create(user, url=HOOK, events="*")
        links = [{"donor": f"{base}{path}", "target": TARGET} for path in ("/post", "/kept")]
        links.append({"donor": f"{base}/landing-page", "target": TARGET})
        ticks = schedule(services, user, project, "backlink_refresh", {"links": links})
        await ticks.run()
        await ticks.run()
        assert [e["type"] for e in events(services, user, every)] == ["job.completed"] * 2
        site.pages["/post"] = "<html><body><p>The link is gone.</p></body></html>"
        del site.pages["/landing-page"]  # now 404
        site.pages["/kept"] = (
            f'<html><body><a href="{TARGET}" rel="nofollow">kept</a></body></html>'
        )
        await ticks.run()

        found = {
            e["data"]["donor"].removeprefix(base): e["data"] for e in events(services, user, lost)
        }
        assert set(found) == {"/post", "/landing-page"}
        post = found["/post"]
        assert (post["reason"], post["target"]) == ("link_removed", TARGET)
        assert post["detail"] == "No link to the target on the donor"
        assert post["before"]["link_status"] == "found"
        assert post["after"]["link_status"] == "missing"
        assert found["/landing-page"]["reason"] == "page_gone"
        assert found["/landing-page"]["detail"] == "HTTP 404"
        kinds = [e["type"] for e in events(services, user, every)]
        assert sorted(kinds[2:]) == [
            "backlink.changed",
            "backlink.lost",
            "backlink.lost",
            "job.completed",
        ]
        [changed] = [
            e["data"] for e in events(services, user, every) if e["type"] == "backlink.changed"
        ]
        assert changed["donor"] == f"{base}/kept" and changed["reasons"] == ["now_nofollow"]

        # Both come back: backlink.new, with why (the link added again; the page back).
        added = hook(services, user, "backlink.new")
        site.pages["/post"] = f'<html><body><a href="{TARGET}">back</a></body></html>'
        site.pages["/landing-page"] = f'<html><body><a href="{TARGET}">here</a></body></html>'
        await ticks.run()
        back = {
            e["data"]["donor"].removeprefix(base): e["data"] for e in events(services, user, added)
        }
        assert {donor: b["reason"] for donor, b in back.items()} == {
            "/post": "link_added",
            "/landing-page": "page_back",
        }
        assert back["/post"]["before"]["link_status"] == "missing"
        assert back["/post"]["after"]["link_status"] == "found"
        assert len(events(services, user, lost)) == 2  # nothing more lost


# -- backlink_analysis.lost / new (the index's view) -------------------------------------------


async def test_an_index_dropping_a_link_sends_backlink_analysis_lost_once(
    sqlite_url: str,
) -> None:
    index = FakeDataForSeoBacklinks()
    site = "https://shop.example/"
    dropped = Link("https://dropped.example/a", site, "dropped", rank=50)
    index.links += [Link("https://kept.example/a", site, "kept", rank=90), dropped]
    with (
        serve(index.app) as base,
        world(
            sqlite_url,
            dataforseo_login="dfs-login",
            dataforseo_password="dfs-password",
            dataforseo_base_url=base,
            provider_backoff=0.0,
            provider_retries=1,
        ) as (services, user, project),
    ):
        lost = hook(services, user, "backlink_analysis.lost")
        new = hook(services, user, "backlink_analysis.new")
        ticks = schedule(services, user, project, "backlink_analysis", {"domain": "shop.example"})
        await ticks.run()  # the first analysis: every link is new, nothing is sent
        await ticks.run()  # the same links: nothing changed
        assert events(services, user, lost) == events(services, user, new) == []

        index.links.remove(dropped)  # the index no longer lists it
        await ticks.run()
        [event] = events(services, user, lost)
        data = event["data"]
        assert (event["type"], data["kind"], data["subject"]) == (
            "backlink_analysis.lost",
            "backlink_analysis",
            "shop.example",
        )
        assert (data["target"], data["lost"]) == ("shop.example", 1)
        [link] = data["links"]
        assert (link["url_from"], link["url_to"], link["reason"]) == (
            "https://dropped.example/a",
            site,
            "gone",
        )
        # before and after are the analysis read's header (totals, no links)
        assert (data["before"]["summary"]["backlinks"], data["after"]["summary"]["backlinks"]) == (
            2,
            1,
        )
        assert "links" not in data["after"]
        assert events(services, user, new) == []

        index.links.append(Link("https://fresh.example/a", site, "fresh", rank=10))
        await ticks.run()
        assert len(events(services, user, lost)) == 1  # nothing more was lost
        [added] = events(services, user, new)
        assert (added["data"]["new"], added["data"]["links"][0]["url_from"]) == (
            1,
            "https://fresh.example/a",
        )


# -- audit.issues_new ---------------------------------------------------------------------------


def _page(body: str) -> HTMLResponse:
    head = (
        "<title>A page about garden hoses</title>"
        '<meta name="description" content="Garden hoses, reels and everything around them.">'
    )
    return HTMLResponse(f"<!doctype html><html><head>{head}</head><body>{body}</body></html>")


@contextlib.contextmanager
def small_site(links: list[str]) -> Iterator[str]:
    async def home(_request: Request) -> Response:
        return _page("<h1>Hoses</h1>" + "".join(f'<a href="{h}">{h}</a>' for h in links))

    async def about(_request: Request) -> Response:
        return _page('<h1>About</h1><a href="/">home</a>')

    async def robots(_request: Request) -> Response:
        return PlainTextResponse("User-agent: *\nAllow: /\n")

    async def missing(_request: Request) -> Response:
        return HTMLResponse("gone", status_code=404)

    app = Starlette(
        routes=[
            Route("/", home),
            Route("/about", about),
            Route("/robots.txt", robots),
            Route("/{path:path}", missing),
        ]
    )
    with serve(app) as base:
        yield base


async def test_a_second_audit_with_a_new_broken_link_sends_audit_issues_new(
    sqlite_url: str,
) -> None:
    links = ["/about"]
    with small_site(links) as base, world(sqlite_url) as (services, user, project):
        every = hook(services, user, "audit.issues_new")
        errors_only = hook(
            services, user, "audit.issues_new", **{"audit.issues_new": {"severity": "error"}}
        )
        params = {
            "start_url": f"{base}/",
            "include_sitemaps": False,
            "thresholds": {"slow_response_ms": 600_000},
        }

        async def audit() -> None:  # audits cannot be scheduled: each one started
            job, _ = services.jobs.create(user, "site_audit", params, project_id=project)
            done = await run_until_final(services, user, job, timeout=60)
            assert done.state == "completed", done.error

        await audit()
        await audit()
        assert events(services, user, every) == []
        links.append("/broken")
        await audit()

        [event] = events(services, user, every)
        assert event["type"] == "audit.issues_new"
        data = event["data"]
        first = data["issues"][0]
        assert (first["code"], first["severity"], first["new"]) == (
            "broken_internal_link",
            "error",
            1,
        )
        assert data["new_by_severity"]["error"] >= 1
        severities = [i["severity"] for i in data["issues"]]
        order = ["error", "warning", "notice"]
        assert severities == sorted(severities, key=order.index)  # errors first
        assert data["before"]["data"]["issues_by_code"].get("broken_internal_link", 0) == 0
        assert data["after"]["data"]["issues_by_code"]["broken_internal_link"] == 1
        assert [e["type"] for e in events(services, user, errors_only)] == ["audit.issues_new"]


# -- the declarations on their own (no job: cheap) ----------------------------------------------


def _at(days: int) -> str:
    return (utcnow() + timedelta(days=days)).replace(microsecond=0).isoformat()


@pytest.mark.parametrize(
    ("before_days", "after_days", "days", "sent"),
    [
        (None, 20, 30, True),  # the first lookup, within 30 days
        (45, 29, 30, True),  # came within them
        (29, 28, 30, False),  # already within them: told once
        (45, 40, 30, False),  # not yet
        (100, 80, 90, True),  # an endpoint asking 90 days ahead
        (10, 360, 30, False),  # renewed
    ],
)
def test_domain_expiring_is_heard_once_as_it_comes_within_the_days(
    before_days: int | None, after_days: int, days: int, sent: bool
) -> None:
    from seojobs.engine.changes import event_data
    from seojobs.kinds.domain_lookup.reads import CHANGES, ExpiringFilters
    from seojobs.records import CollectionRecord

    [event] = CHANGES
    now = utcnow()

    def lookup(n: int, left: int | None, at: datetime) -> CollectionRecord | None:
        if left is None:
            return None
        data = {"rdap": {"expires": _at(left)}, "tls": {"not_after": _at(400)}}
        return CollectionRecord(n, 1, "domain_lookup", "example.com", n, data, True, at)

    before = lookup(1, before_days, now)
    after = lookup(2, after_days, now)
    assert after is not None
    changed = event.compare(before, after)
    heard = changed is not None and bool(
        event.matches
        and event.matches(ExpiringFilters(days=days), event_data(event, before, after, changed))
    )
    assert heard is sent


# -- scheduled_check.completed (seed 000's checker) ---------------------------------------------


async def dispatch(services: Services) -> None:
    """Send what the outbox holds (as a worker's dispatcher does), until nothing is due."""
    sender = WebhookSender(services.settings)
    try:
        dispatcher = services.webhook_dispatcher()
        while await dispatcher.run_once(sender):
            pass
    finally:
        await sender.aclose()


async def test_a_submissions_scheduled_check_sends_scheduled_check_completed(
    store_url: str,
) -> None:
    """On both stores: the completion's outbox statement is the store's."""
    with providers() as fakes, receiver() as consumer:
        settings = fakes.settings(store_url, day_seconds=0.001)
        services = Services(Database(store_url), settings, load_registry(settings))
        try:
            user = services.accounts.create_user("alice").user
            services.webhooks.new_callback_secret(user)
            checks = services.webhooks.create(
                user, url=consumer.url + "/checks", events=["scheduled_check.completed"]
            )
            services.webhooks.create(user, url=consumer.url + "/jobs", events=["job.completed"])
            params = {"urls": ["https://example.com/a"], "engine": "google", "checker": 1}
            submission, _ = services.jobs.create(
                user, "index_submit", params, webhook_url=consumer.url + "/own"
            )
            plain, _ = services.jobs.create(
                user, "index_check", {"urls": ["https://example.com/b"]}
            )
            [check] = [j for j in services.jobs.page(user, kind="index_check") if j.id != plain.id]
            for job in (submission, plain, check):
                assert (await run_until_final(services, user, job, timeout=60)).state == "completed"
            await dispatch(services)
            [heard] = consumer.at("/checks")
            own = consumer.at("/own")
            jobs = consumer.at("/jobs")
        finally:
            services.db.dispose()

    event = Webhook(checks.secret).verify(heard.body, heard.headers)
    assert event["type"] == "scheduled_check.completed"
    assert (event["data"]["id"], event["data"]["type"]) == (check.id, "index_check")
    assert event["data"]["submission_id"] == submission.id
    # The submission's own webhook_url hears its end and its check's (seed 000).
    own_events = sorted((e["type"], e["data"]["id"]) for e in map(_body, own))
    assert own_events == [("job.completed", submission.id), ("scheduled_check.completed", check.id)]
    assert sorted(_body(r)["data"]["id"] for r in jobs) == sorted(
        [submission.id, plain.id, check.id]
    )


def _body(received: Any) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(received.body)
    return found


# -- job.progress -------------------------------------------------------------------------------


async def test_job_progress_goes_to_endpoints_that_ask_at_most_once_per_their_interval(
    sqlite_url: str,
) -> None:
    with world(sqlite_url) as (services, user, project):
        asked = hook(services, user, "job.progress", **{"job.progress": {"every_seconds": 3600}})
        every = services.webhooks.create(user, url=HOOK, events="*")
        urls = [f"https://example.com/{n}" for n in range(6)]
        job, _ = services.jobs.create(
            user, "test_items", {"urls": urls, "item_delay": 0.01}, project_id=project
        )
        assert (await run_until_final(services, user, job)).state == "completed"
        [told] = events(services, user, asked)  # many writes, one interval
        assert told["type"] == "job.progress"
        assert (told["data"]["id"], told["data"]["status"]) == (job.id, "processing")
        assert told["data"]["items_total"] == 6
        # "*" does not ask for progress
        assert [e["type"] for e in events(services, user, every)] == ["job.completed"]
