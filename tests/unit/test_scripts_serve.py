"""``scripts/serve`` installs only when ``pyproject.toml`` changed since its last install, so
a restart starts the server at once. Run on a copy whose ``.venv`` holds stand-ins that log
what they were asked to do (no network, no real install)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _stand_in(path: Path, log: Path) -> None:
    path.write_text(f'#!/usr/bin/env bash\necho "$(basename "$0") $*" >> {log}\n')
    path.chmod(0o755)


def test_serve_installs_once_per_pyproject_and_passes_its_arguments(tmp_path: Path) -> None:
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "serve", tmp_path / "scripts" / "serve")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    log = tmp_path / "calls.log"
    _stand_in(bin_dir / "python", log)
    _stand_in(bin_dir / "seojobs", log)

    def serve() -> list[str]:
        before = log.read_text().splitlines() if log.exists() else []
        subprocess.run([str(tmp_path / "scripts" / "serve"), "--port", "9000"], check=True)
        return log.read_text().splitlines()[len(before) :]

    installs = "python -m pip install --quiet --disable-pip-version-check -e .[server]"
    assert serve() == [installs, "seojobs serve --port 9000"]
    assert serve() == ["seojobs serve --port 9000"]  # nothing changed: no install
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\nversion = "2"\n')
    assert serve() == [installs, "seojobs serve --port 9000"]
    assert serve() == ["seojobs serve --port 9000"]
