"""The handler: each URL (an item) measured by Lighthouse per form factor, CrUX beside it.

Before Chromium is pointed at a URL, its host passes the fetcher's address policy
(:class:`seojobs.fetch.guard.AddressGuard`) and Chromium is held to the answer: its
``--host-resolver-rules`` map the checked host to the checked address and every other name to
``~NOTFOUND`` (so a redirect or a subresource on another host cannot reach an address the
policy never saw). An operator may set the rules outright (``SEOJOBS_WEB_VITALS_RESOLVER_RULES``;
the tests' loopback rule). With ``SEOJOBS_FETCH_CA_FILE`` set, Chromium trusts its CAs as the
fetcher does, with full verification: the job makes one home folder whose NSS database holds
them as trust anchors (``seojobs.browsers.nssdb``), Chromium runs with that ``HOME``, and the
folder is removed when the job's runs end.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seojobs.browsers import nssdb
from seojobs.browsers.slots import resolver_rules
from seojobs.engine.context import ItemResult, JobContext, JobFailed
from seojobs.fetch import FetchError
from seojobs.fetch.guard import AddressGuard, GuardPolicy
from seojobs.fetch.urls import parse_url
from seojobs.kinds.web_vitals import report, runner
from seojobs.kinds.web_vitals.params import WebVitalsParams, subject
from seojobs.providers.base import ProviderError
from seojobs.providers.crux import CruxClient
from seojobs.records import ItemRecord

CHROMIUM_MISSING = "chromium_missing"
LIGHTHOUSE_MISSING = "lighthouse_missing"
MEASURED = "measured"


@dataclass
class Measure:
    browser: runner.Browser
    guard: AddressGuard
    crux: CruxClient | None
    factors: list[str]
    fixed_rules: str | None
    # Keep each run's raw Lighthouse report here (job-<id>-<seq>-<form factor>.json).
    report_dir: str | None = None
    job_id: int = 0
    pool: runner.Pool | None = None  # warm slots; None: the CLI once per run
    home: str | None = None  # Chromium's HOME, trusting SEOJOBS_FETCH_CA_FILE's CAs

    async def page(self, item: ItemRecord) -> ItemResult:
        url = item.input
        try:
            host = parse_url(url).host
            addresses = await self.guard.resolve(host)  # always: fixed rules or not
            rules = self.fixed_rules or resolver_rules(host, addresses)
        except FetchError as exc:  # refused by the address policy, or unresolvable
            result = {"url": url, "form_factors": {}}
            return ItemResult.error(exc.kind, f"{url}: {exc.message}", result=result)
        runs: dict[str, Any] = {}
        failures: list[report.LighthouseFailed] = []
        for factor in self.factors:
            try:
                if self.pool is not None:
                    raw = await self.pool.lighthouse(url, factor, rules, self.home)
                else:
                    raw = await runner.lighthouse(self.browser, url, factor, rules, self.home)
                await self.keep(raw, item.seq, factor)
                lab = report.lab(raw)
            except report.LighthouseFailed as exc:
                failures.append(exc)
                runs[factor] = {"error": {"code": exc.code, "message": exc.message}}
                continue
            runs[factor] = {"lab": lab, "field": await self.field(url, factor)}
        result = {"url": url, "form_factors": runs}
        if failures:
            message = "; ".join(f.message for f in failures)
            return ItemResult.error(failures[0].code, message, result=result)
        return ItemResult(outcome=MEASURED, result=result)

    async def keep(self, raw: Any, seq: int, factor: str) -> None:
        if self.report_dir:
            path = Path(self.report_dir) / f"job-{self.job_id}-{seq}-{factor}.json"
            await asyncio.to_thread(path.write_text, json.dumps(raw), "utf-8")

    async def field(self, url: str, factor: str) -> dict[str, Any] | None:
        if self.crux is None:
            return None
        try:
            return report.rate_field(await self.crux.record(url, factor))
        except ProviderError as exc:  # field data is extra: the lab data stands without it
            return {"source": "crux", "error": {"code": exc.code, "message": exc.message}}


def _installed(browser: runner.Browser, warm: bool) -> None:
    if not Path(browser.chrome).is_file():
        raise JobFailed(
            CHROMIUM_MISSING,
            f"no Chromium at {browser.chrome} (SEOJOBS_WEB_VITALS_CHROME_PATH): "
            "apt-get install -y chromium",
        )
    if not Path(browser.lighthouse).is_file():
        raise JobFailed(
            LIGHTHOUSE_MISSING,
            f"no Lighthouse CLI at {browser.lighthouse} (SEOJOBS_WEB_VITALS_LIGHTHOUSE_PATH): "
            "run `npm ci` in the repository's lighthouse/ folder",
        )
    if warm and not Path(browser.node).is_file():
        raise JobFailed(
            LIGHTHOUSE_MISSING,
            f"no Node.js at {browser.node} (SEOJOBS_WEB_VITALS_NODE_PATH): "
            "apt-get install -y nodejs, or SEOJOBS_WEB_VITALS_WARM=false",
        )


async def _collect(ctx: JobContext[WebVitalsParams]) -> int:
    measured = 0
    first_error: tuple[str, str] | None = None
    async for item in ctx.items():
        if item.error_code and first_error is None:
            first_error = (item.error_code, item.error_message or item.error_code)
        for factor, run in ((item.result or {}).get("form_factors") or {}).items():
            if "lab" in run:
                measured += 1
                data = {"url": item.input, "form_factor": factor, **run}
                await ctx.collect(subject(factor, item.input), data)
    if not measured and first_error is not None:
        raise JobFailed(*first_error)
    return measured


async def run(ctx: JobContext[WebVitalsParams]) -> None:
    settings, kind_settings = ctx.settings, ctx.kind_settings
    browser = runner.Browser(
        lighthouse=kind_settings.lighthouse_path,
        chrome=kind_settings.chrome_path,
        timeout=kind_settings.run_timeout,
        max_wait=kind_settings.max_wait_for_load,
        throttling=kind_settings.throttling_method,
        node=kind_settings.node_path,
    )
    _installed(browser, kind_settings.warm)
    guard = AddressGuard(
        GuardPolicy.from_settings(settings),
        lookup_timeout=settings.fetch_connect_timeout + 2 * settings.fetch_timeout,
    )
    home = None
    if settings.fetch_ca_file:  # one folder for the job's runs, removed when they end
        try:
            home = await nssdb.trusting_home(settings.fetch_ca_file)
        except (OSError, RuntimeError) as exc:
            raise JobFailed("lighthouse_error", str(exc)[:300]) from None
    crux = CruxClient(settings) if settings.crux_api_key else None
    pool = None
    if kind_settings.warm:
        pool = runner.Pool(browser, kind_settings.concurrency, kind_settings.recycle_after)
    try:
        measure = Measure(
            browser,
            guard,
            crux,
            ctx.params.factors(),
            kind_settings.resolver_rules,
            kind_settings.report_dir,
            ctx.job_id,
            pool,
            home.name if home is not None else None,
        )
        await ctx.run_items(measure.page, concurrency=kind_settings.concurrency)
    finally:
        if pool is not None:
            await asyncio.shield(pool.close())
        if crux is not None:
            await crux.aclose()
        if home is not None:
            await asyncio.to_thread(home.cleanup)
    measured = await _collect(ctx)
    ctx.result = {"urls": len(ctx.params.urls), "runs_measured": measured}
