"""tests/clifork.py: a command forked from the zygote is the process its script would be if
started alone (argv, environment, cwd, fds, streams, signals, exit status), each command with
its own environment; a timeout kills it; the zygote and its children die with the tests."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests import clifork
from tests.clifork import run_console_script, run_forked
from tests.e2e.helpers import env_without_seojobs
from tests.orphans import running
from tests.waiting import wait_until

PROBE = Path(__file__).with_name("clifork_probe.py")
ROOT = Path(__file__).resolve().parents[2]


def forked(
    *args: str, env: dict[str, str], cwd: Path, stdin: str | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    return run_forked(*args, env=env, cwd=cwd, stdin=stdin, timeout=timeout, script=PROBE)


def alone(
    *args: str, env: dict[str, str], cwd: Path, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """``python PROBE ARGS``, as the console script starts: a fresh interpreter."""
    return run_console_script(*args, env=env, cwd=cwd, stdin=stdin, script=PROBE)


def outcome(done: subprocess.CompletedProcess[str]) -> tuple[int, str, str]:
    return done.returncode, done.stdout, done.stderr


def test_a_forked_command_is_the_process_its_script_would_be(tmp_path: Path) -> None:
    env = env_without_seojobs() | {"PROBE_VAR": "set"}
    env.pop("HOME", None)  # the zygote has one
    cwd = tmp_path / "here"
    cwd.mkdir()
    fork = forked("state", "é", env=env, cwd=cwd)
    real = alone("state", "é", env=env, cwd=cwd)
    assert fork.returncode == real.returncode == 0, (fork.stderr, real.stderr)
    assert json.loads(fork.stdout) == json.loads(real.stdout)
    assert json.loads(fork.stdout)["rich_cwd"] == str(cwd)  # Rich's import took the zygote's


@pytest.mark.parametrize(
    "args", [["exit", "0"], ["exit", "3"], ["exit-text", "bye"]], ids=lambda a: "-".join(a)
)
def test_exit_status_and_output_as_the_interpreter_ends(tmp_path: Path, args: list[str]) -> None:
    env = env_without_seojobs()
    assert outcome(forked(*args, env=env, cwd=tmp_path)) == outcome(
        alone(*args, env=env, cwd=tmp_path)
    )


def test_an_uncaught_exception_is_a_traceback_and_status_1(tmp_path: Path) -> None:
    for done in (forked("raise", env={}, cwd=tmp_path), alone("raise", env={}, cwd=tmp_path)):
        assert done.returncode == 1 and done.stdout == ""
        assert done.stderr.startswith("Traceback") and done.stderr.endswith("ValueError: boom\n")


@pytest.mark.parametrize("given", ["two\nlines", None])
def test_stdin_is_given_or_dev_null_and_stderr_apart(tmp_path: Path, given: str | None) -> None:
    env = env_without_seojobs()
    fork = forked("echo", env=env, cwd=tmp_path, stdin=given)
    assert outcome(fork) == outcome(alone("echo", env=env, cwd=tmp_path, stdin=given))
    assert fork.stdout == (given or "").upper()
    assert fork.stderr == f"read {len(given or '')} characters\n"


def test_each_command_sees_its_own_environment(tmp_path: Path) -> None:
    env = env_without_seojobs()
    first = forked("env", "PROBE_VAR", env=env | {"PROBE_VAR": "a"}, cwd=tmp_path)
    second = forked("env", "PROBE_VAR", env=env | {"PROBE_VAR": "b"}, cwd=tmp_path)
    neither = forked("env", "PROBE_VAR", env=env, cwd=tmp_path)
    # os.environ, and the C library's (what a child of the command inherits).
    assert (first.stdout, second.stdout, neither.stdout) == ("a\na\n", "b\nb\n", "None\n\n")


def test_a_name_the_preload_reads_gets_a_zygote_started_with_its_value(tmp_path: Path) -> None:
    """typer reads TYPER_USE_RICH as it is imported: `--help` without Rich needs a zygote
    that imported typer with it set."""
    env = env_without_seojobs() | {"COLUMNS": "100"}
    plain_env = env | {"TYPER_USE_RICH": "0"}
    rich_help = run_forked("--help", env=env, cwd=tmp_path)
    plain_help = run_forked("--help", env=plain_env, cwd=tmp_path)
    assert outcome(plain_help) == outcome(run_console_script("--help", env=plain_env, cwd=tmp_path))
    assert outcome(rich_help) == outcome(run_console_script("--help", env=env, cwd=tmp_path))
    assert rich_help.stdout != plain_help.stdout


def _children(pid: int) -> set[int]:
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        found.update(int(p) for p in (task / "children").read_text().split())
    return found


def test_a_timeout_kills_the_command(tmp_path: Path) -> None:
    with pytest.raises(subprocess.TimeoutExpired):
        forked("sleep", env=env_without_seojobs(), cwd=tmp_path, timeout=2)
    for zygote in clifork._zygotes:
        assert _children(zygote.popen.pid) == set()  # killed and reaped


_PARENT = """
import os, sys, threading, time
from pathlib import Path
from tests.clifork import run_forked
env = {k: v for k, v in os.environ.items() if not k.startswith("SEOJOBS_")}
command = {"env": env, "cwd": "/", "script": Path(sys.argv[1])}
threading.Thread(target=run_forked, args=("sleep",), kwargs=command, daemon=True).start()
time.sleep(600)
"""


def test_the_zygote_and_its_commands_die_with_the_tests(tmp_path: Path) -> None:
    """The tests' process SIGKILLed mid-command: no zygote and no command is left running."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    with subprocess.Popen([sys.executable, "-c", _PARENT, str(PROBE)], env=env, cwd=ROOT) as tests:
        left: set[int] = set()
        try:
            [zygote] = wait_until(lambda: _children(tests.pid) or None, timeout=120)
            left = {zygote}
            left |= wait_until(lambda: _children(zygote) or None, timeout=120)
            tests.send_signal(signal.SIGKILL)
            tests.wait(timeout=30)
            wait_until(lambda: not any(running(pid) for pid in left), timeout=60)
        finally:
            tests.kill()
            for pid in left:
                if running(pid):
                    os.kill(pid, signal.SIGKILL)
