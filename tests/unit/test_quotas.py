"""Quotas are declared by their kinds, defaults included; the deployment's environment
variables of old (``SEOJOBS_QUOTA_<NAME>_DAILY`` / ``_MONTHLY``) still set them, for a plug-in's
quota too, and the counts come from the registry."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from seojobs.engine.quotas import Quota
from seojobs.engine.registry import Registry
from seojobs.kinds import load_registry
from seojobs.kinds.backlink_refresh.params import MAX_LINKS
from seojobs.kinds.geo_lookup.params import MAX_PROMPTS, MAX_REPEATS
from seojobs.kinds.local_rank_check.params import MAX_SEARCHES
from seojobs.services.tracked import MAX_KEYWORDS
from seojobs.settings import Settings

REGISTRY = load_registry(Settings(plugins=["tests.acme"]))
QUOTAS = REGISTRY.quotas()


def test_every_quota_has_its_own_variable_and_every_charge_is_declared() -> None:
    envs = [quota.env for quota in QUOTAS.values()]
    assert len(set(envs)) == len(QUOTAS)  # one variable each, none shared
    assert all(env.startswith("SEOJOBS_QUOTA_") for env in envs)
    declared = {q.name for kind in REGISTRY.kinds() for q in kind.quotas}
    assert declared == set(QUOTAS)


@pytest.mark.parametrize(
    ("env", "quota", "default"),
    [
        ("SEOJOBS_QUOTA_SUBMIT_DAILY", "submit", 10_000),
        ("SEOJOBS_QUOTA_CHECK_DAILY", "check", 10_000),
        ("SEOJOBS_QUOTA_RANK_KEYWORDS_MONTHLY", "rank_keywords_month", 62_000),
        ("SEOJOBS_QUOTA_AI_LOOKUPS_DAILY", "ai_lookups", 500),
        ("SEOJOBS_QUOTA_WEB_VITALS_MONTHLY", "web_vitals_month", 3_000),
        ("SEOJOBS_QUOTA_ACME_PAGES_MONTHLY", "acme_pages", 10),  # a plug-in's
    ],
)
def test_the_environment_variables_of_old_set_the_declared_quotas(
    monkeypatch: pytest.MonkeyPatch, env: str, quota: str, default: int
) -> None:
    assert QUOTAS[quota].env == env
    assert QUOTAS[quota].limit(Settings()) == default  # the kind's declaration
    monkeypatch.setenv(env, "7")
    assert QUOTAS[quota].limit(Settings()) == 7
    others = [q for name, q in QUOTAS.items() if name != quota]
    assert all(q.limit(Settings()) == q.limit(Settings(quota_limits={})) for q in others)


def test_a_keyword_argument_of_old_sets_a_quota_over_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SEOJOBS_QUOTA_SUBMIT_DAILY", "7")
    settings = Settings(quota_submit_daily=3, quota_check_daily=4)
    assert (QUOTAS["submit"].limit(settings), QUOTAS["check"].limit(settings)) == (3, 4)


@pytest.mark.parametrize("value", ["-1", "many"])
def test_a_bad_limit_is_refused_naming_the_quota(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("SEOJOBS_QUOTA_TECH_LOOKUPS_DAILY", value)
    with pytest.raises(ValidationError, match=r"quota_limits\.tech_lookups_daily"):
        Settings()


def test_a_limit_may_still_be_derived_from_the_settings() -> None:
    derived = Quota("titles", lambda settings: int(settings.worker_concurrency) * 100)
    assert derived.limit(Settings(worker_concurrency=3)) == 300
    assert derived.limit(Settings(quota_limits={"titles_daily": 5})) == 5


def test_a_quota_declared_twice_differently_is_refused() -> None:
    registry = Registry()
    kind = REGISTRY.get("acme_audit")
    registry.add(kind)
    twin = type(kind)("twin", kind.params, kind.handler, quotas=(Quota("acme_pages", 11),))
    with pytest.raises(ValueError, match="declared twice"):
        registry.add(twin)


# One project's largest daily collection of each kind a collection feeds from what the project
# tracks (issue 29): its charge, and the quota it is charged to.
LARGEST_DAILY = [
    ("rank_keywords", "rank_check tracked keywords", 2_000),  # services.tracked.MAX_KEYWORDS
    ("ai_lookups", "geo_lookup tracked prompts x repeats", 50 * 5),
    ("local_rank_searches", "local_rank_check searches", 500),  # keywords x grid points
    ("backlink_checks", "backlink_refresh pairs", 1_000),
]


@pytest.mark.parametrize(("quota", "what", "charge"), LARGEST_DAILY)
def test_the_default_quotas_take_a_projects_whole_daily_collection_for_a_month(
    quota: str, what: str, charge: int
) -> None:
    largest = {
        "rank_keywords": MAX_KEYWORDS,
        "ai_lookups": MAX_PROMPTS * MAX_REPEATS,
        "local_rank_searches": MAX_SEARCHES,
        "backlink_checks": MAX_LINKS,
    }
    assert largest[quota] == charge, what  # the table above follows the limits
    settings = Settings()
    assert QUOTAS[quota].limit(settings) >= charge, what
    assert QUOTAS[f"{quota}_month"].limit(settings) >= 31 * charge, what
