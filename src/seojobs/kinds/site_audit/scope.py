"""Which of the site's URLs an audit crawls, and as what: its params' include and exclude
patterns and query-parameter rules (``CrawlRules``), applied to normalised URLs (page keys).

Patterns are shell-style wildcards (``fnmatch``: ``*``, ``?``, ``[...]``) matched against the
URL's path and query; ``fnmatch`` translates them without backtracking blow-ups, so a
hostile pattern cannot hold a worker the way a regular expression could.
"""

from __future__ import annotations

import fnmatch
import re
from urllib.parse import unquote_plus

from seojobs.kinds.site_audit.params import CrawlRules


def _compiled(patterns: list[str]) -> re.Pattern[str] | None:
    if not patterns:
        return None
    return re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in patterns))


def target(url: str) -> str:
    """The path and query of a normalised absolute URL (``/`` for the bare origin)."""
    slash = url.find("/", url.find("://") + 3)
    return url[slash:] if slash >= 0 else "/"


class UrlRules:
    def __init__(self, rules: CrawlRules) -> None:
        self._include = _compiled(rules.include_patterns)
        self._exclude = _compiled(rules.exclude_patterns)
        self._ignore = _compiled(rules.ignore_params)
        self._sort = rules.sort_params
        self.active = bool(self._include or self._exclude)
        self.rewrites = bool(self._ignore or self._sort)

    def allowed(self, url: str) -> bool:
        """Whether the patterns let the crawl request ``url``."""
        if not self.active:
            return True
        path = target(url)
        if self._include is not None and not self._include.match(path):
            return False
        return self._exclude is None or not self._exclude.match(path)

    def clean(self, url: str) -> str:
        """``url`` without its ignored query parameters, the others sorted if asked."""
        if not self.rewrites or "?" not in url:
            return url
        head, _mark, query = url.partition("?")
        # Raw segments, kept as they were written: only their names are decoded, to match.
        parts = [part for part in query.split("&") if part]
        if self._ignore is not None:
            ignore = self._ignore
            parts = [p for p in parts if not ignore.match(unquote_plus(p.partition("=")[0]))]
        if self._sort:
            parts.sort()
        return f"{head}?{'&'.join(parts)}" if parts else head
