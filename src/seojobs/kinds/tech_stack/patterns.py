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


_CLASS_ESCAPES = frozenset("dDwWsSbBAZzGntrfv")
# Escapes whose meaning runs on past their letter (\x41, \u00e9, \p{L}, \12): a pattern
# with one gets no literal rather than a wrong one.
_LONG_ESCAPES = frozenset("xuUNpPkgcoO0123456789")
_QUANTIFIERS = frozenset("?*+{")
MIN_LITERAL = 3


def _skip_group(expression: str, i: int) -> int:
    """The index after the group or class that starts at ``i``."""
    depth, in_class = 0, False
    while i < len(expression):
        char = expression[i]
        if char == "\\":
            i += 2
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
            if expression[i + 1 : i + 2] == "]":  # a "]" first in a class is literal
                i += 1
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        i += 1
        if depth == 0 and not in_class:
            return i
    return i


def required_literal(expression: str) -> str | None:
    """The longest run of plain ASCII characters every match must contain (casefolded), or
    None: a cheap ``in`` test first spares the regex most pages. Only runs at the top level
    of an expression without a top-level ``|`` count; a character a quantifier may drop
    (``?``, ``*``, ``{0,}``) is not part of a run."""
    runs: list[str] = []
    run: list[str] = []
    i = 0
    while i < len(expression):
        char = expression[i]
        nxt = expression[i + 1 : i + 2]
        if char == "|" or (char == "\\" and nxt in _LONG_ESCAPES and nxt):
            return None
        if char in "([":
            runs.append("".join(run))
            run = []
            i = _skip_group(expression, i)
            continue
        if char == "\\" and nxt and nxt not in _CLASS_ESCAPES and nxt.isascii():
            literal, i = nxt, i + 2
        elif char == "{":  # a repeat count (or a literal brace): skipped whole
            end = expression.find("}", i)
            literal, i = None, len(expression) if end < 0 else end + 1
        elif char in ".^$)" or char in _QUANTIFIERS or char == "\\" or not char.isascii():
            literal, i = None, i + (2 if char == "\\" else 1)
        else:
            literal, i = char, i + 1
        quantified = expression[i : i + 1] in _QUANTIFIERS
        if literal is not None and not quantified:
            run.append(literal)
            continue
        if literal is not None and expression[i : i + 1] == "+":
            run.append(literal)  # once at least: kept, but the run ends here
        runs.append("".join(run))
        run = []
    runs.append("".join(run))
    best = max(runs, key=len)
    return best.casefold() if len(best) >= MIN_LITERAL else None


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
    literal: str | None = None  # see required_literal
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
        return cls(expression, tags, compiled, literal=required_literal(expression))

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
