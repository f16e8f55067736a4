"""Which provider adapter serves an engine: configured order, first one with credentials."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from seojobs.engine.context import JobFailed
from seojobs.providers.base import NOT_CONFIGURED, Checker, ProviderError, Submitter
from seojobs.settings import Settings


@dataclass(frozen=True)
class ProviderSpec:
    target: str  # "module:Class"
    needs: tuple[str, ...]  # settings that must be set for it to be usable


PROVIDERS: dict[str, ProviderSpec] = {
    "indexnow": ProviderSpec("seojobs.providers.indexnow:IndexNowSubmitter", ("indexnow_key",)),
    "google_indexing": ProviderSpec(
        "seojobs.providers.google_indexing:GoogleIndexingSubmitter", ("google_credentials_file",)
    ),
    "url_inspection": ProviderSpec(
        "seojobs.providers.url_inspection:UrlInspectionChecker", ("google_credentials_file",)
    ),
    "serpapi": ProviderSpec("seojobs.providers.serpapi:SerpApiChecker", ("serpapi_key",)),
    "dataforseo": ProviderSpec(
        "seojobs.providers.dataforseo:DataForSeoChecker",
        ("dataforseo_login", "dataforseo_password"),
    ),
    "serper": ProviderSpec("seojobs.providers.serper:SerperChecker", ("serper_key",)),
}


def _configured(settings: Settings, spec: ProviderSpec) -> bool:
    return all(getattr(settings, name, None) for name in spec.needs)


def _build(name: str, settings: Settings) -> Any:
    module_name, _, class_name = PROVIDERS[name].target.partition(":")
    cls = getattr(importlib.import_module(module_name), class_name)
    try:
        return cls(settings)
    except ProviderError as exc:  # e.g. a malformed key: nothing of this job can proceed
        raise JobFailed(exc.code, exc.message) from None


def _pick(settings: Settings, engine: str, order: dict[str, list[str]], what: str) -> Any:
    names = order.get(engine, [])
    for name in names:
        spec = PROVIDERS.get(name)
        if spec is not None and _configured(settings, spec):
            return _build(name, settings)
    hints = [
        " and ".join(f"SEOJOBS_{n.upper()}" for n in PROVIDERS[name].needs) + f" ({name})"
        for name in names
        if name in PROVIDERS
    ]
    order_setting = (
        "SEOJOBS_SUBMIT_PROVIDERS" if what == "submission" else "SEOJOBS_CHECK_PROVIDERS"
    )
    advice = "set " + ", or ".join(hints) if hints else f"add a provider in {order_setting}"
    raise JobFailed(
        NOT_CONFIGURED, f"no provider is configured for {what} on engine {engine!r}: {advice}"
    )


def submitter_for(settings: Settings, engine: str) -> Submitter:
    picked: Submitter = _pick(settings, engine, settings.submit_providers, "submission")
    return picked


def checker_for(settings: Settings, engine: str) -> Checker:
    picked: Checker = _pick(settings, engine, settings.check_providers, "index checks")
    return picked


async def close(adapter: object) -> None:
    aclose = getattr(adapter, "aclose", None)
    if aclose is not None:
        await aclose()
