"""The one safe HTTP fetcher for page work (SSRF guard, robots.txt, politeness).

Job kinds fetch pages only through :class:`Fetcher`; :class:`RobotsCache` answers robots.txt
questions through the same fetcher, and :func:`inspect` / :func:`diagnose` turn a fetch into
URL-Inspection-style indexability diagnostics. Underneath, :class:`HttpClient`
(``fetch.http``) is the server's one HTTP client, also the provider adapters'.
"""

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
