"""A script for tests/e2e/test_clifork.py: run as ``python clifork_probe.py WHAT …`` and forked
from tests/clifork.py's zygote, it must behave alike. Imports preloaded modules (logging, Rich)
whose imports took something of the process's state."""

from __future__ import annotations

import atexit
import ctypes
import json
import logging
import os
import resource
import signal
import subprocess
import sys
import threading
import time

import rich

PR_GET_PDEATHSIG = 2


def _pdeathsig() -> int:
    value = ctypes.c_int()
    ctypes.CDLL(None, use_errno=True).prctl(PR_GET_PDEATHSIG, ctypes.byref(value), 0, 0, 0)
    return value.value


def _kernel_signals() -> dict[str, str]:
    """The kernel's view (/proc/self/status): signals blocked, ignored, caught."""
    with open("/proc/self/status", encoding="ascii") as status:
        lines = [
            line.split(":") for line in status if line.startswith(("SigBlk", "SigIgn", "SigCgt"))
        ]
    return {name: value.strip() for name, value in lines}


def started() -> dict[str, object]:
    """What a process is as it starts, beyond ``state``: threads, signals as the kernel has
    them, its group, session, and the signal it gets when its parent dies."""
    return {
        "threads": threading.active_count(),
        "tasks": len(os.listdir("/proc/self/task")),
        "kernel_signals": _kernel_signals(),
        "sigmask": sorted(signal.pthread_sigmask(signal.SIG_BLOCK, [])),
        "pgrp": os.getpgrp(),
        "sid": os.getsid(0),
        "pdeathsig": _pdeathsig(),
        "nofile": resource.getrlimit(resource.RLIMIT_NOFILE),
        "priority": os.getpriority(os.PRIO_PROCESS, 0),
    }


def state() -> dict[str, object]:
    """What a process is, that a fork could get wrong (the pid itself aside)."""
    return {
        "argv": sys.argv,
        "cwd": os.getcwd(),
        "rich_cwd": rich._IMPORT_CWD,  # type: ignore[attr-defined]
        "environ": dict(os.environ),
        # The C library's environment, which a child process of this one inherits.
        "c_environ": subprocess.run(["/usr/bin/env"], capture_output=True, text=True).stdout,
        "fds": sorted(os.listdir("/proc/self/fd")),
        "tty": [os.isatty(fd) for fd in (0, 1, 2)],
        "streams": [
            (s.encoding, s.errors, s.line_buffering, s.write_through, s.name, s.mode)  # type: ignore[attr-defined]
            for s in (sys.stdin, sys.stdout, sys.stderr)
        ],
        # Found when a stream is made: a fork that kept the zygote's would say its /dev/null's.
        "seekable": [s.seekable() for s in (sys.stdin, sys.stdout, sys.stderr)],
        "dunder_streams": [sys.__stdin__ is sys.stdin, sys.__stdout__ is sys.stdout],
        "signals": {
            signal.Signals(sig).name: str(signal.getsignal(sig))
            for sig in signal.valid_signals()
            if sig < signal.SIGRTMIN and sig not in (signal.SIGKILL, signal.SIGSTOP)
        },
        "path": sys.path,
        "executable": sys.executable,
        "main": sys.modules["__main__"].__dict__.get("__file__"),
        "flags": list(sys.flags),
        "umask": os.umask(0o022),
        "logging_handlers": [type(h).__name__ for h in logging.getLogger().handlers],
    }


class _Unflushable:
    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        raise OSError("cannot flush")

    def __repr__(self) -> str:
        return "<unflushable>"


class _Said:
    """Says so on stderr when deleted."""

    def __init__(self) -> None:
        self.write = os.write

    def __del__(self) -> None:
        self.write(2, b"deleted at the teardown\n")


_kept: object = None


def end(what: str) -> None:
    """The ways a script ends."""
    if what == "exit":
        sys.stdout.write("unflushed")  # written at the interpreter's end
        sys.exit(int(sys.argv[2]))
    elif what == "exit-text":
        sys.exit(f"stopped: {sys.argv[2]}")
    elif what == "raise":
        raise ValueError("boom")
    elif what == "ending":
        ending(sys.argv[2])
    elif what == "teardown":  # a global's __del__, at the modules' teardown
        global _kept
        _kept = _Said()


def ending(how: str) -> None:
    """What an end does after the script: a thread joined, atexit, the flush of stdout."""
    out = sys.stdout  # the stream the interpreter made, whatever sys.stdout becomes
    atexit.register(lambda: print("atexit ran", file=out, flush=True))
    threading.Thread(target=lambda: (time.sleep(0.2), print("thread ended", file=out))).start()
    sys.stdout.write("unflushed ")
    if how == "interrupt":
        raise KeyboardInterrupt
    if how == "flush-fails":
        sys.stdout.flush()
        sys.stdout = _Unflushable()
    sys.exit(int(how) if how.isdigit() else how)


def main() -> None:
    what = sys.argv[1]
    if what == "state":
        print(json.dumps(state()))
    elif what in ("exit", "exit-text", "raise", "ending", "teardown"):
        end(what)
    elif what == "echo":
        data = sys.stdin.read()
        sys.stdout.write(data.upper())
        sys.stderr.write(f"read {len(data)} characters\n")
    elif what == "env":
        print(os.environ.get(sys.argv[2]))
        sys.stdout.flush()
        subprocess.run(["/bin/sh", "-c", f'echo "${sys.argv[2]}"'], check=True)
    elif what == "sleep":
        print(os.getpid(), flush=True)
        time.sleep(600)
    elif what == "wait":  # a long-running process: what it is, then until a signal
        early = started()
        print(json.dumps({"pid": os.getpid(), **early, **state()}), flush=True)
        while True:
            time.sleep(600)
    elif what == "spin":  # CPU of its own, then the end
        while time.process_time() < float(sys.argv[2]):
            pass


main()
