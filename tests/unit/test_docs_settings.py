"""docs/settings.md is generated from the settings models (scripts/settings_doc.py): the
committed page must be what the models say today, so a setting added, renamed or given a new
default without regenerating the page fails here."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from seojobs.kinds import load_registry
from seojobs.settings import Settings

ROOT = Path(__file__).resolve().parents[2]


def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("settings_doc", ROOT / "scripts/settings_doc.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("settings_doc", module)
    spec.loader.exec_module(module)
    return module


def every_setting() -> dict[str, str | None]:
    """Each environment variable a server reads, with its field's own description."""
    gen = generator()
    models = [Settings] + [
        k.settings for k in load_registry(Settings.model_construct()).kinds() if k.settings
    ]
    found: dict[str, str | None] = {}
    for model in models:
        prefix = str(model.model_config.get("env_prefix", ""))
        for name, field in model.model_fields.items():
            if not gen.listed(name, field):
                continue
            for env in gen.env_names(field, name, prefix):
                found[env] = field.description
    return found


def test_the_committed_settings_page_is_what_the_models_say() -> None:
    page = (ROOT / "docs/settings.md").read_text(encoding="utf-8")
    assert page == generator().render(), (
        "docs/settings.md differs from the settings models: run "
        "`.venv/bin/python scripts/settings_doc.py > docs/settings.md`"
    )


def test_every_setting_and_quota_is_on_the_page() -> None:
    page = (ROOT / "docs/settings.md").read_text(encoding="utf-8")
    missing = [env for env in every_setting() if f"`{env}`" not in page]
    assert not missing
    quotas = load_registry(Settings.model_construct()).quotas()
    assert quotas and all(f"| `{name}` |" in page for name in quotas)


def test_each_note_explains_a_real_setting_the_model_does_not() -> None:
    """A note stands in for a missing field description: one for a setting that no longer
    exists, or that the model now describes itself, must go."""
    settings = every_setting()
    gen = generator()
    stale = [env for env in gen.NOTES if env not in settings]
    doubled = [env for env in gen.NOTES if settings.get(env)]
    assert not stale, f"notes for settings that do not exist: {stale}"
    assert not doubled, f"notes for settings whose model describes them: {doubled}"
    assert all(env in settings for env in gen.MACHINE_DEFAULTS)


def test_defaults_that_depend_on_the_process_are_written_as_such() -> None:
    page = (ROOT / "docs/settings.md").read_text(encoding="utf-8")
    assert "`sqlite:///$PWD/seojobs.db`" in page
    assert str(ROOT) not in page and str(Path.home()) not in page


def test_check_mode_agrees(capsys: object) -> None:
    assert generator().main(["--check"]) == 0
