"""One Lighthouse run: the command, its process tree's life, its report.

Lighthouse (``lighthouse/`` in the repository, pinned; ``npm ci`` installs it) drives Debian's
Chromium (``CHROME_PATH``). Each run gets a scratch directory (its ``TMPDIR``: Chromium's
profile lands there and goes with it) and a marker in its environment; it runs under
``reaper.py`` in a session of its own. A run that exceeds its timeout or whose task is
cancelled is killed whole (the reaper's sweep, then the worker's own); a worker killed by
SIGKILL takes it along (the reaper's death signal).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shlex
import signal
import sys
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seojobs.kinds.web_vitals import reaper
from seojobs.kinds.web_vitals.report import LighthouseFailed

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


def run_marker() -> str:
    """The marker of one run: the worker's pid first, so a test can find a worker's runs."""
    return f"{os.getpid()}-{uuid.uuid4().hex}"


def command(
    browser: Browser, url: str, form_factor: str, resolver_rules: str, out: str
) -> list[str]:
    flags = [*CHROME_FLAGS, f'--host-resolver-rules="{resolver_rules}"']
    cmd = [
        browser.lighthouse,
        url,
        "--quiet",
        "--output=json",
        f"--output-path={out}",
        "--only-categories=performance",
        f"--chrome-flags={' '.join(flags)}",
        f"--max-wait-for-load={int(browser.max_wait * 1000)}",
    ]
    if form_factor == "desktop":
        cmd.append("--preset=desktop")
    if browser.throttling:
        cmd.append(f"--throttling-method={browser.throttling}")
    return cmd


async def _kill(process: asyncio.subprocess.Process, marker: str) -> None:
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


async def lighthouse(browser: Browser, url: str, form_factor: str, resolver_rules: str) -> Any:
    """Run Lighthouse once and return its JSON report. Raises :class:`LighthouseFailed`
    (``lighthouse_timeout`` past the timeout, ``lighthouse_error`` without a report)."""
    marker = run_marker()
    with tempfile.TemporaryDirectory(prefix="seojobs-lh-") as scratch:
        out = os.path.join(scratch, "report.json")
        env = {
            **os.environ,
            "CHROME_PATH": browser.chrome,
            "TMPDIR": scratch,
            reaper.MARKER_ENV: marker,
        }
        cmd = command(browser, url, form_factor, resolver_rules, out)
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-I",
            REAPER,
            str(os.getpid()),
            "--",
            *cmd,
            env=env,
            cwd=scratch,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
        )
        try:
            async with asyncio.timeout(browser.timeout):
                _, stderr = await process.communicate()
        except TimeoutError:
            await _kill(process, marker)
            message = f"Lighthouse ran past {browser.timeout:g}s on {url} ({form_factor}): killed"
            raise LighthouseFailed(TIMEOUT, message) from None
        except BaseException:  # cancelled (job cancelled, worker stopping): no browser left
            await asyncio.shield(_kill(process, marker))
            raise
        try:
            return json.loads(await asyncio.to_thread(Path(out).read_bytes))
        except (OSError, ValueError):
            tail = stderr.decode("utf-8", "replace").strip()[-500:]
            why = f"exit {process.returncode}: {tail}" if tail else f"exit {process.returncode}"
            raise LighthouseFailed(
                "lighthouse_error", f"Lighthouse wrote no report ({why}); {shlex.join(cmd[:2])}"
            ) from None


WORKER_JS = str(Path(__file__).resolve().with_name("lighthouse_worker.mjs"))


def node_modules(lighthouse_cli: str) -> str:
    """The ``node_modules`` folder holding the Lighthouse whose CLI is ``lighthouse_cli``
    (``node_modules/.bin/lighthouse`` links to ``node_modules/lighthouse/cli/index.js``)."""
    return str(Path(lighthouse_cli).resolve().parents[2])


def request(
    browser: Browser, url: str, form_factor: str, resolver_rules: str, out: str
) -> dict[str, Any]:
    """What a warm slot is asked: the same settings as :func:`command`'s CLI flags."""
    flags: dict[str, Any] = {
        "onlyCategories": ["performance"],
        "maxWaitForLoad": int(browser.max_wait * 1000),
    }
    if browser.throttling:
        flags["throttlingMethod"] = browser.throttling
    chrome_flags = [*CHROME_FLAGS, f"--host-resolver-rules={resolver_rules}"]
    return {
        "url": url,
        "form_factor": form_factor,
        "chrome_flags": chrome_flags,
        "flags": flags,
        "out": out,
    }


class Slot:
    """One warm Node process (Lighthouse's Node API) and the Chromium it keeps, under the
    reaper in a session of its own, with a scratch directory (its ``TMPDIR``) and a marker."""

    def __init__(
        self, browser: Browser, recycle: int, script: str = "", label: str = "Lighthouse"
    ) -> None:
        """``script``: the Node worker (Lighthouse's by default; the site audit's renderer
        uses the same slots with its own); ``label`` names it in errors."""
        self.browser, self.recycle = browser, recycle
        self.script, self.label = script or WORKER_JS, label
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

    async def run(self, url: str, form_factor: str, resolver_rules: str) -> Any:
        """One Lighthouse run in this slot; the same contract as :func:`lighthouse`."""
        ask = request(self.browser, url, form_factor, resolver_rules, "")
        answer, out = await self.call(ask, f"{url} ({form_factor})")
        try:
            if not answer.get("ok"):
                raise LighthouseFailed("lighthouse_error", f"Lighthouse: {answer.get('error')}")
            try:
                return json.loads(await asyncio.to_thread(Path(out).read_bytes))
            except (OSError, ValueError):
                raise LighthouseFailed("lighthouse_error", "Lighthouse wrote no report") from None
        finally:
            with contextlib.suppress(OSError):
                os.unlink(out)

    async def call(self, ask: dict[str, Any], what: str) -> tuple[dict[str, Any], str]:
        """Send one request (its ``id`` and ``out`` set here) and wait for its answer, within
        the browser's timeout: the answer and the file the worker may have written (the
        caller removes it). A timeout, a cancel or a dead worker ends the slot (the next call
        starts it afresh) and raises :class:`LighthouseFailed` (or the cancel)."""
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
            raise LighthouseFailed(TIMEOUT, message) from None
        except BaseException:  # cancelled (job cancelled, worker stopping): no browser left
            await asyncio.shield(self.close(kill=True))
            raise
        if answer is None:  # the slot died: it is started afresh for the next run
            why = self._stderr() or f"exit {process.returncode}"
            await self.close(kill=True)
            raise LighthouseFailed("lighthouse_error", f"{self.label}'s worker ended ({why})")
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
                await _kill(process, self.marker)
            else:  # ended by itself: its reaper swept already; once more, to be sure
                await asyncio.to_thread(reaper.sweep, self.marker)
        if self.scratch is not None:
            await asyncio.to_thread(self.scratch.cleanup)
            self.scratch = None


class Pool:
    """``size`` warm slots for one job's runs; a run takes a free slot (started on first use)."""

    def __init__(self, browser: Browser, size: int, recycle: int) -> None:
        self.slots = [Slot(browser, recycle) for _ in range(size)]
        self.free: asyncio.Queue[Slot] = asyncio.Queue()
        for slot in self.slots:
            self.free.put_nowait(slot)

    async def lighthouse(self, url: str, form_factor: str, resolver_rules: str) -> Any:
        slot = await self.free.get()
        try:
            return await slot.run(url, form_factor, resolver_rules)
        finally:
            self.free.put_nowait(slot)

    async def close(self) -> None:
        await asyncio.gather(*(slot.close() for slot in self.slots))
