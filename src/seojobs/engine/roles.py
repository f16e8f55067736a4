"""Provider roles: what a kind needs a provider adapter for, and which adapters serve it.

A kind declares its roles (``Kind.providers``): each names the adapters that can serve it, per
engine, in the order tried (the first configured one serves), and the setting that reorders
them (the kind's ``SEOJOBS_INDEX_SUBMIT_PROVIDERS``, ...: JSON in the environment; the names of
old, ``SEOJOBS_SUBMIT_PROVIDERS``, ..., still work). The provider table
(``seojobs providers``, the startup log) and the refusals read the roles from the registry, so
a new kind's providers are listed and checked with no table kept elsewhere. Which settings
configure an adapter (its keys) is the adapter's own (``seojobs.kinds.providers.PROVIDERS``).
The reordering settings are fields of the kind's own settings model (``ProviderRole.settings``);
a role whose setting no model has is served in its declared order.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import AliasChoices
from pydantic_settings import BaseSettings

from seojobs.engine import kindsettings


@dataclass(frozen=True)
class ProviderRole:
    """``name``: what the role is called in messages and the provider table ("rank checks");
    ``setting``: the settings field that overrides ``default`` (unset: None); ``default``:
    the adapters per engine, in the order tried. A role without engines (AI search) has one
    order under the pseudo-engine ``single``, and its setting is a plain list.
    ``runs_without``: a boolean setting under which its jobs still run with no provider
    (index checks: diagnostics only). ``settings``: the kind's settings model that holds
    ``setting`` and ``runs_without`` (None: the central settings hold them)."""

    name: str
    setting: str
    default: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    single: str | None = None
    runs_without: str | None = None
    settings: type[BaseSettings] | None = None

    def runs_anyway(self, settings: Any) -> bool:
        """Whether its jobs run with no provider (``runs_without`` is set)."""
        if self.runs_without is None:
            return False
        return bool(getattr(self._source(settings), self.runs_without, False))

    def _source(self, settings: Any) -> Any:
        return kindsettings.of(self.settings, settings) if self.settings else settings

    def orders(self, settings: Any) -> dict[str, list[str]]:
        """The adapters per engine in the order tried: the setting's, else the declared ones
        (``settings``: the central settings; a kind's are read from them)."""
        configured = getattr(self._source(settings), self.setting, None)
        if configured is None:
            return {engine: list(names) for engine, names in self.default.items()}
        if self.single is not None:
            return {self.single: list(configured)}
        return {engine: list(names) for engine, names in configured.items()}

    def order(self, settings: Any, engine: str) -> list[str]:
        return self.orders(settings).get(engine, [])

    @property
    def env(self) -> str:
        """The environment variable of ``setting`` (a kind's: its own prefixed name)."""
        if self.settings is None:
            return f"SEOJOBS_{self.setting.upper()}"
        alias = self.settings.model_fields[self.setting].validation_alias
        if isinstance(alias, AliasChoices):
            return str(alias.choices[0]).upper()
        return (str(self.settings.model_config.get("env_prefix") or "") + self.setting).upper()
