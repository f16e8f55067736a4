"""The one safe HTTP fetcher for page work (SSRF guard, robots.txt, politeness).

Job kinds fetch pages only through :class:`Fetcher`; :class:`RobotsCache` answers robots.txt
questions through the same fetcher, and :func:`inspect` / :func:`diagnose` turn a fetch into
URL-Inspection-style indexability diagnostics. Underneath, :class:`HttpClient`
(``fetch.http``) is the server's one HTTP client, also the provider adapters'.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from seojobs.fetch.client import Fetcher
    from seojobs.fetch.diagnostics import Canonical, Diagnostics, diagnose, inspect
    from seojobs.fetch.directives import RobotsDirectives, parse_meta_robots, parse_x_robots_tag
    from seojobs.fetch.errors import ERROR_KINDS, FetchError, SSRFRefused
    from seojobs.fetch.guard import (
        AddressGuard,
        GuardPolicy,
        Resolver,
        forbidden_reason,
        parse_ip_host,
    )
    from seojobs.fetch.html import HeadInfo, parse_head
    from seojobs.fetch.http import HttpClient, Response
    from seojobs.fetch.politeness import HostGate
    from seojobs.fetch.result import FetchResult, RedirectHop
    from seojobs.fetch.robots import RobotsCache, RobotsVerdict

# Where each name lives: a process that imports one module of the package (a kind's
# declaration reads ``seojobs.fetch.resolver``) does not load the others (aiohttp with them).
_HOMES = {
    "Fetcher": "client",
    "Canonical": "diagnostics",
    "Diagnostics": "diagnostics",
    "diagnose": "diagnostics",
    "inspect": "diagnostics",
    "RobotsDirectives": "directives",
    "parse_meta_robots": "directives",
    "parse_x_robots_tag": "directives",
    "ERROR_KINDS": "errors",
    "FetchError": "errors",
    "SSRFRefused": "errors",
    "AddressGuard": "guard",
    "GuardPolicy": "guard",
    "Resolver": "guard",
    "forbidden_reason": "guard",
    "parse_ip_host": "guard",
    "HeadInfo": "html",
    "parse_head": "html",
    "HttpClient": "http",
    "Response": "http",
    "HostGate": "politeness",
    "FetchResult": "result",
    "RedirectHop": "result",
    "RobotsCache": "robots",
    "RobotsVerdict": "robots",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


__all__ = [
    "ERROR_KINDS",
    "AddressGuard",
    "Canonical",
    "Diagnostics",
    "FetchError",
    "FetchResult",
    "Fetcher",
    "GuardPolicy",
    "HeadInfo",
    "HostGate",
    "HttpClient",
    "RedirectHop",
    "Resolver",
    "Response",
    "RobotsCache",
    "RobotsDirectives",
    "RobotsVerdict",
    "SSRFRefused",
    "diagnose",
    "forbidden_reason",
    "inspect",
    "parse_head",
    "parse_ip_host",
    "parse_meta_robots",
    "parse_x_robots_tag",
]
