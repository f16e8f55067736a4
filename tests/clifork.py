"""Short `seojobs` commands as real processes forked from a zygote (issue 24.1): start-up CPU.

A `seojobs` process spends 0.2-0.7 CPU-seconds starting (Python, typer, Rich, httpx, pydantic,
and for the server commands SQLAlchemy and Alembic) before a command of a few milliseconds;
the suite runs hundreds of them. ``run_forked`` runs each in its own process all the same (its
own pid, argv, environment, cwd, stdin/stdout/stderr, exit status) but forked from a zygote
(tests/zygote.py) that imported those modules once per test process: a clean, single-threaded
interpreter, never the multi-threaded pytest process. The child then becomes what the console
script would be: ``os.environ`` replaced, the cwd changed, fds 0/1/2 redirected and sys.stdin,
sys.stdout, sys.stderr made again for them (a terminal is line-buffered as at a start), and the
console script itself run as ``python SCRIPT`` runs it, the interpreter's own ending giving the
status (SystemExit, a traceback and 1, atexit, the flush of stdout).

What an import reads of the environment is the zygote's, so the zygote watches its preload:
the names it reads (typer reads TYPER_USE_RICH, typer.rich_utils FORCE_COLOR and a few
others) key the zygote, with the variables the interpreter reads at its start (PYTHON*, LC_*,
LANG, TZ, HOME, PATH): a command whose environment differs in one of them gets a zygote
started with its values. An import that looks at the cwd, a terminal or the pid refuses the
preload (``PreloadError``), but for what the child takes again (tests/zygote.py's REDONE:
Rich's import keeps the cwd; logging's start time). The pytest process itself never forks.
Each command's CPU, and the zygote's, is counted to the test that ran it (tests/cputime.py).

What stays a real subprocess of the console script (``SEOJOBS``): the long-running processes
(``serve``, ``worker``, ``poll`` loops, through ``Spawner``/``Popen``), every test that sends a
signal or uses a terminal (pty), tests/e2e/test_startup_imports.py (what a start imports), and
at least one test per converted file (``run_console_script``) so the entry point stays covered.
"""

from __future__ import annotations

import atexit
import io
import locale
import os
import pickle
import selectors
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from tests import cputime
from tests.orphans import for_popen
from tests.zygote import is_startup

# The installed console script, next to the interpreter running the tests.
SEOJOBS = Path(sys.executable).parent / "seojobs"
_ZYGOTE = Path(__file__).with_name("zygote.py")
# What the commands import when they run (the real script imports them lazily, as it goes):
# the CLI, the client commands, --help's Rich, the server commands' settings, store and
# accounts. Any module that takes no notice of the process's state at import could be here.
PRELOAD = (
    "seojobs.cli",
    "seojobs.client.cli_common",
    "seojobs.client.cli_submit",
    "seojobs.client.cli_poll",
    "seojobs.client.cli_report",
    "seojobs.client.cli_params",
    "typer.rich_utils",
    "seojobs.settings",
    "seojobs.logfmt",
    "seojobs.store.db",
    "seojobs.store.migrate",
    "seojobs.services.accounts",
    "seojobs.kinds",
)
START_TIMEOUT = 120.0  # the preload on a loaded machine; fails at once if the zygote dies


class PreloadError(RuntimeError):
    """The preload looked at what would be the zygote's, not the child's."""


def _interpreter(script: Path) -> str:
    """The script's own interpreter (its #! line)."""
    with script.open("rb") as source:
        first = source.readline()
    return first[2:].strip().decode() if first.startswith(b"#!") else sys.executable


@dataclass
class _Zygote:
    popen: subprocess.Popen[bytes]
    control: socket.socket
    script: Path
    env: dict[str, str]
    read: frozenset[str]
    log: IO[bytes]

    def fits(self, env: dict[str, str], script: Path) -> bool:
        names = {k for k in (*env, *self.env) if is_startup(k)} | self.read
        return script == self.script and all(env.get(k) == self.env.get(k) for k in names)

    def output(self) -> str:
        self.log.seek(0)
        return self.log.read().decode(errors="replace")

    def stop(self) -> None:
        self.control.close()  # EOF: the zygote kills what it still runs and exits
        try:
            self.popen.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait()
        self.log.close()


_zygotes: list[_Zygote] = []
_lock = threading.Lock()
_read: set[str] = set()  # every name a preload read so far


def _recv(sock: socket.socket, timeout: float) -> bytes:
    sock.settimeout(timeout)
    try:
        return sock.recv(1 << 20)
    except TimeoutError:
        return b""
    finally:
        sock.settimeout(None)


def _start(env: dict[str, str], script: Path) -> _Zygote:
    zygote_env = {k: v for k, v in env.items() if is_startup(k) or k in _read}
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    log = tempfile.TemporaryFile()  # noqa: SIM115  (the zygote's stderr, as long as it runs)
    try:
        popen = subprocess.Popen(
            [_interpreter(script), str(_ZYGOTE), str(script), str(theirs.fileno()), *PRELOAD],
            env=zygote_env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
            pass_fds=(theirs.fileno(),),
            **for_popen(),
        )
    except BaseException:
        ours.close()
        log.close()
        raise
    finally:
        theirs.close()
    if not _zygotes:
        atexit.register(stop_zygotes)
    zygote = _Zygote(popen, ours, script, zygote_env, frozenset(), log)
    data = _recv(ours, START_TIMEOUT)
    if not data:
        zygote.stop()
        raise RuntimeError(f"the zygote did not start:\n{zygote.output()}")
    report: dict[str, Any] = pickle.loads(data)
    if report["seen"] or report["threads"] != 1:
        zygote.stop()
        raise PreloadError(
            f"importing {PRELOAD} called {report['seen']} and left {report['threads']} "
            "threads: keep the module that did out of PRELOAD"
        )
    zygote.read = frozenset(report["read"])
    _read.update(zygote.read)
    return zygote


def _zygote_for(env: dict[str, str], script: Path) -> _Zygote:
    with _lock:
        for zygote in _zygotes:
            if zygote.fits(env, script):
                return zygote
        for _ in range(3):  # a preload that reads a name not read before needs another start
            zygote = _start(env, script)
            _zygotes.append(zygote)
            if zygote.fits(env, script):
                return zygote
        raise PreloadError(f"no zygote fits the environment (preload reads {sorted(_read)})")


def stop_zygotes() -> None:
    """Stop every zygote and reap it (at the end of the session: its CPU, and its children's,
    lands in the test process's children's after the last test's count)."""
    with _lock:
        while _zygotes:
            _zygotes.pop().stop()


def pytest_sessionfinish(session: object, exitstatus: int) -> None:
    """The zygotes stop with the session (each xdist worker's), not at its exit alone."""
    stop_zygotes()


def _text_encoding() -> str:
    """subprocess's, for ``text=True``."""
    return "utf-8" if sys.flags.utf8_mode else locale.getencoding()


def _decode(data: bytes) -> str:
    """As ``subprocess.run(text=True)`` decodes: universal newlines, strict."""
    return io.TextIOWrapper(io.BytesIO(data), encoding=_text_encoding()).read()


class _Pipes:
    """One command's end of things: its stdin (a pipe, or /dev/null), stdout and stderr
    pipes, and a socket the zygote answers on (the pid, then the status once reaped)."""

    def __init__(self, stdin: str | None) -> None:
        self.mine, self.theirs = socket.socketpair()
        if stdin is None:
            self.in_r, self.in_w = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC), -1
        else:
            self.in_r, self.in_w = os.pipe()
        self.out_r, self.out_w = os.pipe()
        self.err_r, self.err_w = os.pipe()
        self.pending = (stdin or "").encode(_text_encoding())
        self.chunks: dict[int, list[bytes]] = {
            self.out_r: [],
            self.err_r: [],
            self.mine.fileno(): [],
        }

    def given(self) -> list[int]:
        """What the child gets, in the order tests/zygote.py takes them."""
        return [self.theirs.fileno(), self.in_r, self.out_w, self.err_w]

    def sent(self) -> None:
        """The zygote has its copies: ours of the child's ends go."""
        self.theirs.close()
        for fd in (self.in_r, self.out_w, self.err_w):
            os.close(fd)

    def close(self) -> None:
        for fd in (self.in_w, self.out_r, self.err_r):
            if fd >= 0:
                os.close(fd)
        self.in_w = -1
        self.mine.close()

    def _write(self, selector: selectors.BaseSelector) -> None:
        try:
            self.pending = self.pending[os.write(self.in_w, self.pending[:65536]) :]
        except BrokenPipeError:  # as subprocess: the child did not read it all
            self.pending = b""
        if not self.pending:
            selector.unregister(self.in_w)
            os.close(self.in_w)
            self.in_w = -1

    def communicate(self, timeout: float) -> tuple[bytes, bytes, bytes, bool]:
        """stdout, stderr and the zygote's answers once all are closed; whether the child
        was killed for the timeout."""
        deadline = time.monotonic() + timeout
        timed_out = False
        with selectors.DefaultSelector() as selector:
            for fd in self.chunks:
                selector.register(fd, selectors.EVENT_READ)
            if self.in_w >= 0:
                os.set_blocking(self.in_w, False)
                selector.register(self.in_w, selectors.EVENT_WRITE)
            while selector.get_map():
                left = deadline - time.monotonic()
                if left <= 0 and not timed_out:
                    timed_out = True
                    self.mine.sendall(b"kill")
                for key, _ in selector.select(None if timed_out else left):
                    if key.fd == self.in_w:
                        self._write(selector)
                    elif data := os.read(key.fd, 65536):
                        self.chunks[key.fd].append(data)
                    else:
                        selector.unregister(key.fd)
        out, err, answers = (b"".join(c) for c in self.chunks.values())
        return out, err, answers, timed_out


def run_forked(
    *args: str,
    env: dict[str, str],
    cwd: Path | str,
    stdin: str | None = None,
    timeout: float = 60.0,
    script: Path = SEOJOBS,
) -> subprocess.CompletedProcess[str]:
    """``seojobs ARGS`` (or another ``script``: the helper's own tests) to completion in a
    process of its own, forked from a zygote: as ``subprocess.run([SEOJOBS, *args], env=env,
    cwd=cwd, input=stdin (else /dev/null), capture_output=True, text=True,
    timeout=timeout)``; a timeout kills it (SIGKILL) and raises ``TimeoutExpired``."""
    argv = [str(script), *args]
    if not Path(cwd).is_dir():
        raise FileNotFoundError(f"no directory {cwd}")
    zygote = _zygote_for(env, script)
    request = {
        "argv": [os.fsencode(a) for a in argv],
        "env": {os.fsencode(k): os.fsencode(v) for k, v in env.items()},
        "cwd": os.fsencode(cwd),
    }
    pipes = _Pipes(stdin)
    try:
        try:
            socket.send_fds(zygote.control, [pickle.dumps(request)], pipes.given())
        except OSError:
            raise RuntimeError(f"the zygote is gone:\n{zygote.output()}") from None
        finally:
            pipes.sent()
        stdout, stderr, answers, timed_out = pipes.communicate(timeout)
    finally:
        pipes.close()
    try:
        replies = io.BytesIO(answers)
        pickle.load(replies)
        done: dict[str, Any] = pickle.load(replies)
    except EOFError:
        raise RuntimeError(f"the zygote is gone:\n{zygote.output()}") from None
    cputime.add_children(done["cpu"] + done["zygote_cpu"])
    if timed_out:
        raise subprocess.TimeoutExpired(argv, timeout, output=stdout, stderr=stderr)
    return subprocess.CompletedProcess(
        argv, os.waitstatus_to_exitcode(done["status"]), _decode(stdout), _decode(stderr)
    )


def run_console_script(
    *args: str,
    env: dict[str, str],
    cwd: Path | str,
    stdin: str | None = None,
    timeout: float = 60.0,
    script: Path = SEOJOBS,
) -> subprocess.CompletedProcess[str]:
    """The same, through the installed console script itself (a fresh interpreter); a script
    that is not executable (the helper's own tests' probe) as ``python SCRIPT``."""
    command = [str(script)] if os.access(script, os.X_OK) else [_interpreter(script), str(script)]
    return subprocess.run(
        [*command, *args],
        env=env,
        cwd=cwd,
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
