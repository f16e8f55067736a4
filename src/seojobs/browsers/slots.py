"""Warm browser slots, shared by the kinds that drive Chromium (web vitals' Lighthouse, the
site audit's ``render: "js"``): the Node process and its Chromium, their process tree's life
(``reaper.py``, run by path), and the host rules that keep Chromium on what the address
guard checked.

A slot's Node process runs under ``reaper.py`` in a session of its own, with a scratch
directory (its ``TMPDIR``: Chromium's profile lands there and goes with it) and a marker in
its environment. One that exceeds its timeout or whose task is cancelled is killed whole (the
reaper's sweep, then the worker's own); a worker killed by SIGKILL takes it along (the
reaper's death signal).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seojobs.browsers import reaper
from seojobs.fetch.guard import parse_ip_host

REAPER = str(Path(reaper.__file__).resolve())
TIMEOUT = "lighthouse_timeout"
# Chromium's flags: headless, no first-run or background traffic of its own.
CHROME_FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
)


@dataclass(frozen=True)
class Browser:
    lighthouse: str
    chrome: str
    timeout: float
    max_wait: float = 45.0
    throttling: str | None = None
    node: str = "node"


class BrowserFailed(Exception):
    """A browser run failed: ``code`` (``lighthouse_timeout``, ``lighthouse_error``: the
    codes web vitals has always stored) and a message."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def run_marker() -> str:
    """The marker of one run: the worker's pid first, so a test can find a worker's runs."""
    return f"{os.getpid()}-{uuid.uuid4().hex}"


def resolver_rules(host: str, addresses: tuple[Any, ...]) -> str:
    """Chromium's host rules keeping it on what the guard checked."""
    if parse_ip_host(host) is not None:
        return f"MAP * ~NOTFOUND, EXCLUDE {host}"
    address = addresses[0]
    target = f"[{address}]" if address.version == 6 else str(address)
    return f"MAP {host} {target}, MAP * ~NOTFOUND"


async def kill_run(process: asyncio.subprocess.Process, marker: str) -> None:
    """The reaper sweeps the run on SIGTERM; then the group and the sweep from here, in case
    the reaper itself could not (it may have been killed first)."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(process.pid, signal.SIGTERM)
    try:
        async with asyncio.timeout(5):
            await process.wait()
    except TimeoutError:
        pass
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    await asyncio.to_thread(reaper.sweep, marker)
    await process.wait()


def node_modules(lighthouse_cli: str) -> str:
    """The ``node_modules`` folder holding the Lighthouse whose CLI is ``lighthouse_cli``
    (``node_modules/.bin/lighthouse`` links to ``node_modules/lighthouse/cli/index.js``)."""
    return str(Path(lighthouse_cli).resolve().parents[2])


class Slot:
    """One warm Node process running ``script`` and the Chromium it keeps, under the reaper
    in a session of its own, with a scratch directory (its ``TMPDIR``) and a marker. The
    script reads one JSON request a line on stdin and answers one JSON line with its ``id``
    (web vitals' Lighthouse worker, the site audit's renderer)."""

    def __init__(self, browser: Browser, recycle: int, script: str, label: str) -> None:
        """``label`` names the slot in errors."""
        self.browser, self.recycle = browser, recycle
        self.script, self.label = script, label
        self.process: asyncio.subprocess.Process | None = None
        self.marker = ""
        self.scratch: tempfile.TemporaryDirectory[str] | None = None
        self.sent = 0

    async def _start(self) -> asyncio.subprocess.Process:
        self.marker = run_marker()
        self.scratch = tempfile.TemporaryDirectory(prefix="seojobs-lh-")
        env = {
            **os.environ,
            "CHROME_PATH": self.browser.chrome,
            "TMPDIR": self.scratch.name,
            reaper.MARKER_ENV: self.marker,
        }
        path = os.path.join(self.scratch.name, "stderr.txt")
        with await asyncio.to_thread(open, path, "wb") as stderr:
            self.process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-I",
                REAPER,
                str(os.getpid()),
                "--",
                self.browser.node,
                self.script,
                node_modules(self.browser.lighthouse),
                self.browser.chrome,
                str(self.recycle),
                env=env,
                cwd=self.scratch.name,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=stderr,
                start_new_session=True,
                limit=1 << 20,
            )
        return self.process

    def _stderr(self) -> str:
        if self.scratch is None:
            return ""
        path = Path(self.scratch.name) / "stderr.txt"
        with contextlib.suppress(OSError):
            return path.read_text("utf-8", "replace").strip()[-500:]
        return ""

    async def call(self, ask: dict[str, Any], what: str) -> tuple[dict[str, Any], str]:
        """Send one request (its ``id`` and ``out`` set here) and wait for its answer, within
        the browser's timeout: the answer and the file the worker may have written (the
        caller removes it). A timeout, a cancel or a dead worker ends the slot (the next call
        starts it afresh) and raises :class:`BrowserFailed` (or the cancel)."""
        process = self.process or await self._start()
        assert process.stdin is not None and process.stdout is not None and self.scratch
        self.sent += 1
        out = os.path.join(self.scratch.name, f"report-{self.sent}.json")
        ask = {**ask, "id": self.sent, "out": out}
        try:
            async with asyncio.timeout(self.browser.timeout):
                process.stdin.write(json.dumps(ask).encode() + b"\n")
                await process.stdin.drain()
                answer = await self._answer(process, self.sent)
        except TimeoutError:
            await self.close(kill=True)
            message = f"{self.label} ran past {self.browser.timeout:g}s on {what}: killed"
            raise BrowserFailed(TIMEOUT, message) from None
        except BaseException:  # cancelled (job cancelled, worker stopping): no browser left
            await asyncio.shield(self.close(kill=True))
            raise
        if answer is None:  # the slot died: it is started afresh for the next run
            why = self._stderr() or f"exit {process.returncode}"
            await self.close(kill=True)
            raise BrowserFailed("lighthouse_error", f"{self.label}'s worker ended ({why})")
        return answer, out

    @staticmethod
    async def _answer(process: asyncio.subprocess.Process, wanted: int) -> dict[str, Any] | None:
        assert process.stdout is not None
        while line := await process.stdout.readline():
            with contextlib.suppress(ValueError):
                answer = json.loads(line)
                if isinstance(answer, dict) and answer.get("id") == wanted:
                    return answer
        return None

    async def close(self, *, kill: bool = False) -> None:
        """End the slot: politely (end of input: Node kills its Chromium) unless ``kill``,
        then the reaper's sweep and the worker's own, as for a cold run."""
        process, self.process = self.process, None
        if process is not None:
            if not kill and process.stdin is not None:
                with contextlib.suppress(OSError):
                    process.stdin.close()
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(10):
                        await process.wait()
            if process.returncode is None:
                await kill_run(process, self.marker)
            else:  # ended by itself: its reaper swept already; once more, to be sure
                await asyncio.to_thread(reaper.sweep, self.marker)
        if self.scratch is not None:
            await asyncio.to_thread(self.scratch.cleanup)
            self.scratch = None
