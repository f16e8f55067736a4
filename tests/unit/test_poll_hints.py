"""The built-in kinds' poll hints follow the seeds: seed 000's schedule for the indexing jobs,
seed 001's table ("match the interval to the work") for the rest. On the SDK's old table,
keyed by names that are not kinds, ``geo_lookup`` was polled at 15 s instead of 10 s."""

from __future__ import annotations

import pytest

from seojobs.client import PollPolicy
from seojobs.client.models import PollHint as ServedHint
from seojobs.engine.hints import DEFAULT_POLL_HINT, PollHint
from seojobs.kinds import load_registry
from seojobs.settings import Settings

# Seed 001 "Poll intervals" (first interval, ceiling), seed 000 for the indexing kinds. A kind
# the seeds give no interval keeps seed 000's schedule.
SEEDS = {
    "index_submit": (15, 300),
    "index_check": (15, 300),
    "rank_check": (30, 30),
    "local_rank_check": (30, 30),  # seed 001: rank tracking, 30 s
    "backlink_refresh": (30, 30),
    "backlink_analysis": (30, 30),  # seed 001: "Backlink analysis | Minutes | 30s"
    "web_vitals": (15, 15),
    "site_audit": (30, 60),
    "geo_lookup": (10, 10),
}
REGISTRY = load_registry(Settings(plugins=[]))


@pytest.mark.parametrize("name", REGISTRY.names())
def test_the_sdk_polls_every_built_in_kind_at_its_seed_interval(name: str) -> None:
    hint = REGISTRY.get(name).poll_hint
    first, ceiling = SEEDS.get(name, (DEFAULT_POLL_HINT.first, DEFAULT_POLL_HINT.ceiling))
    assert (hint.first, hint.ceiling) == (first, ceiling)
    served = ServedHint.model_validate(hint.as_dict())  # as /v1/job-types carries it
    policy = PollPolicy.from_hint(served)
    assert (policy.start, policy.ceiling, policy.deadline) == (first, ceiling, hint.deadline)


@pytest.mark.parametrize("bad", [(0, 10, 60), (20, 10, 60), (10, 10, 0)])
def test_a_hint_refuses_nonsense(bad: tuple[float, float, float]) -> None:
    with pytest.raises(ValueError, match="poll hint"):
        PollHint(*bad)
