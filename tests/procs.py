"""Real ``seojobs worker`` processes for crash and concurrency tests: each its own process,
forked from the zygote of tests/clifork.py (``console_script=True``: the installed script)."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

from tests.clifork import Process, popen
from tests.conftest import subprocess_env


class Procs:
    def __init__(self, url: str, tmp: Path) -> None:
        self.url = url
        self.tmp = tmp
        self.procs: list[Process] = []

    def worker(self, *args: str, console_script: bool = False, **env: str) -> Process:
        with open(self.tmp / f"worker{len(self.procs)}.log", "wb") as log:
            proc = popen(
                "worker",
                *args,
                env=subprocess_env(self.url, **env),
                stdout=log,
                stderr=subprocess.STDOUT,
                console_script=console_script,
            )
        self.procs.append(proc)
        return proc

    def replace(self, victim: Process, **env: str) -> Process:
        """SIGKILL ``victim`` (a crash: nothing released, nothing flushed), wait for it to
        die, and start another worker that will rescue what it held."""
        victim.send_signal(signal.SIGKILL)
        victim.wait(timeout=30)
        return self.worker(**env)

    def exits(self) -> str:
        """Each worker's exit code and the end of its log, for assertion messages."""
        return "\n".join(
            f"worker{i}: exit {proc.returncode}: "
            + (self.tmp / f"worker{i}.log").read_text(errors="replace")[-2000:]
            for i, proc in enumerate(self.procs)
        )

    def stop_all(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
