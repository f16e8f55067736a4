"""JavaScript rendering for ``render: "js"`` audits: each fetched HTML page rendered again in
Debian's Chromium, so the audit reads the DOM its scripts built and can say what they changed.

The browsers are warm slots (``seojobs.browsers.slots``, web vitals' too) running
``render_worker.mjs`` (puppeteer-core from the pinned Lighthouse's ``node_modules``),
``SEOJOBS_SITE_AUDIT_RENDER_CONCURRENCY`` of them per audit, each page in a browser context of
its own and within ``..._RENDER_TIMEOUT`` seconds. Chromium is held to the address policy as
web vitals' is: the page's host must pass the fetcher's
:class:`~seojobs.fetch.guard.AddressGuard`, and Chromium's ``--host-resolver-rules`` map that
host to the checked address and every other name to ``~NOTFOUND`` (a subresource on another
host is then a blocked resource, reported). Chromium trusts the CAs of
``SEOJOBS_FETCH_CA_FILE`` as the fetcher does, with full verification: they are the trust
anchors of an NSS database in a home folder of its own (``seojobs.browsers.nssdb``). A page
that cannot be rendered is audited from its raw HTML, with a ``render_failed`` finding: one
page's failure never fails the audit.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seojobs.browsers import nssdb, slots
from seojobs.browsers.slots import BrowserFailed, resolver_rules
from seojobs.engine.context import JobFailed
from seojobs.fetch import FetchError
from seojobs.fetch.guard import AddressGuard, GuardPolicy
from seojobs.fetch.urls import parse_url
from seojobs.settings import Settings

RENDER_JS = str(Path(__file__).resolve().with_name("render_worker.mjs"))
CHROMIUM_MISSING = "chromium_missing"
RENDERER_MISSING = "renderer_missing"


@dataclass(frozen=True)
class Rendered:
    """A page as Chromium left it: its DOM serialised (``html``), or why there is none."""

    html: str | None
    status: int | None = None
    final_url: str | None = None
    errors: tuple[str, ...] = ()  # uncaught script errors (a sample)
    blocked: tuple[dict[str, str], ...] = ()  # requests that failed: url, reason (a sample)
    truncated: bool = False
    error: str | None = None  # set when the page could not be rendered (html is None)


class Renderer:
    """A job's warm browsers; :meth:`render` takes a free one."""

    def __init__(self, settings: Settings, kind_settings: Any) -> None:
        self.browser = slots.Browser(
            lighthouse=kind_settings.render_lighthouse_path,
            chrome=kind_settings.render_chrome_path,
            # The page's own limit is the worker's; the slot's is a margin over it.
            timeout=float(kind_settings.render_timeout) + 15,
            node=kind_settings.render_node_path,
        )
        self.page_timeout = float(kind_settings.render_timeout)
        self.fixed_rules: str | None = kind_settings.render_resolver_rules
        self.max_bytes = settings.fetch_max_bytes
        self.guard = AddressGuard(
            GuardPolicy.from_settings(settings),
            lookup_timeout=settings.fetch_connect_timeout + 2 * settings.fetch_timeout,
        )
        recycle = kind_settings.render_recycle_after
        self.slots = [
            slots.Slot(self.browser, recycle, script=RENDER_JS, label="Chromium")
            for _ in range(kind_settings.render_concurrency)
        ]
        self.free: asyncio.Queue[slots.Slot] = asyncio.Queue()
        for slot in self.slots:
            self.free.put_nowait(slot)
        self.ca_file = settings.fetch_ca_file
        self.home: tempfile.TemporaryDirectory[str] | None = None  # trusts ca_file's CAs
        self.home_error: str | None = None
        self.home_lock = asyncio.Lock()

    def installed(self) -> None:
        """Fail the job before its first page when the browser cannot run (a coded error)."""
        for path, name, hint in (
            (self.browser.chrome, "Chromium", "SEOJOBS_SITE_AUDIT_RENDER_CHROME_PATH"),
            (self.browser.node, "Node.js", "SEOJOBS_SITE_AUDIT_RENDER_NODE_PATH"),
        ):
            if not Path(path).is_file():
                code = CHROMIUM_MISSING if name == "Chromium" else RENDERER_MISSING
                raise JobFailed(code, f'render "js" needs {name}: none at {path} ({hint})')
        modules = Path(slots.node_modules(self.browser.lighthouse)) / "puppeteer-core"
        if not modules.is_dir():
            raise JobFailed(
                RENDERER_MISSING,
                f'render "js" needs puppeteer-core (installed with Lighthouse): none at {modules} '
                "(SEOJOBS_SITE_AUDIT_RENDER_LIGHTHOUSE_PATH; `npm ci` in lighthouse/)",
            )

    async def render(self, url: str) -> Rendered:
        try:
            host = parse_url(url).host
            addresses = await self.guard.resolve(host)
            rules = self.fixed_rules or resolver_rules(host, addresses)
        except FetchError as exc:  # refused by the address policy, or unresolvable
            return Rendered(None, error=f"{exc.kind}: {exc.message}")
        ask = {
            "url": url,
            "chrome_flags": [*slots.CHROME_FLAGS, f"--host-resolver-rules={rules}"],
            "timeout_ms": int(self.page_timeout * 1000),
            "max_bytes": self.max_bytes,
        }
        if self.ca_file:
            home = await self._trusting_home()
            if home is None:
                return Rendered(None, error=self.home_error)
            ask["home"] = home
        slot = await self.free.get()
        try:
            answer, out = await slot.call(ask, url)
        except BrowserFailed as exc:
            return Rendered(None, error=exc.message)
        finally:
            self.free.put_nowait(slot)
        try:
            if not answer.get("ok"):
                return Rendered(None, error=str(answer.get("error") or "unknown")[:300])
            try:
                raw = await asyncio.to_thread(Path(out).read_bytes)
            except OSError:
                return Rendered(None, error="Chromium wrote no page")
        finally:
            with contextlib.suppress(OSError):
                os.unlink(out)
        return _rendered(raw[: self.max_bytes].decode("utf-8", "replace"), answer)

    async def _trusting_home(self) -> str | None:
        """Chromium's home folder, made once, whose NSS database trusts the fetcher's CA
        file; None when it could not be made (``home_error`` says why)."""
        async with self.home_lock:
            if self.home is None and self.home_error is None and self.ca_file:
                try:
                    self.home = await nssdb.trusting_home(self.ca_file)
                except (OSError, RuntimeError) as exc:
                    self.home_error = str(exc)[:300]
        return self.home.name if self.home is not None else None

    async def close(self) -> None:
        await asyncio.gather(*(slot.close() for slot in self.slots))
        if self.home is not None:
            await asyncio.to_thread(self.home.cleanup)
            self.home = None


def _rendered(html: str, answer: dict[str, Any]) -> Rendered:
    """The worker's answer, bounded again here (it is Chromium's account of a hostile page)."""
    status = answer.get("status")
    final = answer.get("final_url")
    errors = answer.get("errors")
    blocked = answer.get("blocked")
    return Rendered(
        html,
        status=status if isinstance(status, int) and 100 <= status <= 999 else None,
        final_url=final[:2000] if isinstance(final, str) else None,
        errors=tuple(str(e)[:300] for e in errors[:20]) if isinstance(errors, list) else (),
        blocked=tuple(
            {"url": str(b.get("url"))[:300], "reason": str(b.get("reason"))[:100]}
            for b in blocked[:50]
            if isinstance(b, dict)
        )
        if isinstance(blocked, list)
        else (),
        truncated=answer.get("truncated") is True,
    )
