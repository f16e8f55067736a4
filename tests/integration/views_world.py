"""One project with data of every kind that has a dashboard view, collected by real jobs against
the test fakes (rank checks, backlink refreshes and analyses, and GEO twice, so their views
have a previous collection), for the tests of the views. Built once per module: the jobs are
the cost."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from fastapi.responses import HTMLResponse

from tests.api_helpers import TERMINAL, Account, Api, api
from tests.conftest import make_settings
from tests.fakes.ai_search import OPENAI_KEY, PERPLEXITY_KEY, Canned, FakeOpenAi, FakePerplexity
from tests.fakes.backlinks import FakeDataForSeoBacklinks, Link
from tests.fakes.crux import KEY as CRUX_KEY
from tests.fakes.crux import FakeCrux
from tests.fakes.donor_site import TARGET, DonorSite
from tests.fakes.keywords import FakeDataForSeoKeywords
from tests.fakes.local import FakeSerpApiLocal, listing
from tests.fakes.ranks import FakeSerperRanks
from tests.fakes.server import serve
from tests.fakes.tech_site import TechSite
from tests.integration.domain_world import DOMAIN, domain_world
from tests.waiting import wait_until

KEYWORDS = ["garden hose", "hose reel", "pruning shears"]
HOSE = "What is the best garden hose?"
REEL = "Which hose reel should I buy?"
SOURCES = [
    ("https://review.example/best-hoses", "Best hoses 2026"),
    ("https://shop.acme.example/hoses", "Acme hoses"),
]
SEEDS = ["garden hose"]
PLUMBER = "hose repair austin"
ACME_SHOP = listing(
    "Acme Hoses", website="https://www.acme.example/", rating=4.6, reviews=120,
    categories=["Garden centre"],
)  # fmt: skip
RIVAL_SHOP = listing("Zeta Garden", website="https://zeta.example/", rating=4.8, reviews=400)


@dataclass
class World:
    app: Api
    owner: Account
    project: int
    jobs: dict[str, list[int]] = field(default_factory=dict)  # kind: its jobs, oldest first

    def last(self, kind: str) -> int:
        return self.jobs[kind][-1]


def finished(client: httpx.Client, body: dict[str, Any], project: int) -> int:
    started = client.post(f"/v1/projects/{project}/jobs", json=body)
    assert started.status_code == 202, started.text
    job_id = int(started.json()["data"]["id"])
    done: dict[str, Any] = wait_until(
        lambda: (d := client.get(f"/v1/jobs/{job_id}").json()["data"])["status"] in TERMINAL and d,
        timeout=90,
    )
    assert done["status"] == "completed", done["error"]
    return job_id


LOOPBACK_ONLY = "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost"


def _vitals_page() -> FastAPI:
    app = FastAPI()

    @app.get("/")
    async def page() -> HTMLResponse:
        return HTMLResponse(
            '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Vitals</title>'
            '<meta name="viewport" content="width=device-width"></head><body><h1>Measured</h1>'
            "<p>A page measured by Lighthouse.</p></body></html>"
        )

    return app


@contextlib.contextmanager
def _fakes() -> Iterator[dict[str, Any]]:
    serper, openai, keywords = FakeSerperRanks(), FakeOpenAi(), FakeDataForSeoKeywords()
    serper.results("garden hose", "https://shop.example/", "https://www.acme.example/hoses/")
    serper.features("garden hose", "featured_snippet", "people_also_ask")
    serper.results("hose reel", "https://acme.example/reels", "https://b.example/")
    serper.results("pruning shears", "https://notacme.example/")
    openai.answers[HOSE] = Canned("Acme makes the best garden hose; ACME hoses last.", SOURCES)
    openai.answers[REEL] = Canned("Try the Zeta reel.", SOURCES[:1])
    keywords.pages["https://shop.example/hoses"] = ["garden hose", "hose reel"]
    # One DataForSEO: the backlinks index answers beside the keyword endpoints.
    index = FakeDataForSeoBacklinks()
    index.links += [
        Link("https://blog.garden.example/hoses", "https://acme.example/", "Acme hoses", rank=310),
        Link("https://news.example/2026/reels", "https://acme.example/reels", "reels", rank=120),
        Link("https://forum.example/t/9", "https://acme.example/", "acme", dofollow=False),
        Link("https://old.example/a", "https://acme.example/", "Acme hoses", rank=40),
    ]
    keywords.app.router.routes += [
        r for r in index.app.router.routes if getattr(r, "path", "").startswith("/v3/backlinks/")
    ]
    perplexity = FakePerplexity()
    places = FakeSerpApiLocal()
    places.places(PLUMBER, RIVAL_SHOP, ACME_SHOP)
    with (
        serve(places.app) as places_base,
        serve(serper.app) as serper_base,
        serve(openai.app) as openai_base,
        serve(perplexity.app) as perplexity_base,
        serve(keywords.app) as keywords_base,
    ):
        yield {
            "serper": serper,
            "openai": openai,
            "places": places,
            "index": index,
            "settings": {
                "serpapi_key": "serpapi-key",
                "serpapi_base_url": places_base,
                "serper_key": "serper-key",
                "serper_base_url": serper_base,
                "openai_api_key": OPENAI_KEY,
                "openai_base_url": openai_base + "/v1",
                "openai_model": "gpt-5",
                "perplexity_api_key": PERPLEXITY_KEY,
                "perplexity_base_url": perplexity_base,
                "dataforseo_login": "dfs-login",
                "dataforseo_password": "dfs-password",
                "dataforseo_base_url": keywords_base,
                "provider_backoff": 0.0,
                "provider_retries": 1,
                "allow_private_networks": True,
            },
        }


@contextlib.contextmanager
def views_world(store_url: str, tmp_path: Path, *, vitals: bool = True) -> Iterator[World]:
    """The app (shared: tests make their own users) and the project, its data collected
    (``vitals``: with one real Lighthouse run, about 10 s of CPU)."""
    with (
        pytest.MonkeyPatch.context() as monkeypatch,
        domain_world(monkeypatch, tmp_path),
        _fakes() as fakes,
        contextlib.ExitStack() as stack,
        TechSite().running() as tech,
    ):
        site = DonorSite()
        donors = stack.enter_context(site.running())
        measured = stack.enter_context(serve(_vitals_page()))
        crux = FakeCrux({f"{measured}/"})
        crux_base = stack.enter_context(serve(crux.app))
        monkeypatch.setenv("SEOJOBS_WEB_VITALS_RESOLVER_RULES", LOOPBACK_ONLY)
        monkeypatch.setenv("SEOJOBS_WEB_VITALS_REPORT_DIR", str(tmp_path))
        values = fakes["settings"] | {"crux_api_key": CRUX_KEY, "crux_base_url": crux_base}
        settings = make_settings(store_url, **values)
        with api(settings, run_worker=True) as app:
            app.shared = True
            owner = app.account("owner", rate_limit="100000/minute")
            client = app.client(owner)
            project = client.post("/v1/projects", json={"name": "acme"}).json()["data"]["id"]
            world = World(app, owner, project)

            def run(kind: str, params: dict[str, Any]) -> None:
                job = finished(client, {"type": kind, "params": params}, project)
                world.jobs.setdefault(kind, []).append(job)

            links = [
                {"donor": f"{donors}/post", "target": TARGET},
                {"donor": f"{donors}/gone", "target": TARGET},
                {"donor": f"{donors}/moved", "target": TARGET},
            ]
            run("backlink_refresh", {"links": links})
            # The post drops its link (lost); the gone page comes back with one (new).
            site.pages["/gone"] = site.pages["/post"]
            site.pages["/post"] = "<!doctype html><html><head><title>t</title></head></html>"
            run("backlink_refresh", {"links": links})
            run("backlink_analysis", {"domain": "acme.example"})
            # The old page's link is gone from the index; a new one appears.
            index: FakeDataForSeoBacklinks = fakes["index"]
            index.links.pop()
            index.links.append(
                Link("https://review.example/best", "https://acme.example/", "best hose", rank=90)
            )
            run("backlink_analysis", {"domain": "acme.example"})
            geo = {"prompts": [HOSE, REEL], "brand": ["Acme"], "domain": "acme.example"}
            run("geo_lookup", geo)
            fakes["openai"].answers[REEL] = Canned("Acme reels are fine.", SOURCES)
            run("geo_lookup", geo)
            local = {"keywords": [PLUMBER], "location": "Austin,Texas,United States",
                     "domain": "acme.example", "provider": "serpapi"}  # fmt: skip
            run("local_rank_check", local)
            fakes["places"].places(PLUMBER, ACME_SHOP, RIVAL_SHOP)  # Acme climbs to 1
            run("local_rank_check", local)
            run("domain_lookup", {"domain": DOMAIN})
            run("tech_stack", {"urls": [f"{tech}/", f"{tech}/shop/cart"]})
            if vitals:  # mobile only: one run
                run("web_vitals", {"urls": [f"{measured}/"], "form_factors": ["mobile"]})
            run("keyword_research", {"url": "https://shop.example/hoses", "limit": 20})
            # Last: the project page lists the latest jobs, the rank checks among them.
            ranks = {"keywords": KEYWORDS, "target": "acme.example"}
            run("rank_check", ranks)
            # The hose climbs to 1, the reel drops out, the shears stay unranked.
            fakes["serper"].results("garden hose", "https://acme.example/hoses/")
            fakes["serper"].results("hose reel", "https://b.example/")
            run("rank_check", ranks)
            yield world
