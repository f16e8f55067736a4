"""Robots directives (meta robots, X-Robots-Tag) and canonical declarations in Link headers.

Rules, after developers.google.com/search/docs/crawling-indexing/robots-meta-tag:

* directives are comma separated and case-insensitive; ``none`` means ``noindex, nofollow``;
* ``<meta name="robots">`` and an ``X-Robots-Tag`` without a prefix apply to every crawler;
  ``<meta name="googlebot">`` and ``X-Robots-Tag: googlebot: noindex`` only to that one;
* every rule that applies is combined and the most restrictive wins.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

GENERIC = "*"
GOOGLEBOT = "googlebot"
# Directives that take a value after a colon, so "max-snippet: 20" is not a user agent prefix.
_VALUE_DIRECTIVES = frozenset(
    {"max-snippet", "max-image-preview", "max-video-preview", "unavailable_after"}
)
_AGENT_PREFIX = re.compile(r"^([A-Za-z][A-Za-z0-9_.-]*)\s*:\s*(.*)$", re.S)
_LINK_VALUE = re.compile(r"<([^>]*)>\s*((?:;\s*[^;,<]*)*)")
_REL_PARAM = re.compile(r";\s*rel\s*=\s*(?:\"([^\"]*)\"|([^\s;,]+))", re.I)


def _directive_name(directive: str) -> str:
    return directive.split(":", 1)[0].strip().lower()


@dataclass(frozen=True)
class RobotsDirectives:
    raw: tuple[str, ...] = ()  # as found: meta contents or header values
    by_agent: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # names_for's answers by agent: a diagnosis asks for the same agent's names six times
    _names: dict[str, frozenset[str]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def names_for(self, agent: str = GOOGLEBOT) -> frozenset[str]:
        """Directive names that apply to ``agent`` (generic ones included)."""
        agent = agent.lower()
        found = self._names.get(agent)
        if found is None:
            names = {
                _directive_name(d)
                for d in (*self.by_agent.get(GENERIC, ()), *self.by_agent.get(agent, ()))
            }
            if "none" in names:
                names |= {"noindex", "nofollow"}
            found = self._names[agent] = frozenset(names)
        return found

    def noindex(self, agent: str = GOOGLEBOT) -> bool:
        return "noindex" in self.names_for(agent)

    def nofollow(self, agent: str = GOOGLEBOT) -> bool:
        return "nofollow" in self.names_for(agent)

    def to_dict(self) -> dict[str, Any]:
        return {
            "raw": list(self.raw),
            "directives": {agent: list(values) for agent, values in self.by_agent.items()},
            "noindex": self.noindex(),
            "nofollow": self.nofollow(),
        }


def _split(content: str) -> list[str]:
    return [part.strip() for part in content.split(",") if part.strip()]


def _collect(pairs: Iterable[tuple[str, str]], raw: Iterable[str]) -> RobotsDirectives:
    grouped: dict[str, list[str]] = {}
    for agent, directive in pairs:
        grouped.setdefault(agent, []).append(directive.lower())
    return RobotsDirectives(tuple(raw), {a: tuple(d) for a, d in grouped.items()})


def parse_meta_robots(metas: Iterable[tuple[str, str]]) -> RobotsDirectives:
    """``metas``: (meta name, content) pairs, name ``robots`` or a crawler's name."""
    metas = list(metas)
    pairs = [
        (GENERIC if name.lower() == "robots" else name.lower(), directive)
        for name, content in metas
        for directive in _split(content)
    ]
    return _collect(pairs, (content for _, content in metas))


def parse_x_robots_tag(values: Iterable[str]) -> RobotsDirectives:
    """Each header value may start with ``agent:``; the prefix holds until the value ends."""
    values = list(values)
    pairs: list[tuple[str, str]] = []
    for value in values:
        agent = GENERIC
        for part in _split(value):
            match = _AGENT_PREFIX.match(part)
            if match and match.group(1).lower() not in _VALUE_DIRECTIVES:
                agent, part = match.group(1).lower(), match.group(2).strip()
            if part:
                pairs.append((agent, part))
    return _collect(pairs, values)


def link_header_canonicals(values: Iterable[str]) -> list[str]:
    """Targets of ``Link: <url>; rel="canonical"`` (RFC 8288), in order, as written."""
    found: list[str] = []
    for value in values:
        for match in _LINK_VALUE.finditer(value):
            rel = _REL_PARAM.search(match.group(2))
            if rel and "canonical" in (rel.group(1) or rel.group(2) or "").lower().split():
                found.append(match.group(1).strip())
    return found
