"""A ``geo_lookup`` whose worker dies mid-prompt is resumed by another worker: the prompts
already answered are never asked again (one item per prompt), the one in flight is."""

from __future__ import annotations

import signal
import threading
from pathlib import Path

import pytest

from seojobs.kinds import load_registry
from seojobs.services import Services
from seojobs.store.db import Database
from tests.conftest import make_settings
from tests.fakes.ai_search import OPENAI_KEY, Canned, FakeOpenAi
from tests.fakes.server import serve
from tests.procs import Procs
from tests.waiting import wait_until

HOSE = "What is the best garden hose?"
REEL = "Which hose reel should I buy?"


@pytest.mark.slow
def test_a_lookup_whose_worker_is_sigkilled_asks_only_the_unanswered_prompt_again(
    store_url: str, tmp_path: Path
) -> None:
    fake = FakeOpenAi()
    fake.answers[HOSE] = Canned("Acme.", [("https://acme.example/", "Acme")])
    fake.answers[REEL] = Canned("Zeta.", [("https://zeta.example/", "Zeta")])
    fake.gates[REEL] = threading.Event()
    with serve(fake.app) as base:
        env = {
            "SEOJOBS_LEASE_SECONDS": "1.5",
            "SEOJOBS_OPENAI_API_KEY": OPENAI_KEY,
            "SEOJOBS_OPENAI_BASE_URL": base + "/v1",
        }
        settings = make_settings(store_url, openai_api_key=OPENAI_KEY, openai_base_url=base)
        services = Services(Database(store_url), settings, load_registry(settings))
        procs = Procs(store_url, tmp_path)
        try:
            user = services.accounts.create_user("alice").user
            project = services.accounts.create_project(user, "acme")
            params = {"prompts": [HOSE, REEL], "domain": "acme.example"}
            job, _ = services.jobs.create(user, "geo_lookup", params, project_id=project.id)
            victim = procs.worker(**env)

            def hose_done_reel_asked() -> bool:
                items = {i.input: i for i in services.jobs.items(user, job.id)}
                asked = [r.body["input"] for r in fake.requests]
                return items[HOSE].finished_at is not None and REEL in asked

            wait_until(hose_done_reel_asked, timeout=60)
            victim.send_signal(signal.SIGKILL)
            victim.wait(timeout=30)
            fake.gates[REEL].set()
            assert not services.jobs.get(user, job.id).is_final
            procs.worker(**env)
            wait_until(lambda: services.jobs.get(user, job.id).is_final, timeout=120)
            done = services.jobs.get(user, job.id)
            latest = services.collections.latest_each(user, project.id, "geo_lookup")
        finally:
            procs.stop_all()
            services.db.dispose()
    assert done.state == "completed", (done.error_code, done.error, procs.exits())
    asked = [r.body["input"] for r in fake.requests]
    # Answered before the kill: never asked again. The killed call, then again (and, under
    # load, once more for each further claim lost to heartbeats too late for the lease).
    assert asked.count(HOSE) == 1 and done.rescue_count >= 1
    assert 2 <= asked.count(REEL) <= 1 + done.rescue_count
    answers = [c for c in latest if c.subject != "share-of-voice"]  # and the lookup's voice
    assert {c.data["prompt"]: c.data["domain_cited"] for c in answers} == {HOSE: True, REEL: False}
    assert {c.job_id for c in latest} == {job.id}
