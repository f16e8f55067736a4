"""The provider table: which providers serve which kind's role on which engine (in the order
tried), which of them are configured, and a live check of each configured credential
(``seojobs providers``). The roles are the ones the registry's kinds declare, a plug-in's too.
``serve`` and ``worker`` log the table when they start."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

from seojobs.engine.registry import Registry
from seojobs.engine.roles import ProviderRole
from seojobs.kinds.providers import PROVIDERS, build, chosen, configured, setting_names
from seojobs.kinds.providers import close as close_adapter
from seojobs.providers.base import ProviderError
from seojobs.settings import Settings

# What a checker without a credential check of its own is asked: one query, which the
# provider may bill. A refused key ends it with a fatal ProviderError.
PROBE_URL = "https://example.com/"


@dataclass(frozen=True)
class Row:
    role: str  # the role's name: "submission", "index checks", "rank checks", "AI search"...
    engine: str
    order: tuple[tuple[str, bool], ...]  # (provider, configured), in the order tried
    uses: str | None  # the provider jobs use; None: such jobs are refused
    runs_anyway: bool = False  # jobs run without a provider (index checks: diagnostics only)

    def jobs(self, settings: Settings) -> str:
        """What happens to a new job of this role and engine: run, refused or diagnostics only."""
        if self.uses:
            return "run"
        if self.runs_anyway:
            return "diagnostics_only"
        return "refused"

    def text(self, settings: Settings) -> str:
        names = ", ".join(
            name if ok else f"{name} (not configured: {_needs(name)})" for name, ok in self.order
        )
        uses = self.uses or SHOWN[self.jobs(settings)]
        return f"{self.role:<13} {self.engine:<7} {uses:<22} order: {names or '(none)'}"

    def fields(self, settings: Settings) -> str:
        order = ",".join(f"{name}:{'configured' if ok else 'missing'}" for name, ok in self.order)
        return (
            f"role={self.role.replace(' ', '_')} engine={self.engine} uses={self.uses or '-'} "
            f"jobs={self.jobs(settings)} order={order or '-'}"
        )


SHOWN = {"refused": "none (refused)", "diagnostics_only": "diagnostics only"}


def _needs(name: str) -> str:
    return setting_names(name) if name in PROVIDERS else "unknown provider"


def rows(settings: Settings, registry: Registry) -> list[Row]:
    """One row per (role, engine) of every role the registry's kinds declare."""
    return [row for role in registry.provider_roles() for row in _rows(settings, role)]


def _rows(settings: Settings, role: ProviderRole) -> list[Row]:
    orders = role.orders(settings)
    found = []
    for engine in sorted(orders):
        listed = tuple((name, configured(settings, name)) for name in orders[engine])
        uses = chosen(settings, role, engine)
        found.append(Row(role.name, engine, listed, uses, role.runs_anyway(settings)))
    return found


def log_table(settings: Settings, registry: Registry, logger: logging.Logger) -> None:
    """One line per (role, engine): which provider jobs use, and the order with each one's
    state, so an operator sees at startup which jobs will be refused."""
    for row in rows(settings, registry):
        logger.info("providers %s", row.fields(settings))


def in_use(settings: Settings, registry: Registry) -> list[str]:
    """The configured providers some engine lists, each once."""
    names = [name for row in rows(settings, registry) for name, ok in row.order if ok]
    return list(dict.fromkeys(names))


async def verify(settings: Settings, name: str) -> tuple[bool, str]:
    """Check one configured provider's credentials against the provider: its own check
    (Google: a token is granted; IndexNow: the key's format) or one probe query."""
    try:
        adapter: Any = build(name, settings)
    except ProviderError as exc:
        return False, exc.message
    try:
        if hasattr(adapter, "verify"):
            return True, str(await adapter.verify())
        await adapter.check(PROBE_URL, sorted(adapter.engines)[0])
        return True, f"answered a query for {PROBE_URL} (a provider may bill it)"
    except ProviderError as exc:
        return False, exc.message
    finally:
        await close_adapter(adapter)


async def verify_all(settings: Settings, registry: Registry) -> list[tuple[str, bool, str]]:
    names = in_use(settings, registry)
    results = await asyncio.gather(*(verify(settings, name) for name in names))
    return [(name, ok, message) for name, (ok, message) in zip(names, results, strict=True)]
