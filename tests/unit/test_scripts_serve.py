"""``scripts/serve`` installs only when ``pyproject.toml`` changed since its last install, so
a restart starts the server at once; a new ``.venv`` gets a current pip from this Python's
own pip. Run on a copy whose ``.venv`` (and ``PYTHON``) are stand-ins that log what they were
asked to do (no network, no real install)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _stand_in(path: Path, log: Path) -> None:
    path.write_text(f'#!/usr/bin/env bash\necho "$(basename "$0") $*" >> {log}\n')
    path.chmod(0o755)


def _copy(tmp_path: Path) -> Path:
    """``scripts/serve`` and a ``pyproject.toml`` in ``tmp_path``; the stand-ins' log."""
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "serve", tmp_path / "scripts" / "serve")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    return tmp_path / "calls.log"


def test_serve_installs_once_per_pyproject_and_passes_its_arguments(tmp_path: Path) -> None:
    log = _copy(tmp_path)
    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    _stand_in(bin_dir / "python", log)
    _stand_in(bin_dir / "seojobs", log)

    # Not the caller's PYTHONDONTWRITEBYTECODE (scripts/test unsets it; a shell may set it).
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}

    def serve() -> list[str]:
        before = log.read_text().splitlines() if log.exists() else []
        subprocess.run([str(tmp_path / "scripts" / "serve"), "--port", "9000"], check=True, env=env)
        return log.read_text().splitlines()[len(before) :]

    installs = "python -m pip install --quiet --disable-pip-version-check --no-compile -e .[server]"
    assert serve() == [installs, "seojobs serve --port 9000"]
    assert serve() == ["seojobs serve --port 9000"]  # nothing changed: no install
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\nversion = "2"\n')
    assert serve() == [installs, "seojobs serve --port 9000"]
    assert serve() == ["seojobs serve --port 9000"]


def _new_venv(tmp_path: Path, **env: str) -> list[str]:
    """What ``scripts/serve`` asks of a stand-in ``PYTHON`` (whose ``-m venv`` puts the
    logging stand-ins in ``.venv/bin``) and of the venv's, with no ``.venv`` yet."""
    log = _copy(tmp_path)
    made = tmp_path / "stand-ins"
    made.mkdir()
    _stand_in(made / "python", log)
    _stand_in(made / "seojobs", log)
    python = tmp_path / "python3"
    python.write_text(
        f'#!/usr/bin/env bash\necho "python3 $*" >> {log}\n'
        f'if [ "$1 $2" = "-m venv" ]; then mkdir -p .venv/bin && cp -p {made}/* .venv/bin/; fi\n'
    )
    python.chmod(0o755)
    env |= {"PATH": "/usr/bin:/bin", "PYTHON": str(python)}
    subprocess.run([str(tmp_path / "scripts" / "serve")], check=True, env=env)
    return log.read_text().splitlines()


def test_a_new_venv_gets_pip_from_this_pythons_pip_and_no_compiling(tmp_path: Path) -> None:
    flags = "install --quiet --disable-pip-version-check --no-compile"
    assert _new_venv(tmp_path) == [
        "python3 -m venv --without-pip .venv",
        f"python3 -m pip --python .venv/bin/python {flags} pip",
        f"python -m pip {flags} -e .[server]",
        "seojobs serve",
    ]


def test_without_bytecode_caches_pip_compiles(tmp_path: Path) -> None:
    """With PYTHONDONTWRITEBYTECODE Python caches nothing it compiles: pip's compiled files
    are the only ones a start can use."""
    installs = _new_venv(tmp_path, PYTHONDONTWRITEBYTECODE="1")[1:3]
    assert len(installs) == 2 and all("--compile" in line for line in installs)
