"""One fingerprint pattern of the webappanalyzer format, compiled safely.

A pattern is a JavaScript-style regular expression, case-insensitive, with tags appended
after ``\\;``: ``jquery-([0-9.]+)\\.js\\;confidence:50\\;version:\\1``. The database is
untrusted input (it is downloaded), so a pattern that does not compile is kept as an error
(reported, never matched), and every search runs under a timeout: the ``regex`` module's, as
the stdlib ``re`` cannot stop a catastrophic pattern (and holds the GIL while it runs).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import regex

TAG_SEPARATOR = "\\;"
MAX_PATTERN_CHARS = 4_000
MAX_VERSION_CHARS = 100
# One ternary of the version syntax: \1?a:b (a if group 1 matched, else b).
_TERNARY = regex.compile(r"\\(\d+)\?([^:]*):(.*)")
_GROUP = regex.compile(r"\\(\d+)")


class PatternTimeout(Exception):
    """A search ran past its timeout: the pattern is skipped from then on."""


@dataclass(frozen=True)
class Tags:
    confidence: int = 100
    version: str | None = None


def split_tags(raw: str) -> tuple[str, Tags]:
    """(the expression, its tags). Unknown tags are ignored, as webappanalyzer does."""
    expression, *parts = raw.split(TAG_SEPARATOR)
    confidence, version = 100, None
    for part in parts:
        name, _, value = part.partition(":")
        if name == "confidence":
            try:
                confidence = max(0, min(100, int(value)))
            except ValueError:
                continue
        elif name == "version":
            version = value
    return expression, Tags(confidence, version)


@dataclass
class Pattern:
    """A compiled pattern, or the reason it could not be (``error``)."""

    source: str
    tags: Tags
    compiled: Any = None  # regex.Pattern[str]
    error: str | None = None
    timed_out: bool = field(default=False)

    @classmethod
    def parse(cls, raw: str) -> Pattern:
        expression, tags = split_tags(raw)
        if len(expression) > MAX_PATTERN_CHARS:
            return cls(expression[:80], tags, error=f"longer than {MAX_PATTERN_CHARS} chars")
        try:
            # VERSION0: the re-compatible dialect (closest to JavaScript's).
            compiled = regex.compile(expression, regex.IGNORECASE | regex.VERSION0)
        except (regex.error, ValueError, OverflowError, RecursionError) as exc:
            return cls(expression, tags, error=f"does not compile: {exc}")
        return cls(expression, tags, compiled)

    @property
    def usable(self) -> bool:
        return self.compiled is not None and not self.timed_out

    def search(self, text: str, timeout: float) -> Any:
        """The first match in ``text`` or None; raises PatternTimeout (and marks the pattern
        so it is never searched again) when the search runs past ``timeout`` seconds."""
        if not self.usable:
            return None
        try:
            return self.compiled.search(text, timeout=timeout, concurrent=True)
        except TimeoutError:
            self.timed_out = True
            raise PatternTimeout(self.source) from None

    def version(self, match: Any) -> str | None:
        """The version the ``version`` tag makes of a match (None: it names none)."""
        template = self.tags.version
        if template is None or match is None:
            return None
        return version_of(template, match) or None


def _group(match: Any, index: int) -> str:
    try:
        return match.group(index) or ""
    except IndexError:  # a tag naming a group the expression does not have
        return ""


def version_of(template: str, match: Any) -> str:
    """Evaluate the version syntax: ``\\1`` is group 1, ``\\1?a:b`` is a if group 1
    matched, else b; anything else is kept as written (``foo\\1``)."""
    ternary = _TERNARY.search(template)
    if ternary is not None:
        chosen = ternary.group(2) if _group(match, int(ternary.group(1))) else ternary.group(3)
        template = template[: ternary.start()] + chosen
    found = _GROUP.sub(lambda m: _group(match, int(m.group(1))), template)
    return found.strip()[:MAX_VERSION_CHARS]


def patterns_of(value: Any) -> list[Pattern]:
    """A field that holds one pattern or a list of them."""
    if isinstance(value, str):
        return [Pattern.parse(value)]
    if isinstance(value, list):
        return [Pattern.parse(v) for v in value if isinstance(v, str)]
    return []
