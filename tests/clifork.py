"""Short `seojobs` commands as real processes forked from a zygote (issue 24.1): start-up CPU.

A `seojobs` process spends 0.2-0.7 CPU-seconds starting (Python, typer, Rich, httpx, pydantic,
and for the server commands SQLAlchemy and Alembic) before a command of a few milliseconds;
the suite runs hundreds of them. ``run_forked`` runs each in its own process all the same (its
own pid, argv, environment, cwd, stdin/stdout/stderr, exit status) but forked from a zygote
(tests/zygote.py) that imported those modules once per test process: a clean, single-threaded
interpreter, never the multi-threaded pytest process. The child then becomes what the console
script would be: ``os.environ`` replaced, the cwd changed, fds 0/1/2 redirected and sys.stdin,
sys.stdout, sys.stderr made again for them (a terminal is line-buffered as at a start), and the
console script itself run as ``python SCRIPT`` runs it, then ended as the interpreter ends it
(SystemExit, a traceback and 1, the threads joined, atexit, the flush of stdout), but for the
modules' teardown: about half a short command's CPU, the child's copies of the zygote's pages.

What an import reads of the environment is the zygote's, so the zygote watches its preload:
the names it reads (typer reads TYPER_USE_RICH, typer.rich_utils FORCE_COLOR and a few
others) key the zygote, with the variables the interpreter reads at its start (PYTHON*, LC_*,
LANG, TZ, HOME, PATH): a command whose environment differs in one of them gets a zygote
started with its values. An import that looks at the cwd, a terminal or the pid refuses the
preload (``PreloadError``), but for what the child takes again (tests/zygote.py's REDONE:
Rich's import keeps the cwd; logging's start time). The pytest process itself never forks.
Each command's CPU, and the zygote's, is counted to the test that ran it (tests/cputime.py).

The long-running ones (``serve``, ``worker``: tests/e2e/helpers.py's ``Spawner``,
tests/procs.py's ``Procs``) are forked too (``popen``, a ``ForkedPopen`` handle: the
process's own pid, which a test signals directly, and the status and CPU the zygote tells once
it reaps it). The child starts with the signal dispositions and mask the interpreter started
with (none of the zygote's SIGCHLD handler and wakeup fd), so ``serve``'s and ``worker``'s own
handlers are installed by the child as by the console script; the preload takes uvicorn, the
API, the worker and the built-in kinds, and refuses an import that sets a signal handler.

What stays a real subprocess of the console script (``SEOJOBS``): the short commands of every
test that sends a signal or uses a terminal (pty), the ``poll`` loops of
tests/e2e/test_cli_client.py (started with SIGINT's default disposition), the starts of
tests/e2e/test_startup_imports.py (what a start imports), and at least one test per converted
file (``run_console_script``, ``popen(console_script=True)``: ``Spawner``/``Procs`` with
``console_script=True``: two of tests/e2e/test_serve.py, one worker of
tests/integration/test_processes.py, tests/browser/test_audit_view.py's server) so the entry
point stays covered.
"""

from __future__ import annotations

import atexit
import contextlib
import io
import locale
import marshal
import os
import pickle
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
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
# the CLI, the client commands and their HTTP transport, --help's Rich, the server commands'
# settings, store and accounts; for the long-running ones, Alembic (the migration at a
# server's start), uvicorn, the API, the worker and every built-in kind. Any module that takes
# no notice of the process's state at import could be here.
PRELOAD = (
    "seojobs.cli",
    "seojobs.client.cli_common",
    "seojobs.client.cli_submit",
    "seojobs.client.cli_poll",
    "seojobs.client.cli_report",
    "seojobs.client.cli_params",
    # What a client command's first HTTP client imports (httpx's transport: httpcore, h11,
    # certifi; about 20 ms of each command that talks to a server).
    "httpcore",
    "certifi",
    "typer.rich_utils",
    "seojobs.settings",
    "seojobs.logfmt",
    "seojobs.store.db",
    "seojobs.store.migrate",
    "seojobs.services.accounts",
    "seojobs.kinds",
    "alembic.command",
    "alembic.config",
    "alembic.context",
    "alembic.op",
    "uvicorn.main",
    "uvicorn.lifespan.on",
    "uvicorn.loops.asyncio",
    "uvicorn.protocols.http.httptools_impl",
    "seojobs.api.app",
    "seojobs.api.protocol",
    "seojobs.engine.worker",
    "seojobs.services",
    "seojobs.telemetry",
    "seojobs.kinds.provider_table",
    "seojobs.kinds.fallback",
    "seojobs.kinds.backlink_analysis",
    "seojobs.kinds.backlink_refresh",
    "seojobs.kinds.domain_lookup",
    "seojobs.kinds.geo_lookup",
    "seojobs.kinds.index_check",
    "seojobs.kinds.index_submit",
    "seojobs.kinds.keyword_research",
    "seojobs.kinds.local_rank_check",
    "seojobs.kinds.rank_check",
    "seojobs.kinds.site_audit",
    "seojobs.kinds.tech_stack",
    "seojobs.kinds.web_vitals",
)
START_TIMEOUT = 120.0  # the preload on a loaded machine; fails at once if the zygote dies


class PreloadError(RuntimeError):
    """The preload looked at what would be the zygote's, not the child's."""


def _interpreter(script: Path) -> str:
    """The script's own interpreter (its #! line)."""
    with script.open("rb") as source:
        first = source.readline()
    return first[2:].strip().decode() if first.startswith(b"#!") else sys.executable


def _console_command(script: Path) -> list[str]:
    """The script run as its own command; one that is not executable (the helper's own
    tests' probe) as ``python SCRIPT``."""
    return [str(script)] if os.access(script, os.X_OK) else [_interpreter(script), str(script)]


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


def _request(
    script: Path, args: tuple[str, ...], env: dict[str, str], cwd: Path | str
) -> tuple[list[str], _Zygote, dict[str, Any]]:
    """The command's argv, the zygote to fork it and what to ask of that zygote."""
    argv = [str(script), *args]
    if not Path(cwd).is_dir():
        raise FileNotFoundError(f"no directory {cwd}")
    request = {
        "argv": [os.fsencode(a) for a in argv],
        "env": {os.fsencode(k): os.fsencode(v) for k, v in env.items()},
        "cwd": os.fsencode(cwd),
    }
    return argv, _zygote_for(env, script), request


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
    argv, zygote, request = _request(script, args, env, cwd)
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
    """The same, through the installed console script itself (a fresh interpreter)."""
    return subprocess.run(
        [*_console_command(script), *args],
        env=env,
        cwd=cwd,
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


class ForkedPopen:
    """``subprocess.Popen``'s handle for a long-running command forked from a zygote
    (``popen``): ``pid`` is the process's own (a signal sent to it reaches it), the
    zygote reaps it and tells its status (``poll``/``wait``/``returncode`` as Popen's: the
    exit code, or -N for signal N) and CPU (counted to the test then running, as Popen's
    would be when reaped). Dropped while it runs, the zygote kills it (SIGKILL)."""

    def __init__(self, args: list[str], pid: int, conn: socket.socket, zygote: _Zygote) -> None:
        self.args = args
        self.pid = pid
        self.returncode: int | None = None
        self._conn = conn
        self._zygote = zygote
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<ForkedPopen: returncode: {self.returncode} args: {self.args!r}>"

    def _collect(self, timeout: float | None) -> None:
        """The zygote's report of the end, if it comes within ``timeout``."""
        self._conn.settimeout(timeout)
        try:
            data = self._conn.recv(1 << 16)
        except (TimeoutError, BlockingIOError):
            return
        if not data:
            raise RuntimeError(f"the zygote is gone:\n{self._zygote.output()}")
        done: dict[str, Any] = pickle.loads(data)
        self._conn.close()
        cputime.add_children(done["cpu"] + done["zygote_cpu"])
        self.returncode = os.waitstatus_to_exitcode(done["status"])

    def poll(self) -> int | None:
        if self.returncode is None and self._lock.acquire(blocking=False):
            try:
                if self.returncode is None:
                    self._collect(0.0)
            finally:
                self._lock.release()
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            if self.returncode is None:
                self._collect(None if deadline is None else max(0.0, deadline - time.monotonic()))
        if self.returncode is None:
            raise subprocess.TimeoutExpired(self.args, timeout or 0.0)
        return self.returncode

    def send_signal(self, sig: int) -> None:
        """As Popen's: nothing once it is known to have ended."""
        self.poll()
        if self.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError):  # ended and reaped, the report on its way
            os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


# What ``popen`` starts: the installed script's Popen, or a process forked from a zygote.
Process = subprocess.Popen[bytes] | ForkedPopen


# A Popen argument: None (this process's own fd), DEVNULL, STDOUT (stderr only), an fd or a
# file; PIPE is not taken (no user reads a long-running process's output but from a file).
Stdio = int | IO[Any] | None


def _fd(given: Stdio, default: int, opened: list[int], stdout: int = -1) -> int:
    if given is None:
        return default
    if given == subprocess.DEVNULL:
        opened.append(os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC))
        return opened[-1]
    if given == subprocess.STDOUT and stdout >= 0:
        return stdout
    if isinstance(given, int):
        if given < 0:
            raise ValueError(f"not taken: {given} (PIPE?)")
        return given
    return given.fileno()


def popen(
    *args: str,
    env: dict[str, str] | None = None,
    cwd: Path | str | None = None,
    stdin: Stdio = None,
    stdout: Stdio = None,
    stderr: Stdio = None,
    script: Path = SEOJOBS,
    console_script: bool = False,
) -> Process:
    """``seojobs ARGS`` (or another ``script``) started as ``subprocess.Popen([SEOJOBS,
    *args], env=env, cwd=cwd, stdin=stdin, stdout=stdout, stderr=stderr, close_fds=True,
    **for_popen())`` would start it, but forked from a zygote (tests/zygote.py: signal
    dispositions and mask as the interpreter started with them, none of the zygote's fds);
    for a long-running one (``serve``, ``worker``). It dies with the tests: the zygote kills
    its children when the tests' process goes (its control socket closes) or dies itself.

    With ``console_script``, that very Popen: the installed script itself (a fresh
    interpreter), as the tests started every long-running process before: what the forked ones
    are checked against, and the starts that stay real (the entry point itself covered)."""
    if console_script:
        return subprocess.Popen(
            [*_console_command(script), *args],
            env=env,
            cwd=cwd,
            stdin=stdin,
            stdout=stdout,
            stderr=stderr,
            **for_popen(),
        )
    argv, zygote, request = _request(
        script, args, dict(os.environ) if env is None else env, os.getcwd() if cwd is None else cwd
    )
    opened: list[int] = []
    mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        out = _fd(stdout, 1, opened)
        fds = [_fd(stdin, 0, opened), out, _fd(stderr, 2, opened, stdout=out)]
        try:
            socket.send_fds(zygote.control, [pickle.dumps(request)], [theirs.fileno(), *fds])
        except OSError:
            raise RuntimeError(f"the zygote is gone:\n{zygote.output()}") from None
        data = _recv(mine, START_TIMEOUT)
        if not data:
            raise RuntimeError(f"the zygote did not fork:\n{zygote.output()}")
    except BaseException:
        mine.close()
        raise
    finally:
        theirs.close()
        for fd in opened:
            os.close(fd)
    return ForkedPopen(argv, pickle.loads(data)["pid"], mine, zygote)


# What ``forwarding`` writes: a client that hands its argv, environment, cwd and fds 0-2 to
# the tests' process and ends as the command did. ``python -IS``: a start of a few ms.
_SHIM = """#!{python} -IS
import marshal, os, signal, socket, sys
sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
sock.connect({address!r})
socket.send_fds(sock, [marshal.dumps((sys.argv[1:], dict(os.environb), os.getcwdb()))], [0, 1, 2])
status = int(sock.recv(64) or b"1")
if status < 0:
    signal.signal(-status, signal.SIG_DFL)
    os.kill(os.getpid(), -status)
os._exit(status & 0xFF)
"""


@contextlib.contextmanager
def forwarding(path: Path, script: Path = SEOJOBS) -> Iterator[None]:
    """An executable at ``path`` that runs ``script`` with its own argv, environment, cwd and
    fds 0-2 in a process forked from the zygote (``popen``), and ends with its status (or
    its signal): for the commands a test does not start itself, such as a documentation
    example's ``.venv/bin/seojobs``, which the installed script started afresh each time.
    What still runs when the block ends is killed."""
    folder = tempfile.mkdtemp(prefix="clifork-")  # a short path: a socket's is at most 107
    address = os.path.join(folder, "sock")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    server.bind(address)
    server.listen()
    running: set[ForkedPopen] = set()

    def forward(conn: socket.socket) -> None:
        with conn:
            msg, fds, _flags, _addr = socket.recv_fds(conn, 1 << 20, 3)
            try:
                args, env, cwd = marshal.loads(msg)
                process = popen(
                    *(os.fsdecode(a) for a in args),
                    env={os.fsdecode(k): os.fsdecode(v) for k, v in env.items()},
                    cwd=os.fsdecode(cwd),
                    stdin=fds[0],
                    stdout=fds[1],
                    stderr=fds[2],
                    script=script,
                )
            finally:
                for fd in fds:
                    os.close(fd)
            assert isinstance(process, ForkedPopen)
            running.add(process)
            try:
                status = process.wait()
            finally:
                running.discard(process)
            with contextlib.suppress(OSError):  # the caller is gone
                conn.sendall(str(status).encode())

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:  # closed: the block ended
                return
            threading.Thread(target=forward, args=(conn,), daemon=True).start()

    path.write_text(_SHIM.format(python=_interpreter(script), address=address))
    path.chmod(0o755)
    accepting = threading.Thread(target=serve, daemon=True)
    accepting.start()
    try:
        yield
    finally:
        server.shutdown(socket.SHUT_RDWR)
        server.close()
        accepting.join(timeout=60)
        for process in list(running):
            process.kill()
        with contextlib.suppress(OSError):
            os.unlink(address)
            os.rmdir(folder)
