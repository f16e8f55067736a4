"""The client install (no server extras) imports the client and runs the CLI's help.

Each check runs in a fresh interpreter with a meta-path finder that refuses the server-only
packages, as if they were not installed.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.e2e.helpers import env_without_seojobs

SERVER_ONLY = (
    "sqlalchemy",
    "fastapi",
    "alembic",
    "psycopg",
    "uvicorn",
    "pydantic_settings",
    "croniter",
)

BLOCKER = textwrap.dedent(
    f"""
    import sys

    BLOCKED = {set(SERVER_ONLY)!r}

    class NotInstalled:
        def find_spec(self, name, path=None, target=None):
            if name.partition(".")[0] in BLOCKED:
                raise ImportError(f"No module named {{name!r}} (blocked)", name=name)
            return None

    already = sorted(m for m in sys.modules if m.partition(".")[0] in BLOCKED)
    assert not already, already
    sys.meta_path.insert(0, NotInstalled())
    """
)


def _run(body: str, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", BLOCKER + textwrap.dedent(body), *args],
        env=env_without_seojobs(),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_client_imports_without_server_extras(tmp_path: Path) -> None:
    done = _run(
        """
        import seojobs.client
        leaked = sorted(m for m in sys.modules if m.partition(".")[0] in BLOCKED)
        assert not leaked, leaked
        print("client ok")
        """,
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "client ok"


@pytest.mark.parametrize("module", ["seojobs.store", "seojobs.settings", "seojobs.api"])
def test_blocker_control_server_modules_fail(tmp_path: Path, module: str) -> None:
    """Proves the blocker works: server code does not import under it."""
    done = _run(
        f"""
        try:
            import {module}
        except ImportError as exc:
            print("blocked", exc.name)
        else:
            print("imported")
        """,
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    blocked, _, name = done.stdout.strip().partition(" ")
    assert blocked == "blocked", done.stdout
    assert name.partition(".")[0] in SERVER_ONLY


def test_cli_help_runs_without_server_extras(tmp_path: Path) -> None:
    done = _run(
        """
        sys.argv = ["seojobs", "--help"]
        from seojobs.cli import main
        main()
        """,
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    for command in ("serve", "worker", "migrate", "users"):
        assert command in done.stdout


@pytest.mark.parametrize("command", ["migrate", "worker", "serve"])
def test_server_command_without_extras_says_what_to_install(tmp_path: Path, command: str) -> None:
    done = _run(
        """
        sys.argv = ["seojobs", *sys.argv[1:]]
        from seojobs.cli import main
        main()
        """,
        tmp_path,
        command,
    )
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "seojobs[server]" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "seojobs.db").exists()
