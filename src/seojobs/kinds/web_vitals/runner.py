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
