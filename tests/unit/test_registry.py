"""The kind registry: validation naming fields, lookup, and plug-ins by entry point or module."""

from __future__ import annotations

import json
import os
import sys
import textwrap
from importlib import metadata
from pathlib import Path

import pytest
from pydantic import BaseModel, Field
from pydantic_settings import (
    DotEnvSettingsSource,
    EnvSettingsSource,
    InitSettingsSource,
    SecretsSettingsSource,
)

from seojobs.engine import registry as registry_module
from seojobs.engine.registry import InvalidParams, Kind, Registry, UnknownKind
from seojobs.kinds import load_registry, migration_dirs
from seojobs.kinds.urls import UrlListParams, item_urls
from seojobs.settings import Settings


class Params(BaseModel):
    urls: list[str] = Field(min_length=1, max_length=3)
    engine: str = "google"


async def handler(ctx: object) -> None:
    return None


def test_validate_returns_model_and_items() -> None:
    reg = Registry()
    reg.add(Kind("k", Params, handler, items=lambda p: p.urls))
    model, items = reg.validate("k", {"urls": ["a", "b"]})
    assert isinstance(model, Params) and model.engine == "google"
    assert items == ["a", "b"]


def test_invalid_params_name_every_field() -> None:
    reg = Registry()
    reg.add(Kind("k", Params, handler))
    with pytest.raises(InvalidParams) as info:
        reg.validate("k", {"urls": ["a", "b", "c", "d"], "engine": 5})
    assert {e["field"] for e in info.value.errors} == {"urls", "engine"}
    assert "urls" in str(info.value)


class Crawl(UrlListParams):
    """A plug-in's URL-list kind: it inherits the dedupe counter with its URL list."""

    depth: int = 1


@pytest.mark.parametrize("value", [0, 3, -1, "2", None, {"n": 1}])
def test_read_only_params_are_refused_in_new_params(value: object) -> None:
    """``duplicates_removed`` is counted by validation; a request that sets it is refused,
    whatever the value, for every kind built on UrlListParams."""
    reg = load_registry(Settings(database_url="sqlite://"))
    reg.add(Kind("crawl", Crawl, handler, items=item_urls))
    for name in ("index_check", "index_submit", "crawl"):
        params = {"urls": ["https://a.example/"], "duplicates_removed": value}
        with pytest.raises(InvalidParams) as info:
            reg.validate(name, params)
        assert info.value.errors == [
            {
                "field": "duplicates_removed",
                "message": f"set by the server; a request cannot set it (got {json.dumps(value)})",
            }
        ]
        schema = reg.get(name).params.model_json_schema()
        assert schema["properties"]["duplicates_removed"]["readOnly"] is True


def test_the_dedupe_count_survives_the_workers_revalidation() -> None:
    reg = Registry()
    reg.add(Kind("crawl", Crawl, handler, items=item_urls))
    urls = ["https://a.example/1", "https://a.example/2", "https://a.example/1"] * 2
    model, items = reg.validate("crawl", {"urls": urls})
    assert items == urls[:2]
    stored = model.model_dump(mode="json")
    assert stored["duplicates_removed"] == 4
    # The worker validates the stored params again (not a request): the count is kept.
    again = Crawl.model_validate(stored)
    assert again.duplicates_removed == 4 and again.urls == urls[:2]


def test_unknown_kind_lists_the_known_ones() -> None:
    reg = Registry()
    reg.add(Kind("alpha", Params, handler))
    with pytest.raises(UnknownKind, match="alpha"):
        reg.get("beta")


def test_a_name_cannot_be_registered_twice() -> None:
    reg = Registry()
    reg.add(Kind("k", Params, handler))
    with pytest.raises(ValueError, match="twice"):
        reg.add(Kind("k", Params, handler))


def test_plugins_setting_imports_modules() -> None:
    reg = load_registry(Settings(database_url="sqlite://", plugins="tests.kinds"))  # type: ignore[arg-type]
    assert {"test_noop", "test_items"} <= set(reg.names())


def _install_acme(folder: Path) -> None:
    """An installed distribution in ``folder``, as pip lays one out: a module, and its
    ``.dist-info`` declaring ``register`` in the ``seojobs.kinds`` group."""
    (folder / "acme_kinds.py").write_text(
        textwrap.dedent(
            """
            from pydantic import BaseModel
            from seojobs.engine.registry import Kind

            class P(BaseModel):
                pass

            async def run(ctx):
                return None

            def register(registry):
                registry.add(Kind("acme_audit", P, run))
            """
        )
    )
    dist = folder / "acme_kinds-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-kinds\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[seojobs.kinds]\nacme = acme_kinds:register\n")


def test_entry_point_plugin_registers_kinds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real installed-distribution layout on sys.path, found through importlib.metadata."""
    _install_acme(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        reg = load_registry(Settings(database_url="sqlite://"))
        assert "acme_audit" in reg
    finally:
        sys.modules.pop("acme_kinds", None)


def test_entry_points_are_read_again_only_when_sys_path_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each app and worker loads the registry: the installed distributions' metadata is read
    once, and again when a folder on sys.path changes (a distribution installed there)."""
    reads: list[str] = []

    def counted(**selection: str) -> object:
        reads.append(selection["group"])
        return metadata.entry_points(**selection)

    monkeypatch.setattr(registry_module, "entry_points", counted)
    monkeypatch.syspath_prepend(str(tmp_path))
    settings = Settings(database_url="sqlite://")
    assert "acme_audit" not in load_registry(settings)
    assert reads == ["seojobs.kinds"]
    assert "acme_audit" not in load_registry(settings)
    assert reads == ["seojobs.kinds"]  # nothing changed: not read again
    _install_acme(tmp_path)
    # The folder's modification time moved on (the file system's clock may not have ticked
    # since the first read: importlib.metadata's own listing cache would miss it too).
    before = os.stat(tmp_path).st_mtime_ns
    os.utime(tmp_path, ns=(before + 10**9, before + 10**9))
    try:
        assert "acme_audit" in load_registry(settings)
        assert reads == ["seojobs.kinds", "seojobs.kinds"]
    finally:
        sys.modules.pop("acme_kinds", None)


@pytest.mark.parametrize("plugins", [[], ["tests.kinds"], ["tests.kinds", "tests.acme"]])
def test_migration_dirs_are_the_registrys_without_loading_the_kinds(plugins: list[str]) -> None:
    """``seojobs migrate`` and ``seojobs users`` take the folders from ``migration_dirs``
    (the built-in kinds named in seojobs.kinds, the plug-ins registered): the same as the
    registry with every kind loaded (a plug-in's too: tests.acme has migrations of its own)."""
    settings = Settings(database_url="sqlite://", plugins=plugins)
    found = migration_dirs(settings)
    assert len(set(found)) == len(found)  # Alembic's version locations: in any order
    assert set(found) == set(load_registry(settings).migration_dirs())


def test_settings_read_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("SEOJOBS_DATABASE_URL", "SEOJOBS_PLUGINS", "SEOJOBS_DAY_SECONDS"):
        monkeypatch.delenv(name, raising=False)
    defaults = Settings()
    assert defaults.database_url == f"sqlite:///{tmp_path / 'seojobs.db'}"
    assert defaults.rate_limit == "120/minute" and defaults.day_seconds == 86400
    assert defaults.lease_seconds <= 60 and defaults.max_rescues == 3
    assert defaults.retention_days == 30
    monkeypatch.setenv("SEOJOBS_DATABASE_URL", "postgresql://u@127.0.0.1/db")
    monkeypatch.setenv("SEOJOBS_PLUGINS", "a.b, c")
    monkeypatch.setenv("SEOJOBS_DAY_SECONDS", "2")
    custom = Settings()
    assert custom.database_url == "postgresql+psycopg://u@127.0.0.1/db"
    assert custom.plugins == ["a.b", "c"]
    assert custom.day_seconds == 2


def test_settings_read_a_dotenv_file_only_when_given_one(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """No ``.env`` file is configured: the settings' sources leave the dotenv source out (it
    found nothing, walking every field as the environment's source does, each time settings
    are built), and ``Settings(_env_file=...)`` still reads one, under the environment."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".env").write_text("SEOJOBS_DAY_SECONDS=5\nSEOJOBS_RETENTION_DAYS=9\n")
    monkeypatch.delenv("SEOJOBS_RETENTION_DAYS", raising=False)
    monkeypatch.setenv("SEOJOBS_DAY_SECONDS", "3")

    def sources(**config: object) -> list[str]:
        made = Settings.settings_customise_sources(
            Settings,
            InitSettingsSource(Settings, init_kwargs={}),
            EnvSettingsSource(Settings),
            DotEnvSettingsSource(Settings, **config),  # type: ignore[arg-type]
            SecretsSettingsSource(Settings),
        )
        return [type(source).__name__ for source in made]

    assert "DotEnvSettingsSource" not in sources()
    assert "DotEnvSettingsSource" in sources(env_file=tmp_path / ".env")
    assert Settings().retention_days == 30  # ./.env is not read unless named
    given = Settings(_env_file=tmp_path / ".env")  # type: ignore[call-arg]
    assert given.retention_days == 9
    assert given.day_seconds == 3  # the environment first


def test_settings_read_the_environment_whenever_a_variable_names_a_field(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The environment's source is not walked when no variable names a field
    (``settings.Environment``); one that does, in either case, is read as before, and other
    ``SEOJOBS_`` variables (the suite's own) neither are nor make the others unread."""
    for name in [n for n in os.environ if n.upper().startswith("SEOJOBS_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("SEOJOBS_TEST_SOMETHING", "1")  # names no field
    assert Settings().retention_days == 30
    monkeypatch.setenv("seojobs_retention_days", "9")
    monkeypatch.setenv("SEOJOBS_FETCH_ALLOW_HOSTS", "a.example, b.example")
    built = Settings()
    assert built.retention_days == 9
    assert built.fetch_allow_hosts == ["a.example", "b.example"]
    assert Settings(retention_days=4).retention_days == 4  # the keywords first
    monkeypatch.delenv("seojobs_retention_days")
    monkeypatch.delenv("SEOJOBS_FETCH_ALLOW_HOSTS")
    assert Settings().retention_days == 30


def test_a_kinds_params_schema_is_pydantics_in_a_copy_of_its_own() -> None:
    """``registry.json_schema`` builds a model's schema once (``/v1/job-types``, the route
    documents and the dashboard's forms read it) and hands each caller its own copy."""
    from seojobs.engine.registry import json_schema

    registry = load_registry(Settings(plugins=["tests.kinds", "tests.acme"]))
    template = "#/components/schemas/{model}"
    for name in registry.names():
        model = registry.get(name).params
        assert json_schema(model) == model.model_json_schema(), name
        mine = json_schema(model, template)
        assert mine == model.model_json_schema(ref_template=template), name
        mine.clear()
        assert json_schema(model, template) == model.model_json_schema(ref_template=template)


def test_job_record_fields_follow_the_table_columns() -> None:
    """Rows become JobRecords by position (fast path); the orders must agree."""
    from dataclasses import fields

    from seojobs.records import JobRecord
    from seojobs.store.tables import jobs

    assert [f.name for f in fields(JobRecord)] == [c.name for c in jobs.columns]


def test_item_record_fields_follow_the_table_columns() -> None:
    """Item rows become ItemRecords by position too."""
    from dataclasses import fields

    from seojobs.records import ItemRecord
    from seojobs.store.tables import job_items

    assert [f.name for f in fields(ItemRecord)] == [c.name for c in job_items.columns]


class Mixed(BaseModel):
    """A plug-in's params with numbers and booleans in every kind of place, none refusing a
    converted value itself."""

    limit: int | None = Field(default=None, ge=1)
    ratio: float = 0.5
    sizes: list[int] = []
    weights: dict[str, float] = {}
    either: int | str = 1  # pydantic would take true as 1 here too
    flag: bool | int = 0  # a boolean is a member: true stays true
    deep: bool = False
    nested: Params | None = None


def test_values_pydantic_would_convert_are_refused_where_the_schema_expects_another_type() -> None:
    """pydantic reads true as 1, 0 as false and "5" as 5; the schema a job type publishes does
    not. The registry refuses them for any kind, a plug-in's included, without help from its
    model."""
    reg = Registry()
    reg.add(Kind("mixed", Mixed, handler))
    params = {
        "limit": "7",
        "ratio": False,
        "sizes": [1, True],
        "weights": {"a": 1.5, "b": "2"},
        "either": True,
        "flag": True,
        "deep": 0,
        "nested": {"urls": ["a"], "engine": "x"},
    }
    with pytest.raises(InvalidParams) as info:
        reg.validate("mixed", params)
    assert info.value.errors == [
        {"field": "deep", "message": "must be true or false, not a number (got 0)"},
        {"field": "either", "message": "must be an integer, not true or false (got true)"},
        {"field": "limit", "message": 'must be an integer, not a string (got "7")'},
        {"field": "ratio", "message": "must be a number, not true or false (got false)"},
        {"field": "sizes.1", "message": "must be an integer, not true or false (got true)"},
        {"field": "weights.b", "message": 'must be a number, not a string (got "2")'},
    ]
    model, _items = reg.validate("mixed", {"flag": True, "limit": 2, "ratio": 1, "deep": True})
    assert model.flag is True and model.limit == 2 and model.deep is True
