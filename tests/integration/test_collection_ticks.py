"""A project's collection fired three times (issue 29's tests): with a short
``SEOJOBS_DAY_SECONDS``, a daily collection of each provider kind not covered elsewhere
(``geo_lookup``, ``backlink_analysis``, ``backlink_refresh``), and of ``site_audit`` once enabled
(a crawl of a local fixture site), fired by the maintenance pass,
gives three completed jobs and three history points per subject, made with what the project
tracks and no params of the collection's own; reading them starts no job. ``rank_check`` is
tests/integration/test_project_tracking.py's, ``local_rank_check``
tests/integration/test_local_rank_schedule.py's. Audits and web vitals (opt-in) fire only once
enabled, charged like any job (web vitals' three runs would be three Lighthouse runs in the
browser; its collection is the same schedule). On both stores."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack
from datetime import timedelta
from typing import Any

import pytest

from seojobs.engine import maintenance
from seojobs.kinds import load_registry
from seojobs.services import Services
from seojobs.services.collection_config import CollectionEntry
from seojobs.store.coltypes import utcnow
from seojobs.store.db import Database
from tests.conftest import make_settings
from tests.fakes.ai_search import OPENAI_KEY, Canned, FakeOpenAi
from tests.fakes.audit_site import AuditSite
from tests.fakes.backlinks import FakeDataForSeoBacklinks, Link
from tests.fakes.donor_site import TARGET, DonorSite
from tests.fakes.server import serve
from tests.waiting import run_until_final

DAY = 60.0  # SEOJOBS_DAY_SECONDS: a "day" of a minute; the ticks are fired by hand
PROMPT = "What is the best garden hose?"
SITE = "acme.example"


@pytest.fixture
def world(store_url: str) -> Iterator[tuple[Services, dict[str, str]]]:
    openai, index, donors = FakeOpenAi(), FakeDataForSeoBacklinks(), DonorSite()
    openai.answers[PROMPT] = Canned("Acme makes the best hose.", [(f"https://{SITE}/h", "Acme")])
    index.links += [Link("https://blog.one.test/post", f"https://{SITE}/", "acme")]
    with ExitStack() as stack:
        openai_base = stack.enter_context(serve(openai.app))
        index.base_url = stack.enter_context(serve(index.app))
        donor_base = stack.enter_context(donors.running())
        audit_base = stack.enter_context(AuditSite(generated=5, sitemaps=False).running())
        settings = make_settings(
            store_url,
            openai_api_key=OPENAI_KEY,
            openai_base_url=openai_base + "/v1",
            dataforseo_login="dfs-login",
            dataforseo_password="dfs-password",
            dataforseo_base_url=index.base_url,
            allow_private_networks=True,  # the donor pages and the audited site are on loopback
            provider_retries=0,
            day_seconds=DAY,
            schedule_min_interval_seconds=1,
        )
        # The services' clock an hour behind: the collection starts then, and its three
        # ticks are past (their jobs due) when fired by hand a "day" (a minute) apart.
        earlier = lambda: utcnow() - timedelta(hours=1)  # noqa: E731
        services = Services(Database(store_url), settings, load_registry(settings), earlier)
        stack.callback(services.db.dispose)
        yield services, {"donor": donor_base, "audit": audit_base}


def _collection(kind: str, bases: dict[str, str]) -> dict[str, Any] | None:
    """What the collection sets itself: nothing, but the refresh's pairs (what the
    analysis's monitor adds to it, as tests/integration/test_backlink_analysis.py does) and
    the audit's start (its site: the project's domain is not on loopback)."""
    if kind == "backlink_refresh":
        return {"links": [{"donor": f"{bases['donor']}/post", "target": TARGET}]}
    if kind == "site_audit":
        return {"start_url": f"{bases['audit']}/g/0", "max_pages": 5}
    return None


@pytest.mark.parametrize(
    "kind", ["geo_lookup", "backlink_analysis", "backlink_refresh", "site_audit"]
)
async def test_a_daily_collection_fired_three_times_gives_three_history_points(
    world: tuple[Services, dict[str, str]], kind: str
) -> None:
    services, bases = world
    user = services.accounts.create_user("alice").user
    tracked = {"domain": SITE, "brand_names": ["Acme"], "competitors": [{"domain": "z.example"}]}
    project = services.accounts.create_project(user, "acme", tracked).id
    services.tracked.add_prompts(user, project, [PROMPT])
    opt_in = True if kind == "site_audit" else None  # seed 001 runs audits when started
    entry = CollectionEntry(frequency="daily", enabled=opt_in, params=_collection(kind, bases))
    [collected] = [c for c in services.collection.put(user, project, {kind: entry})
                   if c.kind.name == kind]  # fmt: skip
    assert collected.schedule is not None and collected.schedule.interval_seconds == DAY
    t0 = collected.schedule.next_tick_at
    seen: list[int] = []
    for tick in range(3):
        at = t0 + timedelta(seconds=DAY * tick)
        fire = services.schedules.fire
        assert maintenance.run_once(services.db, services.settings, "a", at, fire).fired == 1
        [job] = [j for j in services.jobs.page(user) if j.kind == kind and j.id not in seen]
        assert job.schedule_id == collected.schedule.id  # an ordinary job of the project
        done = await run_until_final(services, user, job, timeout=60)
        assert done.state == "completed", done.error
        seen.append(job.id)
    jobs_before = len(services.jobs.page(user))
    history = services.collections.history(user, project, kind, limit=100)
    points = Counter(h.subject for h in history)
    assert points and set(points.values()) == {3}, points  # three per subject
    assert {h.job_id for h in history} == set(seen)
    services.collections.latest_each(user, project, kind)
    assert len(services.jobs.page(user)) == jobs_before  # reads never start a job


@pytest.mark.parametrize(
    ("kind", "params"),
    [
        ("site_audit", {"start_url": "https://shop.example/", "max_pages": 20}),
        ("web_vitals", {"urls": ["https://shop.example/"]}),
    ],
)
def test_audits_and_vitals_are_collected_only_when_enabled_and_charged_like_any_job(
    store_url: str, kind: str, params: dict[str, Any]
) -> None:
    # Seed 001 runs them when started; a collection naming them stays off (opt-in, issue
    # 29.8) until enabled, then fires an ordinary job of the project, charged as a POST is.
    # The job is not run here (a browser's work): its creation is what the point is about.
    settings = make_settings(store_url, day_seconds=DAY, schedule_min_interval_seconds=1)
    earlier = lambda: utcnow() - timedelta(hours=1)  # noqa: E731
    services = Services(Database(store_url), settings, load_registry(settings), earlier)
    try:
        user = services.accounts.create_user("alice").user
        project = services.accounts.create_project(user, "shop").id
        quotas = [q.name for q in services.registry.get(kind).quotas]

        def charged() -> int:
            usage = services.quotas.usage(user)
            return sum(usage[name].used for name in quotas)

        def fire(at: Any) -> int:
            return maintenance.run_once(
                services.db, services.settings, "a", at, services.schedules.fire
            ).fired

        named = services.collection.put(user, project, {kind: CollectionEntry(params=params)})
        [off] = [c for c in named if c.kind.name == kind]
        assert off.schedule is not None and not off.schedule.enabled
        t0 = off.schedule.next_tick_at
        assert fire(t0) == 0 and services.jobs.page(user, project_id=project) == []
        assert charged() == 0
        services.collection.put(user, project, {kind: CollectionEntry(enabled=True)})
        assert fire(t0 + timedelta(seconds=DAY)) == 1
        [job] = services.jobs.page(user, project_id=project)
        assert (job.kind, job.state, job.schedule_id) == (kind, "pending", off.schedule.id)
        assert charged() > 0
    finally:
        services.db.dispose()
