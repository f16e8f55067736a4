"""tests/clifork.py: a command forked from the zygote is the process its script would be if
started alone (argv, environment, cwd, fds, streams, signals, exit status), each command with
its own environment; a timeout kills it; the zygote and its children die with the tests. A
long-running one (``popen``) too: as it starts (threads, signal dispositions and mask
as the kernel has them), as it ends by a signal (the status Popen would give), its CPU."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests import clifork, cputime
from tests.clifork import (
    Process,
    forwarding,
    popen,
    run_console_script,
    run_forked,
)
from tests.conftest import subprocess_env
from tests.e2e.helpers import PROCESS_TIMEOUT, STARTUP_TIMEOUT, env_without_seojobs
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
from tests.clifork import popen, run_forked
env = {k: v for k, v in os.environ.items() if not k.startswith("SEOJOBS_")}
command = {"env": env, "cwd": "/", "script": Path(sys.argv[1])}
if sys.argv[2] == "short":
    threading.Thread(target=run_forked, args=("sleep",), kwargs=command, daemon=True).start()
else:  # as Spawner starts a server: from the main thread, the handle kept
    process = popen("sleep", **command)
time.sleep(600)
"""


# A zygote's start (the preload) and the tests' process's own on a loaded 2-core machine.
@pytest.mark.timeout(400)
@pytest.mark.parametrize("started", ["short", "long"])
def test_the_zygote_and_its_commands_die_with_the_tests(tmp_path: Path, started: str) -> None:
    """The tests' process SIGKILLed mid-command (a short one run_forked waits for, a
    long-running one popen started): no zygote and no command is left running."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    parent = [sys.executable, "-c", _PARENT, str(PROBE), started]
    with subprocess.Popen(parent, env=env, cwd=ROOT) as tests:
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


def _first_line(log: Path, process: Process) -> Any:
    def line() -> str | None:
        assert process.poll() is None, log.read_text(errors="replace")
        text = log.read_text(errors="replace")
        return text.split("\n", 1)[0] if "\n" in text else None

    return json.loads(wait_until(line, timeout=STARTUP_TIMEOUT))


def _started(how: str, tmp_path: Path, env: dict[str, str]) -> tuple[Any, Any]:
    """The probe's ``wait`` as Spawner starts a process: forked, or the script alone; what
    it said it was as it started."""
    cwd = tmp_path / "here"
    cwd.mkdir(exist_ok=True)
    with (tmp_path / f"{how}.log").open("wb") as log:
        process = popen(
            "wait",
            "é",
            env=env,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            script=PROBE,
            console_script=how == "alone",
        )
    return process, _first_line(tmp_path / f"{how}.log", process)


@pytest.mark.parametrize(
    "sig", [signal.SIGTERM, signal.SIGKILL, signal.SIGINT, signal.SIGHUP], ids=lambda s: s.name
)
def test_a_long_running_forked_process_is_the_process_its_script_would_be(
    tmp_path: Path, sig: signal.Signals
) -> None:
    """As it starts (argv, ``__main__``, environment, cwd, fds, streams, one thread, signal
    dispositions and mask as Python and the kernel have them, group, session, the signal its
    parent's death sends) and as a signal sent to its pid ends it (the status Popen gives:
    -N, or SIGINT's KeyboardInterrupt)."""
    env = env_without_seojobs() | {"PROBE_VAR": "set"}
    fork, fork_state = _started("forked", tmp_path, env)
    real, real_state = _started("alone", tmp_path, env)
    try:
        assert fork_state.pop("pid") == fork.pid
        assert real_state.pop("pid") == real.pid
        assert fork_state == real_state
        assert fork_state["threads"] == fork_state["tasks"] == 1
        assert fork_state["cwd"] == str(tmp_path / "here")
        assert fork_state["argv"] == [str(PROBE), "wait", "é"]
        assert fork_state["main"] == str(PROBE)
        assert fork_state["environ"]["PROBE_VAR"] == "set"
        assert fork_state["fds"] == ["0", "1", "2", "3"]  # 3: the listing's own
        assert fork_state["kernel_signals"]["SigBlk"] == "0" * 16
        assert fork_state["pdeathsig"] == signal.SIGTERM
        if sig == signal.SIGHUP:  # stopped and continued, then ended
            for process in (fork, real):
                os.kill(process.pid, signal.SIGSTOP)
                wait_until(lambda p=process: _state(p.pid) == "T", timeout=PROCESS_TIMEOUT)
                os.kill(process.pid, signal.SIGCONT)
                wait_until(lambda p=process: _state(p.pid) != "T", timeout=PROCESS_TIMEOUT)
        os.kill(fork.pid, sig)
        real.send_signal(sig)
        # Ignored where the tests started ignoring it (a run in the background ignores SIGINT,
        # nohup SIGHUP): ignored by both, as the states say; SIGKILL ends them then.
        ignored = fork_state["signals"].get(sig.name) == str(signal.SIG_IGN)
        if ignored:
            fork.kill()
            real.kill()
        assert fork.wait(timeout=PROCESS_TIMEOUT) == real.wait(timeout=PROCESS_TIMEOUT)
        assert fork.returncode == (-signal.SIGKILL if ignored else -sig)
        if sig == signal.SIGINT and not ignored:  # Python's handler: the traceback, re-raised
            assert "KeyboardInterrupt" in (tmp_path / "forked.log").read_text()
    finally:
        for process in (fork, real):
            process.kill()
            process.wait(timeout=PROCESS_TIMEOUT)


def _state(pid: int) -> str:
    status = Path(f"/proc/{pid}/status").read_text()
    return next(line for line in status.splitlines() if line.startswith("State:")).split()[1]


def test_a_forked_process_ended_by_the_test_answers_as_popen(tmp_path: Path) -> None:
    """poll() and wait(timeout) while it runs, terminate(), then the status; a signal sent
    once it is known to have ended is nothing (Popen's send_signal)."""
    env = env_without_seojobs()
    process, _said = _started("forked", tmp_path, env)
    assert process.poll() is None and process.returncode is None
    with pytest.raises(subprocess.TimeoutExpired):
        process.wait(timeout=0.1)
    process.terminate()
    assert process.wait(timeout=PROCESS_TIMEOUT) == -signal.SIGTERM
    assert process.poll() == process.returncode == -signal.SIGTERM
    process.kill()  # ended: not sent
    assert not Path(f"/proc/{process.pid}").exists() or _state(process.pid) != "Z"


def test_a_forked_process_s_cpu_is_counted_to_the_test(tmp_path: Path) -> None:
    """Its own CPU (it spins until it has 0.3 s of it), told by the zygote that reaps it."""
    before = cputime._forked[0]
    process = popen("spin", "0.3", env=env_without_seojobs(), cwd=tmp_path, script=PROBE)
    assert process.wait(timeout=PROCESS_TIMEOUT) == 0
    assert cputime._forked[0] - before >= 0.3


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=lambda s: s.name)
def test_a_forked_worker_ends_on_a_signal_as_the_console_script_does(
    tmp_path: Path, sqlite_url: str, sig: signal.Signals
) -> None:
    """`seojobs worker`: SIGTERM is its own graceful stop (exit 0, its shutdown logged), as
    the installed script's; SIGKILL kills it (-9)."""
    ends = []
    for how in ("forked", "alone"):
        log_path = tmp_path / f"{how}.log"
        with log_path.open("wb") as log:
            worker = popen(
                "worker",
                env=subprocess_env(sqlite_url),
                cwd=tmp_path,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                console_script=how == "alone",
            )
        try:
            wait_until(lambda p=log_path: "starting" in p.read_text(), timeout=STARTUP_TIMEOUT)
            os.kill(worker.pid, sig)
            ends.append(worker.wait(timeout=PROCESS_TIMEOUT))
        finally:
            worker.kill()
            worker.wait(timeout=PROCESS_TIMEOUT)
        if sig == signal.SIGTERM:
            assert "shutdown_done" in log_path.read_text(), log_path.read_text()
    assert ends == ([0, 0] if sig == signal.SIGTERM else [-9, -9])


@pytest.mark.parametrize("how", ["0", "3", "bye", "interrupt", "flush-fails"])
def test_the_end_after_the_script_is_the_interpreter_s(tmp_path: Path, how: str) -> None:
    """What a process does after its script, in order: a non-daemon thread joined, the atexit
    functions, stdout flushed (120 when it cannot be, said on stderr); sys.exit's status or
    text; an uncaught KeyboardInterrupt's traceback, then SIGINT."""
    env = env_without_seojobs()
    fork = forked("ending", how, env=env, cwd=tmp_path)
    assert outcome(fork) == outcome(alone("ending", how, env=env, cwd=tmp_path))
    assert fork.stdout.startswith("unflushed ")
    assert fork.stdout.endswith("thread ended\natexit ran\n")
    assert fork.returncode == {"0": 0, "3": 3, "bye": 1, "interrupt": -signal.SIGINT}.get(how, 120)


def test_a_forked_command_ends_without_the_modules_teardown(tmp_path: Path) -> None:
    """The one difference from its script's end (tests/zygote.py's ``_run``): the modules'
    teardown, which would write to nearly every page the child shares with the zygote, is
    skipped; so is the ``__del__`` of what a module still holds."""
    env = env_without_seojobs()
    assert alone("teardown", env=env, cwd=tmp_path).stderr == "deleted at the teardown\n"
    fork = forked("teardown", env=env, cwd=tmp_path)
    assert (fork.returncode, fork.stdout, fork.stderr) == (0, "", "")


@pytest.mark.parametrize("args", [["state", "é"], ["ending", "3"], ["ending", "interrupt"]])
def test_a_forwarded_command_is_the_process_its_script_would_be(
    tmp_path: Path, args: list[str]
) -> None:
    """``forwarding``'s stand-in, run by a shell as the script would be: its argv, environment,
    cwd, stdin, stdout and stderr reach the forked command, whose status (or signal) it ends
    with."""
    env = env_without_seojobs() | {"PROBE_VAR": "set"}
    cwd = tmp_path / "here"
    cwd.mkdir()
    stand_in = tmp_path / "probe"
    with forwarding(stand_in, script=PROBE):
        fork = subprocess.run(
            [stand_in, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=60
        )
    real = alone(*args, env=env, cwd=cwd)
    if args[0] == "state":
        assert fork.returncode == real.returncode == 0, (fork.stderr, real.stderr)
        assert json.loads(fork.stdout) == json.loads(real.stdout)
    else:
        assert outcome(fork) == outcome(real)
