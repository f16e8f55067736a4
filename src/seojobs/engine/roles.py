"""Provider roles: what a kind needs a provider adapter for, and which adapters serve it.

A kind declares its roles (``Kind.providers``): each names the adapters that can serve it, per
engine, in the order tried (the first configured one serves), and the setting that reorders
them (``SEOJOBS_SUBMIT_PROVIDERS``, ...: JSON in the environment, as before). The provider table
(``seojobs providers``, the startup log) and the refusals read the roles from the registry, so
a new kind's providers are listed and checked with no table kept elsewhere. Which settings
configure an adapter (its keys) is the adapter's own (``seojobs.kinds.providers.PROVIDERS``).
The reordering settings are the built-in roles' fields of ``Settings``; a plug-in's role whose
setting ``Settings`` does not have is served in its declared order.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ProviderRole:
    """``name``: what the role is called in messages and the provider table ("rank checks");
    ``setting``: the settings field that overrides ``default`` (unset: None); ``default``:
    the adapters per engine, in the order tried. A role without engines (AI search) has one
    order under the pseudo-engine ``single``, and its setting is a plain list.
    ``runs_without``: a boolean setting under which its jobs still run with no provider
    (index checks: diagnostics only)."""

    name: str
    setting: str
    default: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    single: str | None = None
    runs_without: str | None = None

    def orders(self, settings: Any) -> dict[str, list[str]]:
        """The adapters per engine in the order tried: the setting's, else the declared ones."""
        configured = getattr(settings, self.setting, None)
        if configured is None:
            return {engine: list(names) for engine, names in self.default.items()}
        if self.single is not None:
            return {self.single: list(configured)}
        return {engine: list(names) for engine, names in configured.items()}

    def order(self, settings: Any, engine: str) -> list[str]:
        return self.orders(settings).get(engine, [])

    @property
    def env(self) -> str:
        return f"SEOJOBS_{self.setting.upper()}"
