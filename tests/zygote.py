"""The zygote of tests/clifork.py: ``python tests/zygote.py SCRIPT CONTROL_FD MODULE…``.

It imports the modules once, then forks one child per request it reads on CONTROL_FD; each
child becomes the console script SCRIPT (run as ``python SCRIPT`` would: see ``_become``) and
ends as the interpreter would, but for the modules' teardown (``_run``). Run as a script, so
that the child's ``__main__`` is a file as the console script's is; the standard library alone
before the preload, and nothing of the tests."""

from __future__ import annotations

import atexit
import builtins
import contextlib
import ctypes
import io
import os
import pickle
import resource
import selectors
import signal
import socket
import sys
import threading
import time
from importlib.machinery import SourceFileLoader
from types import CodeType, ModuleType, SimpleNamespace
from typing import Any

PR_SET_PDEATHSIG = 1
_prctl = ctypes.CDLL(None, use_errno=True).prctl
# Read at the start of an interpreter (or of the C library), never through os.environ, so the
# preload cannot see them read: a child whose environment differs in one of them needs a
# zygote started with it (tests/clifork.py).
# glibc's malloc and the dynamic loader read theirs at the process's start too.
STARTUP_PREFIXES = ("PYTHON", "LC_", "MALLOC_", "GLIBC_", "LD_")
STARTUP_NAMES = frozenset({"LANG", "LANGUAGE", "TZ", "HOME", "PATH"})
# What an import must not look at: what it saw would be the zygote's, not the child's.
UNSEEABLE = ("getcwd", "getcwdb", "isatty", "get_terminal_size", "getpid", "getppid", "chdir")


# What a preloaded module takes of the process's state at import, which ``_redo`` takes again in
# the child, as that import would have: (the os function, the file that calls it).
REDONE = frozenset({("getcwd", "rich/__init__.py")})
# Modules imported before the watched preload, whose import takes the process's state (see
# ``_redo``, which takes it again in the child): multiprocessing keeps the cwd (ORIGINAL_DIR)
# and a random authentication key; wsgiref's handlers a copy of the whole environment
# (prometheus_client, then uvicorn and the API, import them).
IMPORTED_AHEAD = ("multiprocessing.process", "wsgiref.handlers")
# The signals whose disposition a process can set (not SIGKILL, SIGSTOP).
SIGNALS = sorted(set(signal.valid_signals()) - {signal.SIGKILL, signal.SIGSTOP})


# Functions that read the environment at an import for what it does not change: platform's
# architecture() runs `file` on the interpreter with a copy of it (croniter's import asks).
UNSEEN = frozenset({("_syscmd_file", "/platform.py")})


def _unseen(caller: Any) -> bool:
    """Whether the read is one of UNSEEN's (within a few calls: dict() iterates through
    collections.abc's views)."""
    for _ in range(4):
        if caller is None:
            return False
        code = caller.f_code
        if any(code.co_name == n and code.co_filename.endswith(end) for n, end in UNSEEN):
            return True
        caller = caller.f_back
    return False


def is_startup(name: str) -> bool:
    return name.startswith(STARTUP_PREFIXES) or name in STARTUP_NAMES


class _Watch:
    """The preload's reads of the environment (names) and of the process's state."""

    def __init__(self) -> None:
        self.read: set[str] = set()
        self.seen: list[str] = []
        self.environ_class = type(os.environ)
        self.saved = {name: getattr(os, name) for name in UNSEEABLE}

    def __enter__(self) -> _Watch:
        watch = self

        class Watched(self.environ_class):  # type: ignore[misc,name-defined]
            def __getitem__(self, key: str) -> str:
                if not _unseen(sys._getframe(1)):
                    watch.read.add(key)
                return str(super().__getitem__(key))

            def __contains__(self, key: object) -> bool:
                if not _unseen(sys._getframe(1)):
                    watch.read.add(str(key))
                return bool(super().__contains__(key))

            def __iter__(self) -> Any:
                if not _unseen(sys._getframe(1)):
                    watch.seen.append("os.environ (every name)")
                return super().__iter__()

        os.environ.__class__ = Watched

        def seen(name: str) -> Any:
            def call(*args: Any, **kwargs: Any) -> Any:
                caller = sys._getframe(1)
                path = caller.f_code.co_filename
                if not any(name == n and path.endswith(f"/{end}") for n, end in REDONE):
                    watch.seen.append(f"os.{name} ({path}:{caller.f_lineno})")
                return watch.saved[name](*args, **kwargs)

            return call

        for name in UNSEEABLE:
            setattr(os, name, seen(name))
        return self

    def __exit__(self, *exc: object) -> None:
        os.environ.__class__ = self.environ_class
        for name, function in self.saved.items():
            setattr(os, name, function)


def _dispositions() -> dict[int, Any]:
    """Each signal's disposition as Python sees it (None: set by C code, not Python)."""
    return {sig: signal.getsignal(sig) for sig in SIGNALS}


# What the interpreter started with (as the console script's would, started by the tests):
# the child starts with them again, not with what the zygote set (SIGCHLD, its wakeup fd).
_START_SIGNALS = _dispositions()
_START_MASK = signal.pthread_sigmask(signal.SIG_BLOCK, [])


def _preload(modules: list[str]) -> dict[str, Any]:
    # As the console script's main() does first: httpx's own command line is never imported.
    sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]
    for name in IMPORTED_AHEAD:
        __import__(name)
    with _Watch() as watch:
        for name in modules:
            __import__(name)
    # A handler an import installed would be the console script's too, but the child starts
    # with the interpreter's (_restore_signals): refused, as a thread is.
    changed = [
        f"signal {signal.Signals(sig).name} set"
        for sig, handler in _dispositions().items()
        if handler != _START_SIGNALS[sig]
    ]
    if signal.pthread_sigmask(signal.SIG_BLOCK, []) != _START_MASK:
        changed.append("the signal mask changed")
    # A lazily computed value may read the cwd, the terminal or the pid later, in the child:
    # what an import itself looked at is what would be the zygote's.
    return {
        "read": sorted(watch.read),
        "seen": sorted(set(watch.seen)) + changed,
        "threads": threading.active_count(),
    }


def _stdio(fd: int, old: io.TextIOWrapper, write: bool, name: str) -> io.TextIOWrapper:
    """sys.stdin/stdout/stderr as the interpreter makes them at its start (create_stdio in
    Python/pylifecycle.c) for the fd the child was given: line-buffered on a terminal (and
    stderr always), the encoding and error handler the startup environment chose."""
    buffered: Any = open(  # noqa: SIM115  (the stream the interpreter keeps open)
        fd,
        "wb" if write else "rb",
        buffering=0 if write and old.write_through else -1,
        closefd=False,
    )
    raw = buffered.raw if hasattr(buffered, "raw") else buffered
    raw.name = name
    line = not old.write_through and (raw.isatty() or fd == 2)
    stream = io.TextIOWrapper(
        buffered,
        encoding=old.encoding,
        errors=old.errors,
        newline="\n",
        line_buffering=line,
        write_through=old.write_through,
    )
    stream.mode = "w" if write else "r"  # type: ignore[misc]
    return stream


def _become(request: dict[str, Any], fds: list[int]) -> None:
    """In the child: the process the console script would be, given this request."""
    os.dup2(fds[0], 0)
    os.dup2(fds[1], 1)
    os.dup2(fds[2], 2)
    os.closerange(3, 1 << 16)  # as subprocess's close_fds: nothing of the zygote's
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update({os.fsdecode(k): os.fsdecode(v) for k, v in request["env"].items()})
    sys.argv = [os.fsdecode(arg) for arg in request["argv"]]
    sys.stdin = sys.__stdin__ = _stdio(0, sys.__stdin__, False, "<stdin>")  # type: ignore[arg-type,misc]
    sys.stdout = sys.__stdout__ = _stdio(1, sys.__stdout__, True, "<stdout>")  # type: ignore[arg-type,misc]
    sys.stderr = sys.__stderr__ = _stdio(2, sys.__stderr__, True, "<stderr>")  # type: ignore[arg-type,misc]
    _redo()


def _restore_signals() -> None:
    """Every disposition and the signal mask as the interpreter started with them: none
    of the zygote's handlers (its SIGCHLD's), none ignored or blocked in its stead."""
    for sig, handler in _START_SIGNALS.items():
        if handler is not None and signal.getsignal(sig) != handler:
            signal.signal(sig, handler)
    signal.pthread_sigmask(signal.SIG_SETMASK, _START_MASK)


def _redo() -> None:
    """What the preload took of the zygote's state, taken again for the child (REDONE,
    IMPORTED_AHEAD)."""
    logging = sys.modules.get("logging")
    if logging is not None:  # relativeCreated counts from the process's start
        logging._startTime = time.time()  # type: ignore[attr-defined]
    rich = sys.modules.get("rich")
    if rich is not None:  # where its tracebacks resolve relative file names
        try:
            rich._IMPORT_CWD = os.path.abspath(os.getcwd())  # type: ignore[attr-defined]
        except FileNotFoundError:
            rich._IMPORT_CWD = ""  # type: ignore[attr-defined]
    process = sys.modules["multiprocessing.process"]
    try:
        process.ORIGINAL_DIR = os.path.abspath(os.getcwd())  # type: ignore[attr-defined]
    except OSError:
        process.ORIGINAL_DIR = None  # type: ignore[attr-defined]
    authkey = process.AuthenticationString(os.urandom(32))  # type: ignore[attr-defined]
    process.current_process()._config["authkey"] = authkey  # type: ignore[attr-defined]
    handlers = sys.modules["wsgiref.handlers"]
    handlers.BaseHandler.os_environ = handlers.read_environ()  # type: ignore[attr-defined]


Child = tuple[dict[str, Any], list[int]]  # a request, and the fds for 0, 1 and 2


class _Server:
    """Forks a child per request on the control socket, tells each caller its child's pid,
    then its status and CPU once reaped; kills a child whose caller asks or goes away."""

    def __init__(self, control: socket.socket) -> None:
        self.control = control
        self.me = os.getpid()
        self.wake_r, wake_w = os.pipe()
        os.set_blocking(self.wake_r, False)
        os.set_blocking(wake_w, False)
        self.old_wakeup = signal.set_wakeup_fd(wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)  # wakes the selector (the wakeup fd)
        self.selector = selectors.DefaultSelector()
        self.selector.register(control, selectors.EVENT_READ)
        self.selector.register(self.wake_r, selectors.EVENT_READ)
        self.children: dict[int, socket.socket] = {}
        self.listened: set[socket.socket] = set()  # the callers' sockets still listened to
        self.cpu = 0.0  # this process's, as last told: the preload is in the first report

    def serve(self) -> Child | None:
        """Until the control socket closes; returns only in a child."""
        while True:
            for key, _ in self.selector.select():
                if key.fileobj is self.control:
                    msg, fds, _flags, _addr = socket.recv_fds(self.control, 1 << 20, 5)
                    if not msg:  # the tests are done (or died): so are the children
                        self._stop()
                        return None
                    child = self._fork(pickle.loads(msg), fds)
                    if child is not None:
                        return child
                elif key.fileobj == self.wake_r:
                    with contextlib.suppress(BlockingIOError):
                        while os.read(self.wake_r, 4096):
                            pass
                    self._reap()
                else:  # b"kill" (a caller's timeout) or b"" (the caller is gone)
                    key.fileobj.recv(16)  # type: ignore[union-attr]
                    os.kill(key.data, signal.SIGKILL)  # not reaped yet: still the child's pid
                    self._forget(key.fileobj)  # type: ignore[arg-type]

    def _fork(self, request: dict[str, Any], fds: list[int]) -> Child | None:
        conn = socket.socket(fileno=fds[0])
        pid = os.fork()
        if pid == 0:
            signal.set_wakeup_fd(self.old_wakeup)
            _restore_signals()
            self.selector.close()
            for other in (self.control, conn, *self.children.values()):
                other.close()
            _prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
            if os.getppid() != self.me:  # the zygote died already: no signal would come
                os._exit(1)
            return request, fds[1:]
        for fd in fds[1:]:
            os.close(fd)
        self.children[pid] = conn
        self.selector.register(conn, selectors.EVENT_READ, pid)
        self.listened.add(conn)
        conn.sendall(pickle.dumps({"pid": pid}))
        return None

    def _forget(self, conn: socket.socket) -> None:
        if conn in self.listened:
            self.listened.discard(conn)
            self.selector.unregister(conn)

    def _reap(self) -> None:
        while self.children:
            pid, status, usage = os.wait4(-1, os.WNOHANG)
            if pid == 0:
                return
            conn = self.children.pop(pid)
            mine = resource.getrusage(resource.RUSAGE_SELF)
            cpu, self.cpu = self.cpu, mine.ru_utime + mine.ru_stime
            report = {
                "status": status,
                "cpu": usage.ru_utime + usage.ru_stime,
                "zygote_cpu": self.cpu - cpu,
            }
            self._forget(conn)
            with contextlib.suppress(OSError):  # the caller went away
                conn.sendall(pickle.dumps(report))
            conn.close()

    def _stop(self) -> None:
        for pid in self.children:
            os.kill(pid, signal.SIGKILL)
        while self.children:
            pid, _status = os.waitpid(-1, 0)
            self.children.pop(pid).close()


def _script(path: str) -> CodeType:
    with open(path, "rb") as source:
        return compile(source.read(), path, "exec")


def main() -> CodeType | None:
    script, control_fd, *modules = sys.argv[1:]
    # As `python SCRIPT` would: the script's directory first on the path, not this one's.
    sys.path[0] = os.path.dirname(script)
    control = socket.socket(fileno=int(control_fd))
    import gc

    # The preload without collections (about a sixth of its CPU: its imports make hundreds
    # of thousands of objects, and each collection went over those made so far). What they
    # left in cycles is frozen with the rest, as what was left after the last collection was.
    gc.disable()
    report = _preload(modules)
    code = _script(script)
    gc.enable()  # a child collects as any interpreter does
    gc.freeze()  # the children's collections leave the preloaded objects (and their pages) be
    control.sendall(pickle.dumps(report))
    child = _Server(control).serve()
    if child is None:
        return None
    request, fds = child
    _become(request, fds)
    return code


def _main_module(path: str) -> ModuleType:
    """A ``__main__`` module as ``python PATH`` makes it (sys.modules["__main__"] too)."""
    module = ModuleType("__main__")
    module.__file__ = path
    module.__loader__ = SourceFileLoader("__main__", path)
    module.__builtins__ = builtins  # type: ignore[attr-defined]
    module.__annotations__ = {}
    sys.modules["__main__"] = module
    return module


def _exit_status(exc: SystemExit) -> int:
    """The status ``sys.exit(code)`` gives (``_Py_HandleSystemExit``): None 0, an int itself
    (a C long's, 255 out of its range), anything else printed to stderr and 1."""
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF if -(1 << 63) <= code < 1 << 63 else 0xFF
    stderr = sys.stderr
    if stderr is not None:
        with contextlib.suppress(Exception):
            stderr.write(f"{code}\n")
            stderr.flush()
    return 1


def _run(code: CodeType) -> None:
    """In the child: the script, then the interpreter's own ending (Py_RunMain, then
    Py_FinalizeEx) but for its teardown of the modules, the child then leaving with
    ``os._exit``. That teardown (about half a short command's CPU) drops a reference to
    every object the preload made, writing to nearly every page the child shares with the
    zygote: each then copied. What a process sees of its end is kept, in order: an uncaught
    exception's traceback (``sys.excepthook``, ``sys.last_*``), ``sys.exit``'s status or
    text, the non-daemon threads joined, the atexit functions, stdout and stderr flushed (120
    when one cannot be), an uncaught KeyboardInterrupt's SIGINT. What is not: the
    ``__del__`` of what modules still hold, and the closing of files left open and unflushed
    (logging's are flushed by its atexit function)."""
    status = 0
    interrupted = False
    try:
        exec(code, _main_module(code.co_filename).__dict__)
    except SystemExit as exc:
        status = _exit_status(exc)
    except BaseException as exc:  # PyErr_Print: the traceback from the script's own frame
        tb = exc.__traceback__.tb_next if exc.__traceback__ is not None else None
        sys.last_type, sys.last_value, sys.last_traceback = type(exc), exc, tb
        try:
            sys.excepthook(type(exc), exc.with_traceback(tb), tb)
        except BaseException as hook_exc:
            sys.__excepthook__(type(hook_exc), hook_exc, hook_exc.__traceback__)
        status = 1
        interrupted = isinstance(exc, KeyboardInterrupt)
    threading._shutdown()  # type: ignore[attr-defined]  # wait_for_thread_shutdown
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):  # flush_std_files
        if stream is None or getattr(stream, "closed", False):
            continue
        try:
            stream.flush()
        except Exception as exc:  # stdout's said (stderr's cannot be), either is 120
            if stream is sys.stdout:
                _unraisable(exc, stream)
            status = 120
    if interrupted:  # exit_sigint: the shell sees the interrupt
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
        status = 128 + signal.SIGINT
    os._exit(status)


def _unraisable(exc: BaseException, obj: object) -> None:
    """``PyErr_WriteUnraisable(obj)``, from the failed call's own frame (the interpreter's
    call has none of ours): the default hook's lines, or a hook of the script's given it."""
    tb = exc.__traceback__.tb_next if exc.__traceback__ is not None else None
    if sys.unraisablehook is not sys.__unraisablehook__:  # the C hook takes only its type
        args = SimpleNamespace(
            exc_type=type(exc), exc_value=exc, exc_traceback=tb, err_msg=None, object=obj
        )
        sys.unraisablehook(args)  # type: ignore[arg-type]
        return
    import traceback

    with contextlib.suppress(Exception):
        sys.stderr.write(f"Exception ignored in: {obj!r}\n")
        traceback.print_exception(type(exc), exc, tb, file=sys.stderr)
        sys.stderr.flush()


if __name__ == "__main__":
    _code = main()
    if _code is not None:  # the child: the script runs, then ends as the interpreter would
        _run(_code)
