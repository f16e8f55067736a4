"""``scripts/serve`` installs only when ``pyproject.toml`` changed since its last install, so
a restart starts the server at once; a new ``.venv`` gets a current pip from this Python's
own pip. Run on a copy whose ``.venv`` (and ``PYTHON``) are stand-ins that log what they were
asked to do (no network, no real install)."""

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

    installs = "python -m pip install --quiet --disable-pip-version-check --no-compile -e .[server]"
    assert serve() == [installs, "seojobs serve --port 9000"]
    assert serve() == ["seojobs serve --port 9000"]  # nothing changed: no install
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\nversion = "2"\n')
    assert serve() == [installs, "seojobs serve --port 9000"]
    assert serve() == ["seojobs serve --port 9000"]


def _copy(tmp_path: Path) -> Path:
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "serve", tmp_path / "scripts" / "serve")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    return tmp_path / "calls.log"


def _python(path: Path, log: Path, venv: Path) -> None:
    """A stand-in ``python3`` that logs, and whose ``-m venv`` makes ``venv``'s stand-ins."""
    path.write_text(
        "#!/usr/bin/env bash\n"
        f'echo "python3 $*" >> {log}\n'
        'if [ "$1 $2" = "-m venv" ]; then\n'
        f"  mkdir -p {venv}/bin\n"
        f'  printf \'#!/usr/bin/env bash\\necho "$(basename "$0") $*" >> {log}\\n\' '
        f"| tee {venv}/bin/python > {venv}/bin/seojobs\n"
        f"  chmod +x {venv}/bin/python {venv}/bin/seojobs\n"
        "fi\n"
    )
    path.chmod(0o755)


def test_a_new_venv_gets_pip_from_this_pythons_pip_and_no_compiling(tmp_path: Path) -> None:
    log = _copy(tmp_path)
    python = tmp_path / "python3"
    _python(python, log, tmp_path / ".venv")
    env = {"PATH": "/usr/bin:/bin", "PYTHON": str(python)}
    subprocess.run([str(tmp_path / "scripts" / "serve")], check=True, env=env)
    flags = "install --quiet --disable-pip-version-check --no-compile"
    assert log.read_text().splitlines() == [
        "python3 -m venv --without-pip .venv",
        f"python3 -m pip --python .venv/bin/python {flags} pip",
        f"python -m pip {flags} -e .[server]",
        "seojobs serve",
    ]


def test_without_bytecode_caches_pip_compiles(tmp_path: Path) -> None:
    """With PYTHONDONTWRITEBYTECODE Python caches nothing it compiles: pip's compiled files
    are the only ones a start can use."""
    log = _copy(tmp_path)
    python = tmp_path / "python3"
    _python(python, log, tmp_path / ".venv")
    env = {"PATH": "/usr/bin:/bin", "PYTHON": str(python), "PYTHONDONTWRITEBYTECODE": "1"}
    subprocess.run([str(tmp_path / "scripts" / "serve")], check=True, env=env)
    assert all("--compile" in line for line in log.read_text().splitlines()[1:3])
