"""The README's quickstart, run as written: its ``sh`` block between ``<!-- quickstart -->`` and
``<!-- /quickstart -->`` is taken from README.md itself (so the two cannot drift) and run with
``bash -e`` in a fresh copy of the repository, a new ``.venv`` and no ``SEOJOBS_*`` settings,
only the port changed (``SEOJOBS_PORT``, and the URLs that name it). Any failing step fails
the test. The install step makes it one of the slowest tests (about a minute); it uses the
machine's own pip configuration (its index, mirror or wheel folder), as a newcomer's would.

Tests send traffic to loopback only, and the quickstart checks ``https://example.com/``. So
the install (``./scripts/serve``'s first start, run first by the same script: the package
index is the one place it may reach) happens outside, and the quickstart itself runs in a
network namespace of its own (``unshare --net``) where loopback is the only interface: its
name lookups and connections beyond loopback fail on the spot, and nothing leaves the
machine. What a newcomer offline then sees is asserted: the check still completes, each URL
with a row that says why it could not be fetched."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from tests.e2e.helpers import env_without_seojobs, free_port

ROOT = Path(__file__).resolve().parents[2]
BLOCK = re.compile(r"<!-- quickstart -->\s*```sh\n(.*?)```\s*<!-- /quickstart -->", re.S)


def quickstart() -> str:
    found = BLOCK.findall((ROOT / "README.md").read_text(encoding="utf-8"))
    assert len(found) == 1, "README.md needs exactly one marked quickstart block"
    return str(found[0])


def loopback_only(script: str) -> list[str]:
    """The command running ``script`` with ``bash -e`` in a new network namespace whose only
    interface is loopback (brought up: a new namespace starts with it down)."""
    inside = 'ip link set lo up && exec bash -e -o pipefail -c "$1"'
    return ["unshare", "--net", "sh", "-c", inside, "sh", script]


def keep_pip_config(home: Path) -> None:
    """The machine's own pip configuration (its package index, mirror or wheel directory) in
    the new ``home``, where pip looks for it: a newcomer installs with their own pip set-up.
    Without it the install ignored a local index or mirror the machine is set up with (and
    failed where the public index is out of reach)."""
    config = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    for source, target in (
        (config / "pip" / "pip.conf", home / ".config" / "pip" / "pip.conf"),
        (Path.home() / ".pip" / "pip.conf", home / ".pip" / "pip.conf"),
    ):
        if source.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)


def fresh_copy(target: Path) -> None:
    """The files a fresh clone would have, as they are in this work tree."""
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)


@pytest.mark.timeout(900)
def test_the_readme_quickstart_runs_as_written(tmp_path: Path) -> None:
    script = quickstart()
    assert "./scripts/serve" in script and "127.0.0.1:8000" in script
    port = free_port()
    script = script.replace("127.0.0.1:8000", f"127.0.0.1:{port}")
    checkout = tmp_path / "seojobs"
    fresh_copy(checkout)
    home = tmp_path / "home"
    home.mkdir()
    keep_pip_config(home)
    env = env_without_seojobs() | {"SEOJOBS_PORT": str(port), "HOME": str(home)}
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME"):
        env.pop(name, None)
    # The install, by the script the quickstart starts (it then finds it done).
    install = subprocess.run(
        ["./scripts/serve", "--help"], cwd=checkout, env=env, capture_output=True, text=True
    )
    assert install.returncode == 0, install.stdout + install.stderr
    run = subprocess.Popen(
        loopback_only(script),
        cwd=checkout,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # the server it starts in the background is in this group
    )
    try:
        output, _ = run.communicate(timeout=840)
    finally:  # the bash process leads the group, the server included
        with contextlib.suppress(ProcessLookupError):
            os.killpg(run.pid, signal.SIGTERM)
    log = (
        (checkout / "serve.log").read_text(errors="replace")[-3000:]
        if (checkout / "serve.log").exists()
        else ""
    )
    assert run.returncode == 0, f"{output}\n--- serve.log ---\n{log}"
    # What a newcomer should see: the check ran to the end, with a row per URL.
    assert "index_check job 1: completed" in output, output
    assert "https://example.com/missing,unknown" in output, output
    # Offline (loopback only), each URL's row says why: its name could not be looked up.
    rows = [line for line in output.splitlines() if line.startswith("https://example.com/")]
    assert len(rows) == 2 and all(",dns_error," in row for row in rows), output
    assert '"status":"completed"' in output, output
