"""One Lighthouse run: the command, its process tree's life, its report.

Lighthouse (``lighthouse/`` in the repository, pinned; ``npm ci`` installs it) drives Debian's
Chromium (``CHROME_PATH``). Each run gets a scratch directory (its ``TMPDIR``: Chromium's
profile lands there and goes with it) and a marker in its environment; it runs under
``reaper.py`` in a session of its own. When ``SEOJOBS_FETCH_CA_FILE`` is set, Chromium's
``HOME`` is the job's folder whose NSS database trusts those CAs (``seojobs.browsers.nssdb``),
so an https page signed by them is verified in full, as the fetcher verifies it. A run that
exceeds its timeout or whose task is cancelled is killed whole (the reaper's sweep, then the
worker's own); a worker killed by SIGKILL takes it along (the reaper's death signal).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shlex
import sys
import tempfile
from pathlib import Path
from typing import Any

from seojobs.browsers import reaper, slots
from seojobs.browsers.slots import (
    CHROME_FLAGS,
    REAPER,
    TIMEOUT,
    Browser,
    kill_run,
    run_marker,
)
from seojobs.kinds.web_vitals.report import LighthouseFailed

__all__ = ["CHROME_FLAGS", "TIMEOUT", "Browser", "Pool", "Slot", "command", "lighthouse"]


# No full-page screenshot: Lighthouse captures the whole page by default for its HTML report's
# element pictures, which nothing here reads; it was 1.5 of a 2.2 MB report (a 60-section
# page, mobile), captured by Chromium, encoded by Node and parsed again by the worker.
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
        "--disable-full-page-screenshot",
        f"--chrome-flags={' '.join(flags)}",
        f"--max-wait-for-load={int(browser.max_wait * 1000)}",
    ]
    if form_factor == "desktop":
        cmd.append("--preset=desktop")
    if browser.throttling:
        cmd.append(f"--throttling-method={browser.throttling}")
    return cmd


async def lighthouse(
    browser: Browser, url: str, form_factor: str, resolver_rules: str, home: str | None = None
) -> Any:
    """Run Lighthouse once and return its JSON report (``home``: Chromium's ``HOME``, whose
    NSS database holds the CAs to trust). Raises :class:`LighthouseFailed`
    (``lighthouse_timeout`` past the timeout, ``lighthouse_error`` without a report)."""
    marker = run_marker()
    with tempfile.TemporaryDirectory(prefix="seojobs-lh-") as scratch:
        out = os.path.join(scratch, "report.json")
        env = {
            **os.environ,
            "CHROME_PATH": browser.chrome,
            "TMPDIR": scratch,
            reaper.MARKER_ENV: marker,
            **({"HOME": home} if home else {}),
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
            await kill_run(process, marker)
            message = f"Lighthouse ran past {browser.timeout:g}s on {url} ({form_factor}): killed"
            raise LighthouseFailed(TIMEOUT, message) from None
        except BaseException:  # cancelled (job cancelled, worker stopping): no browser left
            await asyncio.shield(kill_run(process, marker))
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


def request(
    browser: Browser,
    url: str,
    form_factor: str,
    resolver_rules: str,
    out: str,
    home: str | None = None,
) -> dict[str, Any]:
    """What a warm slot is asked: the same settings as :func:`command`'s CLI flags (and
    Chromium's ``HOME``, as :func:`lighthouse` sets it)."""
    flags: dict[str, Any] = {
        "onlyCategories": ["performance"],
        "disableFullPageScreenshot": True,
        "maxWaitForLoad": int(browser.max_wait * 1000),
    }
    if browser.throttling:
        flags["throttlingMethod"] = browser.throttling
    chrome_flags = [*CHROME_FLAGS, f"--host-resolver-rules={resolver_rules}"]
    ask = {
        "url": url,
        "form_factor": form_factor,
        "chrome_flags": chrome_flags,
        "flags": flags,
        "out": out,
    }
    if home:
        ask["home"] = home
    return ask


class Slot(slots.Slot):
    """A warm slot running Lighthouse's Node API (``lighthouse_worker.mjs``)."""

    def __init__(self, browser: Browser, recycle: int) -> None:
        super().__init__(browser, recycle, WORKER_JS, "Lighthouse")

    async def run(
        self, url: str, form_factor: str, resolver_rules: str, home: str | None = None
    ) -> Any:
        """One Lighthouse run in this slot; the same contract as :func:`lighthouse`."""
        ask = request(self.browser, url, form_factor, resolver_rules, "", home)
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


class Pool:
    """``size`` warm slots for one job's runs; a run takes a free slot (started on first use)."""

    def __init__(self, browser: Browser, size: int, recycle: int) -> None:
        self.slots = [Slot(browser, recycle) for _ in range(size)]
        self.free: asyncio.Queue[Slot] = asyncio.Queue()
        for slot in self.slots:
            self.free.put_nowait(slot)

    async def lighthouse(
        self, url: str, form_factor: str, resolver_rules: str, home: str | None = None
    ) -> Any:
        slot = await self.free.get()
        try:
            return await slot.run(url, form_factor, resolver_rules, home)
        finally:
            self.free.put_nowait(slot)

    async def close(self) -> None:
        await asyncio.gather(*(slot.close() for slot in self.slots))
