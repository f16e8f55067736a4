"""A kind's knobs live in its own prefixed settings model; the environment variables of old
keep their names, values given to the central Settings by their names of old reach the kind,
and the provider keys are read by their names of old."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from seojobs.engine import kindsettings
from seojobs.kinds import load_registry, providers
from seojobs.kinds.index_check import IndexCheckSettings
from seojobs.kinds.rank_check.declared import RankCheckSettings
from seojobs.settings import Settings


@pytest.mark.parametrize(
    ("model", "env", "default"),
    [
        (RankCheckSettings, "SEOJOBS_RANK_CHECK_CONCURRENCY", 4),
        (IndexCheckSettings, "SEOJOBS_INDEX_CHECK_CONCURRENCY", 8),
    ],
)
def test_a_knob_that_moved_into_its_kind_keeps_its_variable(
    monkeypatch: pytest.MonkeyPatch, model: type[RankCheckSettings], env: str, default: int
) -> None:
    knob = {"concurrency"}  # the kind's other settings are tested on their own
    assert kindsettings.build(model, Settings()).model_dump(include=knob) == {
        "concurrency": default
    }
    monkeypatch.setenv(env, "3")
    assert kindsettings.build(model, Settings()).model_dump(include=knob) == {"concurrency": 3}
    monkeypatch.setenv(env, "0")
    with pytest.raises(ValidationError, match="concurrency"):
        kindsettings.build(model, Settings())


def test_a_value_given_by_its_name_of_old_reaches_the_kind_over_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SEOJOBS_RANK_CHECK_CONCURRENCY", "3")
    settings = Settings(rank_check_concurrency=1, index_check_concurrency=2, unrelated_knob=5)
    assert kindsettings.build(RankCheckSettings, settings).concurrency == 1
    assert kindsettings.build(IndexCheckSettings, settings).concurrency == 2
    assert "rank_check_concurrency" not in Settings.model_fields  # it moved


@pytest.mark.parametrize("name", ["check_diagnostics_only", "index_check_diagnostics_only"])
def test_a_moved_field_given_by_its_old_or_new_keyword_reaches_the_kind_over_the_environment(
    monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    monkeypatch.setenv("SEOJOBS_INDEX_CHECK_DIAGNOSTICS_ONLY", "false")
    settings = Settings(**{name: True})
    assert kindsettings.of(IndexCheckSettings, settings).diagnostics_only is True
    assert "check_diagnostics_only" not in Settings.model_fields  # it moved
    assert kindsettings.of(IndexCheckSettings, Settings()).diagnostics_only is False


def test_every_kinds_own_settings_have_a_prefix_of_their_own() -> None:
    models = [
        k.settings for k in load_registry(Settings(plugins=["tests.acme"])).kinds() if k.settings
    ]
    prefixes = [str(m.model_config.get("env_prefix")) for m in models]
    assert len(set(prefixes)) == len(prefixes)
    assert all(p.startswith("SEOJOBS_") and p != "SEOJOBS_" for p in prefixes)


@pytest.mark.parametrize(
    ("name", "env"),
    [
        ("serper", {"SEOJOBS_SERPER_KEY": "k"}),
        ("dataforseo", {"SEOJOBS_DATAFORSEO_LOGIN": "l", "SEOJOBS_DATAFORSEO_PASSWORD": "p"}),
        ("openai", {"SEOJOBS_OPENAI_API_KEY": "k"}),
        ("indexnow", {"SEOJOBS_INDEXNOW_KEY": "k"}),
    ],
)
def test_provider_keys_keep_their_variables(
    monkeypatch: pytest.MonkeyPatch, name: str, env: dict[str, str]
) -> None:
    assert not providers.configured(Settings(), name)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert providers.configured(Settings(), name)
